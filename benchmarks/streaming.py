"""How fast streamed model output gets through the agent to the editor, and how late.

Usage (from the repository root, with the virtual environment that has acp-agent
installed):

    .venv/bin/python benchmarks/streaming.py [--chunks N] [--paced-chunks N] [--rate N]
                                             [--rounds N]

The model is the fake provider of the tests (`tests/support/fake_provider.py`), a
real HTTP server on 127.0.0.1 speaking OpenAI's streaming format, in a process of
its own (so it competes with neither path for a GIL); it records when it wrote
each chunk. Two paths are measured in the same run, alternating, so both see the
same machine noise:

- floor: the same fake provider streamed straight to a client: the client reads
  the reply over HTTP with the agent's own OpenAI provider (SSE decoding
  included) and notes when each text chunk arrives;
- agent: the real `acp-agent` process (`OPENAI_BASE_URL` at the fake, a fresh
  `--home`, so a real SQLite file with `synchronous=FULL`) runs a prompt; every
  chunk goes through the loop, the timeline (group commit), the dispatcher and
  the ACP adapter, and the benchmark, as the ACP client, notes when each
  `agent_message_chunk` line arrives on the agent's stdout.

Two phases: throughput, `--chunks` (default 20,000) written as fast as the fake
can, in chunks per second from the first chunk written to the last received;
latency, `--paced-chunks` (default 5,000) written at `--rate` chunks per second
(default 1,000, faster than models stream), where each chunk's latency is the
time from the fake writing it to the client receiving it. The table shows the
median of `--rounds` rounds (default 3). Targets: the agent at 85% or more of the
floor's throughput, and under 1 ms median latency added to the floor's.

It is a report: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acp_agent.models import (  # noqa: E402
    Message,
    ModelRequest,
    OpenAIProvider,
    Text,
    TextDelta,
    new_http_client,
)
from tests.support.fake_provider import (  # noqa: E402
    Chunk,
    Exchange,
    FakeProviderServer,
    openai_chunk,
    openai_stream,
    sse_data,
)

TIMEOUT_S = 300.0
MODEL = "openai/bench"


class TimedFakeProvider(FakeProviderServer):
    """The fake provider, noting when each chunk of a reply was written (monotonic clock).

    `time.monotonic()` is CLOCK_MONOTONIC, shared by every process of the machine, so
    the agent-side client can compare its receive times with these.
    """

    def __init__(self) -> None:
        super().__init__()
        self.written_at: list[float] = []

    def _respond(self, handler: http.server.BaseHTTPRequestHandler, exchange: Exchange) -> None:
        # Each chunk leaves at once (no Nagle delay waiting for the client's ACK).
        handler.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        handler.send_response(exchange.status)
        for name, value in exchange.headers.items():
            handler.send_header(name, value)
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        handler.wfile.flush()
        written = self.written_at
        for chunk in exchange.chunks:
            data, delay_s = (
                (chunk, 0.0) if isinstance(chunk, bytes) else (chunk.data, chunk.delay_s)
            )
            if delay_s:
                _sleep_until(time.monotonic() + delay_s)
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            handler.wfile.flush()
            written.append(time.monotonic())
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()


def _sleep_until(deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)


def reply(chunks: int, rate: float | None) -> Exchange:
    """A streamed reply of `chunks` text chunks `00000;`, `00001;`, ... (then the end)."""
    delay = 0.0 if rate is None else 1.0 / rate
    body: list[bytes | Chunk] = [
        Chunk(sse_data(openai_chunk({"content": f"{i:05d};"})), delay) for i in range(chunks)
    ]
    body.append(
        openai_stream(
            openai_chunk({}, "stop"),
            openai_chunk(usage={"prompt_tokens": 10, "completion_tokens": chunks}),
        )
    )
    return Exchange(chunks=body)


def index_of(text: str) -> int:
    return int(text[:5])


class FakeProviderProcess:
    """`TimedFakeProvider` in a subprocess (`--serve`), driven over its stdin and stdout."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()

    def queue(self, chunks: int, rate: float | None) -> None:
        """Play the next reply: `chunks` chunks, at `rate` per second (None: at once)."""
        self._send({"chunks": chunks, "rate": rate})
        assert self.process.stdout is not None
        self.process.stdout.readline()  # queued

    def written_at(self) -> list[float]:
        """When each chunk of the last reply was written."""
        self._send({"written": True})
        assert self.process.stdout is not None
        written: list[float] = json.loads(self.process.stdout.readline())
        return written

    def _send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def serve() -> int:
    """The `--serve` side: print the URL, then obey commands, one JSON object a line."""
    server = TimedFakeProvider()
    server.start()
    try:
        print(server.base_url, flush=True)
        for line in sys.stdin:
            command = json.loads(line)
            if "chunks" in command:
                server.written_at.clear()
                server.add(reply(command["chunks"], command["rate"]))
                print("queued", flush=True)
            else:
                print(json.dumps(server.written_at), flush=True)
    finally:
        server.close()
    return 0


# --- the floor ------------------------------------------------------------------------


async def floor_run(server: FakeProviderProcess, chunks: int) -> list[float]:
    """Receive times of each chunk, read straight from the fake by the OpenAI provider."""
    received = [0.0] * chunks
    async with new_http_client() as client:
        provider = OpenAIProvider(client, base_url=f"{server.base_url}/v1", api_key="sk-bench")
        request = ModelRequest(model="bench", guide="", messages=[Message("user", [Text("go")])])
        async with provider.stream(request) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    received[index_of(event.text)] = time.monotonic()
    return received


# --- the agent ------------------------------------------------------------------------


class AgentClient:
    """The agent as a subprocess; a thread notes when each stdout line arrives."""

    def __init__(self, home: Path, base_url: str) -> None:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "ANTHROPIC_", "ACP_AGENT_"))
        }
        env.update(
            OPENAI_BASE_URL=f"{base_url}/v1", OPENAI_API_KEY="sk-bench", ACP_AGENT_MODEL=MODEL
        )
        self.process = subprocess.Popen(
            [sys.executable, "-m", "acp_agent", "--home", str(home)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.lines: list[tuple[float, bytes]] = []
        self._arrived = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._ids = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            now = time.monotonic()
            with self._arrived:
                self.lines.append((now, line))
                self._arrived.notify_all()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its response (updates before it are kept)."""
        self._ids += 1
        msg_id = self._ids
        assert self.process.stdin is not None
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        seen = 0
        deadline = time.monotonic() + TIMEOUT_S
        with self._arrived:
            while True:
                for _, line in self.lines[seen:]:
                    if b'"id":' in line and b'"method"' not in line:
                        decoded = json.loads(line)
                        if decoded.get("id") == msg_id:
                            return decoded  # type: ignore[no-any-return]
                seen = len(self.lines)
                if not self._arrived.wait(timeout=max(0.0, deadline - time.monotonic())):
                    raise TimeoutError(f"no answer to {method} within {TIMEOUT_S} s")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def agent_run(server: FakeProviderProcess, chunks: int, workspace: Path) -> list[float]:
    """Receive times of each chunk's `agent_message_chunk`, through a fresh agent."""
    with tempfile.TemporaryDirectory(prefix="acp-agent-bench-") as home:
        agent = AgentClient(Path(home), server.base_url)
        try:
            agent.request("initialize", {"protocolVersion": 1})
            new = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
            session_id = new["result"]["sessionId"]
            start = len(agent.lines)
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
            answer = agent.request("session/prompt", prompt)
            if answer.get("result", {}).get("stopReason") != "end_turn":
                raise RuntimeError(f"the prompt did not end normally: {answer}")
            lines = agent.lines[start:]
        finally:
            agent.close()
    received = [0.0] * chunks
    for at, line in lines:
        if b"agent_message_chunk" not in line:
            continue
        update = json.loads(line)["params"]["update"]
        received[index_of(update["content"]["text"])] = at
    if not all(received):
        raise RuntimeError("some chunks never reached the client")
    return received


# --- measuring ------------------------------------------------------------------------


def throughput(written: Sequence[float], received: Sequence[float]) -> float:
    return len(received) / (max(received) - written[0])


def latencies_ms(written: Sequence[float], received: Sequence[float]) -> list[float]:
    return [(r - w) * 1000 for w, r in zip(written, received, strict=True)]


def p99(values: Sequence[float]) -> float:
    return sorted(values)[int(0.99 * (len(values) - 1))]


def measure(
    server: FakeProviderProcess, path: str, chunks: int, rate: float | None, workspace: Path
) -> tuple[float, float, float]:
    """(chunks/s, median latency ms, p99 latency ms) of one run of `path`."""
    server.queue(chunks, rate)
    if path == "floor":
        received = asyncio.run(floor_run(server, chunks))
    else:
        received = agent_run(server, chunks, workspace)
    written = server.written_at()[:chunks]
    lat = latencies_ms(written, received)
    return throughput(written, received), statistics.median(lat), p99(lat)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--paced-chunks", type=int, default=5_000)
    parser.add_argument("--rate", type=float, default=1000.0, help="paced chunks per second")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve()

    phases = [("throughput", args.chunks, None), ("latency", args.paced_chunks, args.rate)]
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    server = FakeProviderProcess()
    with tempfile.TemporaryDirectory() as workspace:
        for round_number in range(args.rounds):
            for phase, chunks, rate in phases:
                for path in ("floor", "agent"):
                    result = measure(server, path, chunks, rate, Path(workspace))
                    results.setdefault((phase, path), []).append(result)
                    print(
                        f"round {round_number + 1} {phase:10} {path:5}: {result[0]:9,.0f} chunks/s,"
                        f" median {result[1]:.3f} ms, p99 {result[2]:.3f} ms",
                        file=sys.stderr,
                    )
    server.close()

    def med(phase: str, path: str, i: int) -> float:
        return statistics.median(r[i] for r in results[(phase, path)])

    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.system()};"
        f" median of {args.rounds} rounds\n"
    )
    print("| phase | path | chunks | chunks/s | median latency | p99 latency |")
    print("|-------|------|-------:|---------:|---------------:|------------:|")
    for phase, chunks, rate in phases:
        label = f"{phase} ({'unpaced' if rate is None else f'{rate:,.0f}/s'})"
        for path in ("floor", "agent"):
            print(
                f"| {label} | {path} | {chunks:,} | {med(phase, path, 0):,.0f} |"
                f" {med(phase, path, 1):.3f} ms | {med(phase, path, 2):.3f} ms |"
            )
    ratio = med("throughput", "agent", 0) / med("throughput", "floor", 0)
    added = med("latency", "agent", 1) - med("latency", "floor", 1)
    print(
        f"\nagent throughput: {ratio:.0%} of the floor (target >= 85%)\n"
        f"added median latency at {args.rate:,.0f} chunks/s: {added:.3f} ms (target < 1 ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
