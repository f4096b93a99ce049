"""The app server under test: a real `acp-agent server` process and clients on its socket.

`running_server()` starts `python -m acp_agent server` with a home of the test's
own (its socket in that home's state folder) and waits until it listens;
`SocketClient` is the editor-like test client (`EditorClient`) talking ACP over
the server's Unix socket instead of a child's pipes; `socket_client()` connects
and initializes one, and checks every line the server wrote to it against the
schema when it leaves. A bridge is the stdio command with `--connect`
(`bridge_command`), driven with the usual launcher (`connected`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

from protocol import methods, types
from protocol._ndjson import MAX_CLIENT_LINE_BYTES, StreamWriterAdapter
from protocol.connection import _run_ndjson
from tests.support.agent import agent_env
from tests.support.client import _RecordingWriter
from tests.support.editor_client import EditorClient

__all__ = (
    "ATTACH",
    "DETACH",
    "ServerProcess",
    "SocketClient",
    "bridge_command",
    "cursor_of",
    "running_server",
    "socket_client",
)

ATTACH = "_acp-agent/attach"
DETACH = "_acp-agent/detach"
#: How long a server may take to listen (imports, the runtime, the store).
_START_BUDGET_S = 30.0


class ServerProcess:
    """A running `acp-agent server`: its process, socket and stderr."""

    def __init__(self, process: asyncio.subprocess.Process, socket: Path, home: Path) -> None:
        self.process = process
        self.socket = socket
        self.home = home
        self.stderr: list[str] = []
        self._reader: asyncio.Task[None] | None = None

    async def _read_stderr(self, listening: asyncio.Event) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            text = line.decode("utf-8", "replace")
            self.stderr.append(text)
            sys.stderr.write(text)
            if "listening on unix:" in text:
                listening.set()

    async def stop(
        self, signum: signal.Signals = signal.SIGTERM, *, timeout_s: float = 15.0
    ) -> int:
        """Send `signum` and wait for the exit status (killed after `timeout_s`)."""
        if self.process.returncode is None:
            self.process.send_signal(signum)
            try:
                await asyncio.wait_for(self.process.wait(), timeout_s)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 2.0)
        assert self.process.returncode is not None
        return self.process.returncode


def server_command(
    home: Path, *, script: Path | None = None, args: Sequence[str] = ()
) -> list[str]:
    command = [sys.executable, "-m", "acp_agent", "server", "--home", str(home), *args]
    if script is not None:
        command += ["--script", str(script)]
    return command


def bridge_command(home: Path, *args: str) -> list[str]:
    """The stdio command as a bridge to the server of `home`."""
    return [sys.executable, "-m", "acp_agent", "--home", str(home), "--connect", *args]


@asynccontextmanager
async def running_server(
    home: Path,
    *,
    script: Path | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[ServerProcess]:
    """A server with `home` (and `script`), listening; stopped (SIGTERM) on exit."""
    process = await asyncio.create_subprocess_exec(
        *server_command(home, script=script, args=args),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=dict(agent_env() if env is None else env),
    )
    server = ServerProcess(process, home / "state" / "server" / "acp.sock", home)
    listening = asyncio.Event()
    server._reader = asyncio.create_task(server._read_stderr(listening))
    try:
        async with asyncio.timeout(_START_BUDGET_S):
            waiter = asyncio.create_task(listening.wait())
            exited = asyncio.create_task(process.wait())
            await asyncio.wait({waiter, exited}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            exited.cancel()
        assert listening.is_set(), "the server exited before listening:\n" + "".join(server.stderr)
        yield server
    finally:
        await server.stop()


class SocketClient(EditorClient):
    """The editor-like test client over the server's Unix socket."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._socket_writer: asyncio.StreamWriter | None = None
        #: Extension notifications received (`_acp-agent/...`), in order.
        self.notices: list[tuple[str, Any]] = []

    async def connect(self, socket: Path) -> None:
        reader, writer = await asyncio.open_unix_connection(
            str(socket), limit=MAX_CLIENT_LINE_BYTES
        )
        self._socket_writer = writer
        self.protocol.set_writer(StreamWriterAdapter(writer))
        self.protocol.writer = _RecordingWriter(self.protocol.writer, self.sent, self._wrote)
        # Read in the connection's task group (`async with` the client): `stop` ends it.
        self._start_readers(partial(_run_ndjson, reader, self.protocol, on_line=self.line_received))

    def line_received(self, line: bytes) -> None:
        super().line_received(line)
        if line.startswith(b'{"jsonrpc":"2.0","method":"_acp-agent/'):
            import json

            message = json.loads(line)
            self.notices.append((message["method"], message.get("params")))

    async def stop(self, *, timeout_s: float = 5.0) -> None:
        """Close our side of the socket (the server sees the client leave)."""
        if self._socket_writer is not None and not self._socket_writer.is_closing():
            self._socket_writer.close()
        await super().stop(timeout_s=timeout_s)

    async def attach(
        self, session_id: str, *, role: str = "controller", replay: str = "start", **extra: Any
    ) -> dict[str, Any]:
        params = {"sessionId": session_id, "role": role, "replay": replay, **extra}
        result: dict[str, Any] = await self.request(ATTACH, params)
        return result


def cursor_of(notification: types.SessionNotification) -> str | None:
    """The cursor an update to an attached client carries."""
    return ((notification.meta or {}).get("acp-agent") or {}).get("cursor")


@asynccontextmanager
async def socket_client(
    socket: Path,
    *,
    initialize: bool = True,
    capabilities: types.ClientCapabilities | None = None,
    check_wire: bool = True,
    **kwargs: Any,
) -> AsyncIterator[SocketClient]:
    """A `SocketClient` on `socket`, initialized; its wire checked when it leaves."""
    client = SocketClient(**kwargs)
    async with client:  # leaving it stops the client and waits for its reader
        await client.connect(socket)
        if initialize:
            await client.request(
                methods.INITIALIZE,
                types.InitializeRequest(
                    protocol_version=1,
                    client_capabilities=capabilities or client.capabilities(),
                ),
            )
        yield client
    if check_wire:
        problems = client.wire_problems()
        assert problems == [], "\n".join(problems)
