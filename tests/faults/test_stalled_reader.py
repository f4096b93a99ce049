"""A client that stops reading: the agent never blocks on it, and gives up on it in time.

The real agent, with a client that reads the answers to `initialize` and
`session/new` and then nothing more while a reply of 12 MB streams. With
`ACP_AGENT_WRITE_STALL_S=1` the agent takes the client as gone about a second
after its output stalls over the queue's bound, and winds down as at the end of
stdin: it exits 0, saying why on stderr, with stdin still open.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support import agent_env, write_script

pytestmark = pytest.mark.e2e

#: The bound a test waits for the exit (the stall is 1 s; the rest is start-up and slack).
EXIT_BOUND_S = 20.0


def test_a_client_that_stops_reading_is_taken_as_gone_and_the_agent_exits(
    tmp_path: Path,
) -> None:
    piece = "x" * 100_000
    script = write_script(tmp_path / "big.json", [{"text": piece} for _ in range(120)])
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acp_agent",
            "--home",
            str(tmp_path / "home"),
            "--script",
            str(script),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=agent_env(ACP_AGENT_WRITE_STALL_S="1"),
    )
    stdin, stdout, errors = process.stdin, process.stdout, process.stderr
    assert stdin is not None
    assert stdout is not None
    assert errors is not None
    stderr = bytearray()
    drain = threading.Thread(target=lambda: stderr.extend(errors.read()), daemon=True)
    drain.start()

    def send(message: dict[str, object]) -> None:
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    def answer(request_id: int) -> dict[str, object]:
        while True:
            message = json.loads(stdout.readline())
            if message.get("id") == request_id:
                return message

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        answer(1)
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/new",
                "params": {"cwd": str(tmp_path), "mcpServers": []},
            }
        )
        session_id = answer(2)["result"]["sessionId"]  # type: ignore[index]
        send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "Go"}]},
            }
        )
        started = time.monotonic()
        # From here on nobody reads the agent's stdout; its stdin stays open.
        code = process.wait(timeout=EXIT_BOUND_S)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        drain.join(5.0)
        for pipe in (stdin, stdout, errors):
            pipe.close()

    assert code == 0
    assert took < EXIT_BOUND_S
    assert b"The peer stopped reading" in bytes(stderr)
