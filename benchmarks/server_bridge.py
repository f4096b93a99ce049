"""What the bridge to the app server adds: per message, and on the time to the first chunk.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/server_bridge.py [--messages N] [--prompts N]

It starts `acp-agent server` (scripted model, a home of its own) and two stdio
commands as an editor would: the plain stdio agent (direct) and `acp-agent
--connect` (the bridge: the editor's bytes go over the server's Unix socket).
For each it measures, interleaved so both see the same machine noise:

- a message's round trip: a request the agent answers at once (an unknown
  extension method, answered -32601 by the engine), sent and answered N times;
- a prompt's time to its first `agent_message_chunk` (a new session each time,
  the scripted model streaming at once), N prompts.

It reports the median and p90 of each, direct and through the bridge, and the
difference of the medians (the target: within 5 ms). It is a report: nothing
here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TIMEOUT_S = 30.0


class Peer:
    """An ACP agent command over pipes, read with select (no threads, no asyncio)."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.process.stdout is not None
        assert self.process.stdin is not None
        self._out = self.process.stdout.fileno()
        self._in = self.process.stdin
        self._buffer = b""
        self._ids = 0

    def send(self, message: dict[str, Any]) -> None:
        self._in.write(json.dumps(message).encode() + b"\n")
        self._in.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        self._ids += 1
        self.send({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        return self._ids

    def until(self, matches: Any) -> dict[str, Any]:
        """Read lines (answering nothing) until one matches; returns it."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                message = json.loads(line)
                if matches(message):
                    return message
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._out], [], [], left)[0]:
                raise TimeoutError("no answer")
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                raise EOFError("the agent exited")
            self._buffer += chunk

    def answer(self, request_id: int) -> dict[str, Any]:
        return self.until(lambda m: m.get("id") == request_id and "method" not in m)

    def close(self) -> None:
        self._in.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def round_trip(peer: Peer) -> float:
    start = time.perf_counter()
    peer.answer(peer.request("_bench/ping", {}))
    return time.perf_counter() - start


def first_chunk(peer: Peer, cwd: str) -> float:
    session = peer.answer(peer.request("session/new", {"cwd": cwd, "mcpServers": []}))
    session_id = session["result"]["sessionId"]
    start = time.perf_counter()
    prompt = peer.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "Hi"}]}
    )
    peer.until(
        lambda m: (
            m.get("method") == "session/update"
            and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
        )
    )
    elapsed = time.perf_counter() - start
    peer.answer(prompt)
    return elapsed


def summary(name: str, direct: list[float], bridged: list[float]) -> None:
    def stats(values: list[float]) -> tuple[float, float]:
        ordered = sorted(values)
        return statistics.median(ordered), ordered[int(len(ordered) * 0.9) - 1]

    d_median, d_p90 = stats(direct)
    b_median, b_p90 = stats(bridged)
    print(
        f"{name:<28} direct median {d_median * 1000:7.3f} ms  p90 {d_p90 * 1000:7.3f} ms | "
        f"bridge median {b_median * 1000:7.3f} ms  p90 {b_p90 * 1000:7.3f} ms | "
        f"added {(b_median - d_median) * 1000:+.3f} ms (target: within 5 ms)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--prompts", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acp-bridge-bench-") as tmp:
        root = Path(tmp)
        script = root / "script.json"
        script.write_text(json.dumps({"replies": [[{"text": "Hello"}, {"text": " there."}]]}))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_"))}
        env.update(ACP_AGENT_LSP="0", ACP_AGENT_MODE="ask")
        python = [sys.executable, "-m", "acp_agent"]
        server_home = root / "server"
        server = subprocess.Popen(
            [*python, "server", "--home", str(server_home), "--script", str(script)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert server.stderr is not None
        while b"listening on" not in server.stderr.readline():
            if server.poll() is not None:
                raise SystemExit("the server did not start")
        direct = Peer([*python, "--home", str(root / "direct"), "--script", str(script)], env)
        bridged = Peer([*python, "--home", str(server_home), "--connect"], env)
        try:
            for peer in (direct, bridged):
                peer.answer(
                    peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
                )
                first_chunk(peer, tmp)  # warm: imports, the runtime, the store
            trips: dict[str, list[float]] = {"direct": [], "bridge": []}
            chunks: dict[str, list[float]] = {"direct": [], "bridge": []}
            for _ in range(args.messages):
                trips["direct"].append(round_trip(direct))
                trips["bridge"].append(round_trip(bridged))
            for _ in range(args.prompts):
                chunks["direct"].append(first_chunk(direct, tmp))
                chunks["bridge"].append(first_chunk(bridged, tmp))
        finally:
            direct.close()
            bridged.close()
            server.terminate()
            server.wait(15)
        print(f"{args.messages} round trips, {args.prompts} prompts (each on a new session)")
        summary("message round trip", trips["direct"], trips["bridge"])
        summary("prompt -> first chunk", chunks["direct"], chunks["bridge"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
