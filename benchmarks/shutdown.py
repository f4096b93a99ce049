"""How long acp-agent takes to exit once its editor closes stdin, by open sessions.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/shutdown.py [--runs N] [--sessions 0,500,2000]

For each count of sessions, and each run, it starts `python -m acp_agent` with a
home of its own, sends `initialize` and that many `session/new` requests, waits
for every answer, closes stdin and times stdin closed -> process exit. An editor
waits about a second before it kills an agent that has not exited. The report
gives median and max per count and the median as a ratio to the zero-session
shutdown measured in the same run (the floor: interpreter exit and the
connection's wind-down).

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


def _answers(stdout: IO[bytes], count: int) -> None:
    """Read lines until `count` responses (not notifications) arrived."""
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    seen = 0
    while seen < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {seen} of {count} answers arrived")
        line = stdout.readline()
        if not line:
            raise RuntimeError("the agent closed stdout")
        message: dict[str, Any] = json.loads(line)
        if "method" not in message:
            if "error" in message:
                raise RuntimeError(f"the agent answered an error: {message['error']}")
            seen += 1


def one_shutdown(sessions: int) -> float:
    """Seconds from closing stdin to exit, with `sessions` open."""
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as workspace:
        agent = subprocess.Popen(
            [sys.executable, "-m", "acp_agent", "--home", home],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert agent.stdin is not None
        assert agent.stdout is not None
        lines = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        ]
        lines += [
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "session/new",
                "params": {"cwd": str(Path(workspace).resolve()), "mcpServers": []},
            }
            for n in range(1, sessions + 1)
        ]
        for message in lines:
            agent.stdin.write(json.dumps(message).encode() + b"\n")
        agent.stdin.flush()
        _answers(agent.stdout, len(lines))
        started = time.monotonic()
        agent.stdin.close()
        agent.wait(timeout=ANSWER_TIMEOUT_S)
        took = time.monotonic() - started
        agent.stdout.close()
        if agent.returncode != 0:
            raise RuntimeError(f"the agent exited with {agent.returncode}")
        return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sessions", default="0,500,2000")
    args = parser.parse_args()
    counts = [int(n) for n in args.sessions.split(",")]
    if 0 not in counts:
        counts.insert(0, 0)
    results: dict[int, list[float]] = {n: [] for n in counts}
    for _ in range(args.runs):
        for count in counts:  # interleaved: every count sees the same machine
            results[count].append(one_shutdown(count))
    floor = statistics.median(results[0])
    print("| open sessions | median exit | max exit | median / 0 sessions |")
    print("|--:|--:|--:|--:|")
    for count in counts:
        times = results[count]
        median = statistics.median(times)
        cells = [str(count), f"{median * 1000:.0f} ms", f"{max(times) * 1000:.0f} ms"]
        print("| " + " | ".join([*cells, f"{median / floor:.1f}x"]) + " |")


if __name__ == "__main__":
    main()
