"""Writes `legacy_deep.sqlite3`: sessions as acp-agent 9e9b174 recorded deeply nested input.

Before nesting was bounded at the edges, the agent recorded such input and then
failed to show it: every later `session/load` of those sessions failed. The
fixture keeps two of them for the test that loads them today:

- session "meta": a prompt whose text block has a `_meta` nested 300 levels
  (recorded, answered; its replay failed);
- session "args": a model tool call whose arguments nest 326 levels (the turn
  wedged: it never answered, so the process was killed with SIGKILL).

Run from a checkout of 9e9b174 (`git worktree add /tmp/old 9e9b174`) with any
Python that has the project's dependencies:

    cd /tmp/old && python /path/to/make_legacy_store.py /path/to/legacy_deep.sqlite3

It prints the two session ids, which `test_deep_json.py` names.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _agent(home: Path, replies: list) -> subprocess.Popen[bytes]:
    script = home / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    return subprocess.Popen(
        [sys.executable, "-m", "acp_agent", "--home", str(home), "--script", str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _send(agent: subprocess.Popen[bytes], message: dict) -> None:
    assert agent.stdin is not None
    agent.stdin.write(json.dumps(message).encode() + b"\n")
    agent.stdin.flush()


def _answer(agent: subprocess.Popen[bytes], msg_id: int) -> dict:
    assert agent.stdout is not None
    while True:
        message = json.loads(agent.stdout.readline())
        if message.get("id") == msg_id:
            return message


def _session(agent: subprocess.Popen[bytes], workspace: Path, block: dict) -> str:
    _send(
        agent, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    _answer(agent, 1)
    _send(
        agent,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(workspace), "mcpServers": []},
        },
    )
    session_id = _answer(agent, 2)["result"]["sessionId"]
    _send(
        agent,
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [block]},
        },
    )
    return session_id


def main(target: Path) -> None:
    home = Path(tempfile.mkdtemp())
    workspace = Path(tempfile.mkdtemp())

    agent = _agent(home, [[{"text": "Fine."}]])
    meta = {"deep": json.loads("[" * 300 + "]" * 300)}
    meta_id = _session(agent, workspace, {"type": "text", "text": "hi", "_meta": meta})
    _answer(agent, 3)
    agent.stdin.close()  # type: ignore[union-attr]
    agent.wait()

    deep = "[" * 326 + "]" * 326
    arguments = json.dumps({"path": "a.txt", "x": json.loads(deep)})
    agent = _agent(home, [[{"tool_call": {"name": "read", "arguments": arguments}}]])
    args_id = _session(agent, workspace, {"type": "text", "text": "hi"})
    time.sleep(3)  # the turn is wedged by now: it never answers
    agent.send_signal(signal.SIGKILL)
    agent.wait()

    database = home / "data" / "sessions.sqlite3"
    with sqlite3.connect(database) as db:
        # A lease names this host: on another one the session would look held forever.
        db.execute("DELETE FROM session_leases")
    with sqlite3.connect(database) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(database, target)
    print("meta:", meta_id)
    print("args:", args_id)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
