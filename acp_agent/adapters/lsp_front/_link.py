"""The LSP front end's connection to a running app server: one ACP client on its socket.

`ServerLink` owns the connection (`acp-agent lsp --connect`): a task of the
front end's, running for as long as it serves, opens it when a session first
needs it, and again after the server went away (the next command reconnects).
The connection is an ACP client like any other of the server's
(`initialize` offering `fs.readTextFile` and `fs.writeTextFile`): what the
server asks of it about a session (its updates, its permission questions, its
files) goes to that session's `Attached` (`_attached`), found by its id.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import anyio

import acp_agent
from protocol import methods, types
from protocol.connection import ClientConnection
from protocol.errors import AcpError, ConnectionClosed, PeerError, ResourceNotFound
from protocol.methods import MessageKind

__all__ = ("ATTACH", "REWIND", "Attached", "ServerClient", "ServerLink", "ServerUnreachable")

logger = logging.getLogger(__name__)

ATTACH: Final = "_acp-agent/attach"
REWIND: Final = "_acp-agent/rewind"
#: What the server tells attached clients besides updates; nothing to do here.
_NOTICES: Final = (
    "_acp-agent/job",
    "_acp-agent/permission_asked",
    "_acp-agent/permission_resolved",
    "_acp-agent/client_disconnected",
)
#: How long connecting and `initialize` may take before the server counts as unreachable.
_CONNECT_S: Final = 10.0


class ServerUnreachable(Exception):
    """No app server answers on the socket (the message says how to start one)."""


class Attached(Protocol):
    """What the link hands a session's requests and updates to (`_attached.AttachedSession`)."""

    def update(self, notification: types.SessionNotification) -> None: ...

    async def ask(
        self, request: types.RequestPermissionRequest
    ) -> types.RequestPermissionResponse: ...

    async def read(self, request: types.ReadTextFileRequest) -> types.ReadTextFileResponse: ...

    async def write(self, request: types.WriteTextFileRequest) -> types.WriteTextFileResponse: ...


class _Attempt:
    """One try at connecting, awaited by every session that needs the connection."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.client: ServerClient | None = None
        self.error: str | None = None


class ServerClient(ClientConnection):
    """The ACP connection to the server; routes what it is asked to the sessions' `Attached`."""

    def __init__(self, sessions: dict[str, Attached]) -> None:
        super().__init__()
        self._sessions = sessions
        self.register(methods.SESSION_UPDATE, self._update)
        self.register(methods.SESSION_REQUEST_PERMISSION, self._ask)
        self.register(methods.FS_READ_TEXT_FILE, self._read)
        self.register(methods.FS_WRITE_TEXT_FILE, self._write)
        for method in _NOTICES:
            self.register(method, _ignored, kind=MessageKind.NOTIFICATION)

    async def open(self, socket: str) -> None:
        """Connect and negotiate; `OSError` when nothing listens on `socket`,
        `ServerUnreachable` when what answers is not an app server."""
        await self.connect_unix(socket)
        response: types.InitializeResponse = await self.request(
            methods.INITIALIZE,
            types.InitializeRequest(
                protocol_version=types.PROTOCOL_VERSION,
                client_capabilities=types.ClientCapabilities(
                    fs=types.FileSystemCapabilities(read_text_file=True, write_text_file=True)
                ),
                client_info=types.Implementation(
                    name="acp-agent-lsp", title="acp-agent lsp", version=acp_agent.__version__
                ),
            ),
        )
        capabilities = response.agent_capabilities or types.AgentCapabilities()
        ours = (capabilities.meta or {}).get("acp-agent") or {}
        if "attach" not in ours:
            raise ServerUnreachable(
                f"what listens on {socket} does not take _acp-agent/attach: not an acp-agent "
                "app server"
            )

    def _session(self, session_id: object) -> Attached:
        session = self._sessions.get(str(session_id))
        if session is None:
            raise ResourceNotFound(f"Resource not found: session {session_id} is not open here")
        return session

    async def _update(self, params: types.SessionNotification) -> None:
        session = self._sessions.get(str(params.session_id))
        if session is not None:
            session.update(params)

    async def _ask(self, params: types.RequestPermissionRequest) -> Any:
        return await self._session(params.session_id).ask(params)

    async def _read(self, params: types.ReadTextFileRequest) -> Any:
        return await self._session(params.session_id).read(params)

    async def _write(self, params: types.WriteTextFileRequest) -> Any:
        return await self._session(params.session_id).write(params)


async def _ignored(params: object) -> None:
    """A notice for attached clients the language server has nothing to show of."""


class ServerLink:
    """The connection to the app server on `socket` (see the module docstring).

    `start` (optional) starts a server when none answers, and says whether one now
    listens (`[server] start = true`); it runs on a worker thread.
    """

    def __init__(self, socket: str, *, start: Callable[[], bool] | None = None) -> None:
        self.socket = socket
        self._start = start
        #: The sessions attached on the current connection, by id.
        self.sessions: dict[str, Attached] = {}
        self._current: ServerClient | None = None
        self._attempt: _Attempt | None = None
        self._wanted = anyio.Event()
        self._closing = anyio.Event()
        #: The scope of a connecting try under way (made in the loop: anyio needs one).
        self._opening: anyio.CancelScope | None = None

    @property
    def current(self) -> ServerClient | None:
        """The connection while it is open."""
        return self._current

    async def connection(self) -> ServerClient:
        """The open connection, connecting first if need be; `ServerUnreachable` when no
        server answers."""
        if self._current is not None:
            return self._current
        if self._closing.is_set():
            raise ServerUnreachable("the language server is stopping")
        attempt = self._attempt
        if attempt is None:
            attempt = self._attempt = _Attempt()
            self._wanted.set()
        await attempt.done.wait()
        if attempt.client is None:
            raise ServerUnreachable(attempt.error or f"no acp-agent server on {self.socket}")
        return attempt.client

    async def run(self) -> None:
        """Own the connection until `aclose`: open it when wanted, hold it until it ends."""
        while not self._closing.is_set():
            await _first(self._wanted.wait, self._closing.wait)
            self._wanted = anyio.Event()
            attempt = self._attempt
            if attempt is None or self._closing.is_set():
                continue
            async with ServerClient(self.sessions) as client:
                with anyio.CancelScope() as self._opening:  # `aclose` cancels a try
                    attempt.error = await self._open(client)
                if self._opening.cancel_called:
                    attempt.error = "the language server is stopping"
                self._opening = None
                if attempt.error is None:
                    attempt.client = self._current = client
                self._attempt = None
                attempt.done.set()
                if attempt.client is not None:
                    logger.info("connected to the app server on %s", self.socket)
                    await _first(client.wait_ended, self._closing.wait)
                    self._current = None
                    if not self._closing.is_set():
                        logger.warning("the app server on %s went away", self.socket)
            self.sessions.clear()
        if self._attempt is not None:  # asked for while closing
            self._attempt.error = "the language server is stopping"
            self._attempt.done.set()

    async def _open(self, client: ServerClient) -> str | None:
        """Connect `client` (starting a server when allowed); why not, or None."""
        try:
            try:
                with anyio.fail_after(_CONNECT_S):
                    await client.open(self.socket)
            except OSError:
                # The starter waits for the server it starts to listen (bounded).
                started = self._start is not None and await anyio.to_thread.run_sync(
                    self._start, abandon_on_cancel=True
                )
                if not started:
                    raise
                with anyio.fail_after(_CONNECT_S):
                    await client.open(self.socket)
        except OSError:
            how = (
                "the server started for it did not listen"
                if self._start is not None
                else "start one with `acp-agent server`, or set [server] start = true "
                "in config.toml to have `acp-agent lsp --connect` start it"
            )
            return f"no acp-agent server listens on {self.socket}: {how}"
        except ServerUnreachable as exc:
            return str(exc)
        except (AcpError, PeerError, ConnectionClosed, TimeoutError) as exc:
            return f"the acp-agent server on {self.socket} did not answer: {exc}"
        return None

    async def aclose(self) -> None:
        """Stop: the connection closes (the server sees this client leave)."""
        self._closing.set()
        if self._opening is not None:
            self._opening.cancel()


async def _first(*waits: Callable[[], Awaitable[object]]) -> None:
    """Return once the first of `waits` returns."""
    async with anyio.create_task_group() as group:

        async def until(wait: Callable[[], Awaitable[object]]) -> None:
            await wait()
            group.cancel_scope.cancel()

        for wait in waits:
            group.start_soon(until, wait)
