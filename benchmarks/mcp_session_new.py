"""How long `session/new` takes with 0, 3, and 3 MCP servers of which one never answers.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/mcp_session_new.py [--runs N]

Each run spawns a fresh agent the way an editor does (`python -m acp_agent`
with a throwaway `--home`), sends `initialize` and a first `session/new`
without servers (it opens the session store, which is not what is
measured), then times one `session/new` carrying the configuration's
`mcpServers`, and closes stdin. The configurations take turns run by run,
so all see the same machine noise:

- `0`: no servers;
- `3`: three stdio servers (`tests/mcp/servers/tools_server.py`, the SDK's
  MCPServer);
- `3-hanging`: two of those and `silent_server.py`, which reads requests and
  never answers.

It reports median, min, p90 and max per configuration and the ratio of each
median to the `0` median. `session/new` never waits for servers (they
connect in the background), so the ratios should stay near 1. It is a
report: nothing here asserts a time. Linux and macOS only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SERVERS = REPO / "tests" / "mcp" / "servers"
RESPONSE_TIMEOUT_S = 30.0


def _server(name: str, script: str) -> dict[str, Any]:
    return {"name": name, "command": sys.executable, "args": [str(SERVERS / script)], "env": []}


CONFIGURATIONS: dict[str, list[dict[str, Any]]] = {
    "0": [],
    "3": [_server(f"tools{i}", "tools_server.py") for i in range(3)],
    "3-hanging": [
        _server("tools0", "tools_server.py"),
        _server("tools1", "tools_server.py"),
        _server("silent", "silent_server.py"),
    ],
}


class Agent:
    """One agent process and a minimal JSON-RPC client over its stdio."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._next_id = 0

    @classmethod
    async def spawn(cls, home: Path) -> Agent:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "acp_agent",
            "--home",
            str(home),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        return cls(process)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()
        async with asyncio.timeout(RESPONSE_TIMEOUT_S):
            while True:
                line = await self.process.stdout.readline()
                if not line:
                    raise RuntimeError(f"the agent exited before answering {method}")
                reply = json.loads(line)
                if reply.get("id") == self._next_id and "method" not in reply:
                    if "error" in reply:
                        raise RuntimeError(f"{method} failed: {reply['error']}")
                    return dict(reply["result"])

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        async with asyncio.timeout(RESPONSE_TIMEOUT_S):
            await self.process.wait()


async def measure(servers: list[dict[str, Any]], root: Path) -> float:
    """Seconds from sending `session/new` with `servers` to its response, on a warm agent."""
    with tempfile.TemporaryDirectory(dir=root) as scratch:
        home, cwd = Path(scratch) / "home", Path(scratch) / "work"
        cwd.mkdir()
        agent = await Agent.spawn(home)
        try:
            await agent.request("initialize", {"protocolVersion": 1})
            await agent.request("session/new", {"cwd": str(cwd), "mcpServers": []})
            started = time.perf_counter()
            await agent.request("session/new", {"cwd": str(cwd), "mcpServers": servers})
            return time.perf_counter() - started
        finally:
            await agent.close()


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per configuration")
    args = parser.parse_args()

    times: dict[str, list[float]] = {name: [] for name in CONFIGURATIONS}
    with tempfile.TemporaryDirectory(prefix="acp-agent-mcp-bench-") as root:
        for run in range(args.runs):
            for name, servers in CONFIGURATIONS.items():
                times[name].append(await measure(servers, Path(root)))
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr)

    base = statistics.median(times["0"])
    print(f"session/new latency, {args.runs} runs per configuration (ms)")
    print(f"{'servers':<10} {'median':>8} {'min':>8} {'p90':>8} {'max':>8} {'ratio':>7}")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:<10} {median * 1000:8.1f} {min(values) * 1000:8.1f} "
            f"{_p90(values) * 1000:8.1f} {max(values) * 1000:8.1f} {median / base:7.2f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
