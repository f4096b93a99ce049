"""What big inputs cost: MCP tool results and prompts of 1, 4 and 16 MB, time and memory.

Usage (with the virtual environment that has acp-agent installed, from the
repository root, since it uses the test suite's MCP server):

    .venv/bin/python benchmarks/big_inputs.py [--sizes 1,4,16] [--runs N]

For each kind and size it starts a fresh `python -m acp_agent` with a home of
its own and the scripted model (a context window of 10M tokens, so no prompt
is refused), opens a session and makes one warm-up exchange, then times one
more:

- `mcp`: a tool call to the test server's `dump` tool, which returns that many
  MB of log lines (as SDK servers send a string: as text and again as
  structured content), through to the prompt's answer;
- `prompt`: a prompt whose one text block is that many MB, through to its answer.

It reports the median time and the growth of peak RSS (VmHWM after minus
VmHWM before the timed exchange; Linux only) per size, and the ratio of each
to the size before it: linear cost is about 4x per step of 4x. Nothing here
asserts a number.
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

SERVER = Path(__file__).resolve().parents[1] / "tests" / "mcp" / "servers" / "tools_server.py"
TIMEOUT_S = 600.0


class Agent:
    """One agent process over pipes; requests in, answers out."""

    def __init__(self, home: Path, script: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "acp_agent", "--home", str(home), "--script", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._ids = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        msg_id = self._ids
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(
            json.dumps(
                {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
            ).encode()
            + b"\n"
        )
        stdin.flush()
        return self._answer(stdout, msg_id)

    def _answer(self, stdout: IO[bytes], msg_id: int) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            line = stdout.readline()
            if not line:
                raise RuntimeError("the agent closed stdout")
            message: dict[str, Any] = json.loads(line)
            if "method" in message:
                if message["method"] == "session/request_permission":
                    self._allow(message)
                continue
            if message.get("id") == msg_id:
                if "error" in message:
                    raise RuntimeError(f"the agent answered an error: {message['error']}")
                return message
        raise RuntimeError(f"no answer to request {msg_id}")

    def _allow(self, question: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        option = next(o for o in question["params"]["options"] if o["kind"] == "allow_always")
        answer = {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
        self.process.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": question["id"], "result": answer}).encode() + b"\n"
        )
        self.process.stdin.flush()

    def peak_rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise RuntimeError("no VmHWM")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _dump(call_id: str, megabytes: float) -> dict[str, Any]:
    return {
        "tool_call": {
            "name": "mcp__tools__dump",
            "arguments": {"megabytes": megabytes},
            "id": call_id,
        }
    }


def one(kind: str, megabytes: int) -> tuple[float, float]:
    """Seconds and MiB of peak RSS growth of one timed exchange."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        if kind == "mcp":
            replies = [
                [_dump("warm", 0.01)],
                [{"text": "Warm."}],
                [_dump("big", megabytes)],
                [{"text": "Done."}],
            ]
        else:
            replies = [[{"text": "Warm."}], [{"text": "Done."}]]
        script = root / "script.json"
        script.write_text(json.dumps({"replies": replies, "context_window": 10_000_000}))
        agent = Agent(root / "home", script)
        try:
            agent.request("initialize", {"protocolVersion": 1})
            servers = []
            if kind == "mcp":
                servers = [
                    {"name": "tools", "command": sys.executable, "args": [str(SERVER)], "env": []}
                ]
            session = agent.request("session/new", {"cwd": str(root), "mcpServers": servers})
            session_id = session["result"]["sessionId"]
            agent.request(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": "Warm up."}]},
            )
            text = "Dump it." if kind == "mcp" else "z" * (megabytes * 1_000_000)
            before = agent.peak_rss_kib()
            started = time.monotonic()
            agent.request(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
            )
            took = time.monotonic() - started
            grown = (agent.peak_rss_kib() - before) / 1024
        finally:
            agent.close()
    return took, grown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="1,4,16")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print("| input | MB | time | time ratio | peak RSS growth | RSS ratio |")
    print("|---|--:|--:|--:|--:|--:|")
    for kind in ("mcp", "prompt"):
        previous: tuple[float, float] | None = None
        for size in sizes:
            runs = [one(kind, size) for _ in range(args.runs)]
            took = statistics.median(run[0] for run in runs)
            grown = statistics.median(run[1] for run in runs)
            ratios = (
                ("", "")
                if previous is None
                else (
                    f"{took / previous[0]:.1f}x",
                    f"{grown / previous[1]:.1f}x" if previous[1] > 0 else "",
                )
            )
            print(
                f"| {kind} | {size} | {took:.2f} s | {ratios[0]} | {grown:.0f} MiB | {ratios[1]} |"
            )
            previous = (took, grown)


if __name__ == "__main__":
    main()
