"""Branches working concurrently: what N of them cost a turn, and what they cost main.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/branches.py [--runs N] [--children 1,2,4]

Two measurements, each over real pipes to `python -m acp_agent --script ...`
with a home of its own:

- **turn wall time by children**: main starts N branches in one reply and waits
  for all of them (`branch_wait`); each branch makes `REQUESTS` scripted model
  requests, each `DELAY_MS` of model time then a `read`. The whole prompt's wall
  time is reported as a ratio to one branch's, measured in the same run: branches
  that run concurrently keep it near 1 (the target: 4 branches at most 1.5x).
- **main's time to first chunk**: with 4 branches streaming text (started in
  the turn before), the next prompt's time to its first `agent_message_chunk`,
  as a ratio to the same prompt in a session with no branches (the target: at
  most 2x).

It is a report: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

ANSWER_TIMEOUT_S = 120.0
#: Each branch's model requests in the wall-time measurement, and the model time of each.
REQUESTS = 4
DELAY_MS = 250
#: The branches streaming while main's first chunk is timed: pieces, and the pause between.
STREAM_PIECES = 400
STREAM_PAUSE_MS = 10


class Agent:
    """The agent over its stdin and stdout, read synchronously."""

    def __init__(self, home: str, script: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "acp_agent", "--home", home, "--script", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._ids = 0

    def send(self, method: str, params: dict[str, Any]) -> int:
        assert self.process.stdin is not None
        self._ids += 1
        message = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        return self._ids

    def until(self, request_id: int, *, first_chunk: list[float] | None = None) -> Any:
        """Read until the answer to `request_id`; note when the first text chunk came."""
        stdout: IO[bytes] | None = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while time.monotonic() < deadline:
            line = stdout.readline()
            if not line:
                raise RuntimeError("the agent closed stdout")
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"the agent answered an error: {message['error']}")
                return message["result"]
            update = message.get("params", {}).get("update", {})
            chunk = update.get("sessionUpdate") == "agent_message_chunk"
            if chunk and first_chunk is not None and not first_chunk:
                first_chunk.append(time.monotonic())
        raise RuntimeError(f"no answer to request {request_id}")

    def request(self, method: str, params: dict[str, Any]) -> Any:
        return self.until(self.send(method, params))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=ANSWER_TIMEOUT_S)


def _session(agent: Agent, workspace: str) -> str:
    agent.request("initialize", {"protocolVersion": 1})
    answer = agent.request("session/new", {"cwd": workspace, "mcpServers": []})
    return str(answer["sessionId"])


def _prompt(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


def _branch_call(index: int) -> dict[str, Any]:
    title = f"b{index}"
    return {"tool_call": {"name": "branch", "arguments": {"task": f"Work {title}", "title": title}}}


def turn_with_children(children: int) -> float:
    """Seconds for one prompt in which main starts `children` branches and waits for all."""
    working = [
        [{"sleep_ms": DELAY_MS}, {"tool_call": {"name": "read", "arguments": {"path": "f.txt"}}}]
    ]
    branch = {"replies": working * (REQUESTS - 1) + [[{"sleep_ms": DELAY_MS}, {"text": "done"}]]}
    script = {
        "replies": [
            [_branch_call(i) for i in range(children)],
            [{"tool_call": {"name": "branch_wait", "arguments": {"all": True, "timeout_s": 120}}}],
            [{"text": "All done."}],
        ],
        "branches": [branch],
    }
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as workspace:
        (Path(workspace) / "f.txt").write_text("some text\n")
        path = Path(home) / "script.json"
        path.write_text(json.dumps(script))
        agent = Agent(home, path)
        try:
            session_id = _session(agent, str(Path(workspace).resolve()))
            started = time.monotonic()
            agent.request("session/prompt", _prompt(session_id, "Go"))
            return time.monotonic() - started
        finally:
            agent.close()


def first_chunk_with_streaming(children: int) -> float:
    """Seconds to main's first chunk while `children` branches stream (0: none)."""
    stream = [{"text": "x" * 40}, {"sleep_ms": STREAM_PAUSE_MS}] * STREAM_PIECES
    first_turn: list[dict[str, Any]] = [_branch_call(i) for i in range(children)]
    script = {
        "replies": [
            *([first_turn] if children else []),
            [{"text": "Started."}],
            [{"text": "Hello."}],
        ],
        "branches": [{"replies": [[*stream, {"text": "done"}]]}],
    }
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as workspace:
        path = Path(home) / "script.json"
        path.write_text(json.dumps(script))
        agent = Agent(home, path)
        try:
            session_id = _session(agent, str(Path(workspace).resolve()))
            agent.request("session/prompt", _prompt(session_id, "Start"))
            time.sleep(0.3)  # the branches are streaming now
            first: list[float] = []
            sent = agent.send("session/prompt", _prompt(session_id, "Hello?"))
            started = time.monotonic()
            agent.until(sent, first_chunk=first)
            if not first:
                raise RuntimeError("no agent_message_chunk in the timed prompt")
            return first[0] - started
        finally:
            agent.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--children", default="1,2,4")
    args = parser.parse_args()
    counts = [int(n) for n in args.children.split(",")]
    if 1 not in counts:
        counts.insert(0, 1)

    walls: dict[int, list[float]] = {n: [] for n in counts}
    for _ in range(args.runs):
        for n in counts:
            walls[n].append(turn_with_children(n))
    base = statistics.median(walls[1])
    model_time = REQUESTS * DELAY_MS / 1000
    print(
        f"Turn wall time ({REQUESTS} requests of {DELAY_MS} ms model time per branch, "
        f"{model_time:.1f} s; median of {args.runs}):"
    )
    for n in counts:
        median = statistics.median(walls[n])
        ratio = median / base
        print(f"  {n} branch(es): {median:6.2f} s  (max {max(walls[n]):.2f})  {ratio:4.2f}x one")

    none: list[float] = []
    four: list[float] = []
    for _ in range(args.runs):
        none.append(first_chunk_with_streaming(0))
        four.append(first_chunk_with_streaming(4))
    quiet, busy = statistics.median(none), statistics.median(four)
    print(f"Main's time to first chunk (median of {args.runs}):")
    print(f"  no branches:           {quiet * 1000:7.1f} ms")
    print(f"  4 branches streaming:  {busy * 1000:7.1f} ms  {busy / quiet:4.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
