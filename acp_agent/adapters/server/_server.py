"""The app server: one runtime, any number of ACP connections, each a client as over stdio.

`AppServer` hosts the runtime (`RuntimeHost`: sessions, store, MCP and
language servers, jobs) and serves ACP on every connection it accepts: on
its Unix socket (`listen_unix`), and on WebSocket when asked (`_websocket`).
Each connection gets the ACP adapter of its own over a line stream
(`AgentConnection.serve_lines`): the same adapter, methods and answers as the
stdio agent, v1 (`ServerAcpAgent`) or, when its `initialize` asks for it, v2
(`_v2.ServerV2Agent`). A connection ending cancels nothing it started;
stopping the server (`stop`) ends every connection as the end of stdin ends
the stdio agent (its running prompts are cancelled and recorded as
interrupted), then closes the runtime.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket as sockets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from acp_agent.adapters.acp._opening import OpeningSessions
from acp_agent.adapters.acp2 import choose_protocol
from acp_agent.adapters.server._agent import ServerAcpAgent
from acp_agent.adapters.server._audience import SharedSessions, Viewer
from acp_agent.adapters.server._identity import peer_person
from acp_agent.adapters.server._places import PlaceError, check_socket_path, private_folder
from acp_agent.adapters.server._stream_io import StreamLineSource, StreamLineWriter
from acp_agent.people import local_person
from protocol.connection import AgentConnection, StartSoon

if TYPE_CHECKING:
    from acp_agent.adapters.acp import RuntimeHost
    from acp_agent.adapters.server._v2 import ServerV2Agent
    from acp_agent.models import ModelSource
    from protocol._ndjson import LineSource

__all__ = ("AppServer", "ClientWriter", "ServerRunning")

logger = logging.getLogger(__name__)

#: How long handlers cancelled at stop get to record how their turns ended.
_STOP_GRACE_S: Final = 0.5
#: How long `stop` waits for the connections to wind down.
_STOP_BUDGET_S: Final = 5.0


class ServerRunning(PlaceError):
    """Another server already answers on the socket."""


class ClientWriter(Protocol):
    """Where one connection's lines go (the engine's `Writer`), and how it waits and ends."""

    def write(self, data: bytes) -> None: ...

    async def writable(self) -> None: ...

    def disconnect(self, why: str) -> None: ...

    def close(self) -> None: ...


class _Client:
    """One live connection, served in ACP v1 (`ServerAcpAgent`) unless its `initialize`
    chose v2 (`ServerV2Agent`)."""

    def __init__(
        self,
        connection: AgentConnection,
        agent: ServerAcpAgent,
        writer: ClientWriter,
        hang_up: Callable[[], None],
    ) -> None:
        self.connection = connection
        self.agent: ServerAcpAgent | ServerV2Agent = agent
        self.writer = writer
        #: Ends the connection at the server's stop (see `AppServer.serve_client`).
        self.hang_up = hang_up
        self.done = asyncio.Event()

    async def stop_work(self) -> None:
        """At the server's stop: a v2 client's turns (its sessions' own work, which no
        request holds) are cancelled and recorded as interrupted; a v1 client's end with
        its requests."""
        if not isinstance(self.agent, ServerAcpAgent):
            await self.agent.aclose()


class AppServer:
    """The app server (see the module docstring).

    **Parameters:**

    * `host`: opens the runtime (call `open` before listening).
    * `start_soon`: where sessions being assembled run (a task group that waits for
      them: the one the runtime lives in).
    * `models`: the models sessions use and pick from.
    * `config_dir`: the person's config directory.
    * `mode`: the permission mode new sessions start in, by name.
    * `unstable`: serve unstable ACP methods and fields.
    * `editor_timeout_s`: how long each request to a client waits (None: the default).
    * `stall_s`: how long a client may read nothing, with output waiting, before it is disconnected.
    * `person`: the server's person (None: the local person; see `_identity`).
    """

    def __init__(
        self,
        host: RuntimeHost,
        models: ModelSource,
        *,
        start_soon: StartSoon,
        config_dir: Path | None,
        mode: str | None,
        unstable: bool,
        editor_timeout_s: float | None,
        stall_s: float,
        person: str | None = None,
    ) -> None:
        #: The server's own person: its uid's clients and its token (`_identity`).
        self.person = local_person() if person is None else person
        self._host = host
        self._models = models
        self._config_dir = config_dir
        self._mode = mode
        self._unstable = unstable
        self._editor_timeout_s = editor_timeout_s
        self.stall_s = stall_s
        self.shared = SharedSessions()
        self._ids = itertools.count(1)
        self._clients: set[_Client] = set()
        #: Sessions answered and still being assembled, whichever connection made them: a
        #: request about one from any connection waits for its assembly.
        self._opening = OpeningSessions(start_soon)
        self._listeners: list[asyncio.Server] = []
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._sockets: list[Path] = []
        self._stopping = False
        self._lock: int | None = None

    async def open(self) -> None:
        """Open the runtime now, so the first client does not wait for it."""
        await self._host.agent()

    # --- listening ---------------------------------------------------------------------

    async def listen_unix(self, path: Path) -> None:
        """Serve on the Unix socket `path` (its folder private, the socket 0600);
        `ServerRunning` if another server answers there, `PlaceError` for a bad place."""
        check_socket_path(path)
        private_folder(path.parent)
        self._lock = _lock(path.parent / "server.lock")
        if _exists(path):
            if await _answers(path):
                raise ServerRunning(f"a server already listens on {path}")
            os.unlink(path)  # left by a server that died
        listening = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        try:
            listening.bind(str(path))
            os.chmod(path, 0o600)
            listening.listen(64)
        except BaseException:
            listening.close()
            raise
        server = await asyncio.start_unix_server(self._accept_unix, sock=listening, limit=2**16)
        self._listeners.append(server)
        self._sockets.append(path)
        # Who listens, for a person (or a test) stopping a server a bridge started.
        pid_file = path.parent / "server.pid"
        _write_pid(pid_file)
        self._sockets.append(pid_file)
        logger.info("app server listening on unix:%s", path)

    def on_stop(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Await `closer` when the server stops, before the clients end (another listener)."""
        self._closers.append(closer)

    async def _accept_unix(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        out = StreamLineWriter(writer, stall_s=self.stall_s)
        try:
            person = peer_person(writer.get_extra_info("socket"), self.person)
            await self.serve_client(
                StreamLineSource(reader),
                out,
                kind="unix",
                person=person,
                # The writer then takes the client as gone (its transport is closing).
                hang_up=writer.transport.abort,
            )
        finally:
            out.close()

    # --- one client --------------------------------------------------------------------

    async def serve_client(
        self,
        source: LineSource,
        writer: ClientWriter,
        *,
        kind: str,
        hang_up: Callable[[], None],
        person: str | None = None,
    ) -> None:
        """Serve ACP to one client, `person`'s (None: the server's), until its input ends
        and its prompts are answered. `hang_up` ends the connection at once when the
        server stops: unlike `writer.disconnect` (a client dropped for its own fault,
        warned of), a normal stop warns of nothing."""
        if self._stopping:
            writer.close()
            return
        client_id = f"client-{next(self._ids)}"
        connection = AgentConnection(unstable=self._unstable)
        agent = ServerAcpAgent(
            connection,
            self._host,
            self._models,
            config_dir=self._config_dir,
            editor_timeout_s=self._editor_timeout_s,
            mode=self._mode,
            viewer=Viewer(client_id, connection),
            shared=self.shared,
            writable=writer.writable,
            opening=self._opening,
            person=self.person if person is None else person,
        )
        client = _Client(connection, agent, writer, hang_up)

        def use_v2() -> None:
            from acp_agent.adapters.server._v2 import ServerV2Agent

            v2_agent = ServerV2Agent(
                connection,
                self._host,
                self._models,
                config_dir=self._config_dir,
                mode=self._mode,
                person=agent.person,
                writable=writer.writable,
                client_id=client_id,
                shared=self.shared,
                opening=self._opening,
            )
            v2_agent.register()
            client.agent = v2_agent

        # v1 now; v2 instead if the client's `initialize` asks for it (as over stdio).
        choose_protocol(connection, v1=agent.register, v2=use_v2)
        self._clients.add(client)
        logger.info("%s connected (%s) for %s", client_id, kind, agent.person)
        try:
            # The connection's task group runs its handlers; leaving it waits for them.
            async with connection:
                await connection.serve_lines(source, writer, cancel_handlers=False)
                logger.info("%s left; its prompts run to their end", client_id)
                await client.agent.connection_ended(connection.protocol.wait_handlers)
        finally:
            connection.protocol.close()
            self._clients.discard(client)
            client.done.set()
            logger.info("%s done", client_id)

    # --- stopping ----------------------------------------------------------------------

    async def stop(self) -> None:
        """Stop listening, end every connection as the end of stdin ends the stdio agent
        (running prompts cancelled, their turns recorded as interrupted), then close the
        runtime (every session closes) and remove the socket."""
        self._stopping = True
        for server in self._listeners:
            server.close()
        for closer in self._closers:
            with contextlib.suppress(Exception):
                await closer()
        clients = list(self._clients)
        if clients:
            # A normal stop: told in the log, not warned of on stderr.
            logger.info("closing %d client connections: the server is stopping", len(clients))
        for client in clients:
            client.hang_up()
        for client in clients:
            await client.connection.protocol.input_ended(
                grace_s=_STOP_GRACE_S, cancel_handlers=True
            )
            await client.stop_work()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_STOP_BUDGET_S):
                for client in clients:
                    await client.done.wait()
        await self._opening.aclose()  # sessions still being assembled stop first
        await self._host.aclose()
        for path in self._sockets:
            with contextlib.suppress(OSError):
                os.unlink(path)


async def _answers(path: Path) -> bool:
    """Whether something accepts connections on the Unix socket `path`."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path)), 2.0)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
    return True


def _exists(path: Path) -> bool:
    """Whether a file (a socket, a link) is at `path` (a check done once, at start)."""
    return os.path.lexists(path)


def _lock(file: Path) -> int:
    """Hold `file` locked for as long as this server runs (the lock ends with the
    process, however it ends): two servers never race for one socket."""
    import fcntl

    fd = os.open(file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ServerRunning(f"another server holds {file}") from None
    return fd


def _write_pid(file: Path) -> None:
    file.write_text(f"{os.getpid()}\n")
