"""Fan-out on the app server: one streamed reply to 1, 4 and 16 attached clients; a slow one.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/server_fanout.py [--chunks N] [--turns N]

It starts `acp-agent server` with a scripted reply of N text chunks (default
20,000) and, for each fan-out (1, 4, 16 observers attached with no replay, on
the server's Unix socket, plus the client that prompts), measures:

- the model's time: prompt sent -> its answer (the turn recorded and shown to
  the client that prompted);
- each observer's throughput (chunks per second from the prompt to its last
  chunk) and the slowest observer's lag behind the answer.

Then the same with 4 observers and one more that reads slowly (a few KiB at a
time, pausing between): the others' throughput and the model's time should
not move; the slow one catches up from the timeline after the turn (its lag is
reported). Last, attaching with a replay of a session of N turns (default
1,000): attach sent -> its answer (the whole replay delivered before it).

It is a report: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHUNK_MARK = b'"sessionUpdate":"agent_message_chunk"'


class Client:
    """A raw ACP client on the server's socket: requests, and counting chunks as bytes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.ids = 0
        self.answers: dict[int, dict[str, Any]] = {}
        self.chunks = 0
        self.last_chunk_at = 0.0
        self.slow = False
        self._answered = asyncio.Event()
        self._task = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, socket: Path) -> Client:
        reader, writer = await asyncio.open_unix_connection(str(socket), limit=1 << 26)
        return cls(reader, writer)

    async def _read(self) -> None:
        rest = b""
        while data := await self.reader.read(4096 if self.slow else 1 << 16):
            data = rest + data
            cut = data.rfind(b"\n") + 1
            whole, rest = data[:cut], data[cut:]
            found = whole.count(CHUNK_MARK)
            if found:
                self.chunks += found
                self.last_chunk_at = time.perf_counter()
            for line in whole.split(b"\n"):
                if line.startswith(b'{"jsonrpc":"2.0","id"') and b'"method"' not in line[:60]:
                    message = json.loads(line)
                    self.answers[message["id"]] = message
                    self._answered.set()
            if self.slow:
                await asyncio.sleep(0.002)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        ident = self.ids
        line = json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        self.writer.write(line.encode() + b"\n")
        while ident not in self.answers:
            self._answered.clear()
            await self._answered.wait()
        return self.answers.pop(ident)

    async def close(self) -> None:
        self.writer.close()
        self._task.cancel()


async def fan_out(socket: Path, cwd: str, observers: int, chunks: int, slow: int = 0) -> None:
    owner = await Client.open(socket)
    await owner.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = await owner.request("session/new", {"cwd": cwd, "mcpServers": []})
    session_id = session["result"]["sessionId"]
    watchers = []
    for i in range(observers + slow):
        watcher = await Client.open(socket)
        watcher.slow = i >= observers
        await watcher.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        attached = await watcher.request(
            "_acp-agent/attach", {"sessionId": session_id, "role": "observer", "replay": "none"}
        )
        assert "result" in attached, attached
        watchers.append(watcher)
    start = time.perf_counter()
    answer = await owner.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "Go"}]}
    )
    model_s = time.perf_counter() - start
    assert answer["result"]["stopReason"] == "end_turn", answer
    deadline = time.perf_counter() + 120
    while any(w.chunks < chunks for w in watchers) and time.perf_counter() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    fast = [w for w in watchers if not w.slow]
    rates = [w.chunks / (w.last_chunk_at - start) for w in fast]
    lag = max(w.last_chunk_at for w in fast) - (start + model_s)
    label = f"{observers} observer(s)" + (f" + {slow} slow" if slow else "")
    print(
        f"{label:<26} model {model_s:6.2f} s ({chunks / model_s:8.0f} chunks/s) | observers: "
        f"median {statistics.median(rates):8.0f} chunks/s, min {min(rates):8.0f} | slowest "
        f"fast observer's lag {max(lag, 0) * 1000:7.1f} ms"
        + (
            f" | slow one done {watchers[-1].last_chunk_at - start - model_s:6.2f} s after "
            f"the answer ({watchers[-1].chunks} chunks)"
            if slow
            else ""
        )
    )
    for client in [owner, *watchers]:
        await client.close()


async def replay_of_turns(socket: Path, cwd: str, turns: int) -> None:
    owner = await Client.open(socket)
    await owner.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = await owner.request("session/new", {"cwd": cwd, "mcpServers": []})
    session_id = session["result"]["sessionId"]
    for _ in range(turns):
        await owner.request(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": "short"}]},
        )
    watcher = await Client.open(socket)
    await watcher.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    start = time.perf_counter()
    await watcher.request(
        "_acp-agent/attach", {"sessionId": session_id, "role": "observer", "replay": "start"}
    )
    elapsed = time.perf_counter() - start
    print(
        f"attach with replay of {turns} turns: {elapsed * 1000:.0f} ms "
        f"({watcher.chunks} chunks replayed before the answer)"
    )
    await owner.close()
    await watcher.close()


async def run(args: argparse.Namespace, root: Path) -> None:
    script = root / "script.json"
    steps = [{"text": f"c{i} "} for i in range(args.chunks)]
    script.write_text(json.dumps({"replies": [steps]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_"))}
    env.update(ACP_AGENT_LSP="0", ACP_AGENT_MODE="ask")
    home = root / "home"
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acp_agent",
        "server",
        "--home",
        str(home),
        "--script",
        str(script),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert server.stderr is not None
    while b"listening on unix:" not in await server.stderr.readline():
        if server.returncode is not None:
            raise SystemExit("the server did not start")
    socket = home / "state" / "server" / "acp.sock"
    try:
        print(f"{args.chunks} chunks per reply")
        for observers in (1, 4, 16):
            await fan_out(socket, str(root), observers, args.chunks)
        await fan_out(socket, str(root), 4, args.chunks, slow=1)
        short = root / "short.json"
        short.write_text(json.dumps({"replies": [[{"text": "A short reply."}]]}))
    finally:
        server.terminate()
        await server.wait()
    # The replay benchmark plays a short reply per turn: a server of its own.
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acp_agent",
        "server",
        "--home",
        str(root / "home2"),
        "--script",
        str(short),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert server.stderr is not None
    while b"listening on unix:" not in await server.stderr.readline():
        if server.returncode is not None:
            raise SystemExit("the server did not start")
    try:
        await replay_of_turns(
            root / "home2" / "state" / "server" / "acp.sock", str(root), args.turns
        )
    finally:
        server.terminate()
        await server.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--turns", type=int, default=1_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acp-fanout-bench-") as tmp:
        asyncio.run(run(args, Path(tmp)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
