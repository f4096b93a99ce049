"""ACP over WebSocket (`acp-agent server --listen ws://127.0.0.1:PORT`), behind a token.

The transport of ACP's Streamable HTTP and WebSocket proposal: one endpoint,
`/acp`, upgraded to WebSocket; each text message is one JSON-RPC message.
Framing, the handshake, pings and limits are the `websockets` library's
(well kept, no dependencies of its own, asyncio like the protocol's engine);
nothing here speaks the wire format itself. Every connection is then a client
of the app server like any other (`AppServer.serve_client`).

A controller runs commands, so no one who merely finds the port gets in.
The upgrade is refused unless (`WebSocketGate`):

- `Authorization: Bearer <token>` names the server's token
  (`ACP_AGENT_SERVER_TOKEN`, or one drawn at random at each start and written
  to a 0600 file beside the socket, its path printed at start): 401;
- `Host` names the address listened on (`127.0.0.1:PORT`, `localhost:PORT`,
  `[::1]:PORT` on loopback, or an `--allow-host` name), so a page that had a
  name of its own resolve to 127.0.0.1 (DNS rebinding) is refused: 403;
- `Origin`, which every browser sends and no editor or script does, is absent
  or one of the `--allow-origin` values, so a web page the person visits
  cannot drive the agent through their browser: 403.

A non-loopback address needs `--allow-remote` as well (see `listen_address`).
With `--web` the same listener serves the web page (`_web`), whose upgrade
brings a login cookie and the page's own origin instead of the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import ipaddress
import logging
import os
import secrets
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

import anyio
import attrs

from acp_agent.adapters.server._stream_io import HIGH_WATER_BYTES
from acp_agent.people import local_person
from acp_agent.values import Value
from jsonbounds import LineSplitter, OverLongLine
from protocol.limits import MAX_AGENT_LINE_BYTES

if TYPE_CHECKING:
    from websockets.asyncio.server import Server, ServerConnection
    from websockets.http11 import Request, Response

    from acp_agent.adapters.server._server import AppServer
    from acp_agent.adapters.server._web import WebLogin

__all__ = (
    "ENDPOINT",
    "TOKEN_VARIABLE",
    "AddressRefused",
    "ListenAddress",
    "WebSocketGate",
    "WebSocketLines",
    "WebSocketWriter",
    "listen_address",
    "listen_websocket",
    "server_token",
)

logger = logging.getLogger(__name__)

#: The one endpoint (ACP's HTTP and WebSocket transport proposal).
ENDPOINT: Final = "/acp"
#: A token the person chooses, instead of one drawn at each start.
TOKEN_VARIABLE: Final = "ACP_AGENT_SERVER_TOKEN"


class AddressRefused(ValueError):
    """`--listen` names no WebSocket address this server may listen on (or one it cannot
    listen on now: in use, not this machine's)."""


@attrs.frozen
class ListenAddress(Value):
    """Where to listen: a host and a port (0: any free one)."""

    host: str
    port: int
    loopback: bool


def listen_address(url: str, *, allow_remote: bool) -> ListenAddress:
    """The address of `ws://HOST:PORT`; `AddressRefused` for another scheme, a missing
    port, or a non-loopback host without `allow_remote`."""
    parts = urlsplit(url)
    if parts.scheme != "ws" or not parts.hostname:
        raise AddressRefused(f"--listen takes ws://HOST:PORT, not {url!r}")
    try:
        port = parts.port
    except ValueError:  # not a number, or out of range: `_no_port` tells which
        port = None
    if port is None:
        raise AddressRefused(_no_port(url, parts.netloc))
    host = parts.hostname
    loopback = host == "localhost" or _is_loopback(host)
    if not loopback and not allow_remote:
        raise AddressRefused(
            f"--listen {url} is not a loopback address: anyone who can reach it and has "
            "the token could run commands; add --allow-remote if that is what you want"
        )
    return ListenAddress(host, port, loopback)


def _no_port(url: str, netloc: str) -> str:
    """Why `url` (whose location is `netloc`) gives no port to listen on: it names one out
    of range, or none (or not a number)."""
    # The text after the host's last colon (an IPv6 host's colons are inside brackets).
    _, colon, named = netloc.rpartition("@")[2].rpartition("]")[2].rpartition(":")
    if colon and named.isascii() and named.isdigit():
        return f"--listen {url}: the port {int(named)} is out of range (0-65535)"
    return f"--listen {url}: name the port (ws://HOST:PORT; 0 for any)"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def server_token(file: Path) -> tuple[str, Path | None]:
    """The token clients must present: `ACP_AGENT_SERVER_TOKEN`, or a new random one
    written to `file` (0600); and the file it is in (None for the variable's)."""
    chosen = os.environ.get(TOKEN_VARIABLE)
    if chosen:
        return chosen, None
    token = secrets.token_urlsafe(32)
    with contextlib.suppress(FileNotFoundError):  # an earlier start's
        file.unlink()
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    return token, file


class WebSocketGate:
    """Decides whether an upgrade gets in (see the module docstring)."""

    def __init__(
        self,
        token: str,
        address: ListenAddress,
        *,
        origins: Sequence[str] = (),
        hosts: Sequence[str] = (),
        web: WebLogin | None = None,
        person: str | None = None,
        people: Mapping[str, str] | None = None,
    ) -> None:
        """`token` is `person`'s (None: the local person); `people` maps more tokens to
        their people (`_identity.token_table`)."""
        self._tokens = [
            (token.encode(), local_person() if person is None else person),
            *((other.encode(), name) for other, name in (people or {}).items()),
        ]
        #: The server's person: the web page's (its one-time link is printed at start).
        self.server_person = self._tokens[0][1]
        #: `--web`: the page's login; a browser holding its cookie needs no token.
        self.web = web
        self._origins = frozenset(origin.rstrip("/") for origin in origins)
        self.address = address
        self._hosts = frozenset(hosts)

    def hosts(self, port: int) -> frozenset[str]:
        """The `Host` values accepted when listening on `port`."""
        names = {self.address.host, *self._hosts}
        if self.address.loopback:
            names |= {"127.0.0.1", "localhost", "[::1]", "::1"}
        accepted = set()
        for name in names:
            shown = f"[{name}]" if ":" in name and not name.startswith("[") else name
            accepted |= {f"{shown}:{port}", shown} if port == 80 else {f"{shown}:{port}"}
        return frozenset(accepted)

    def refusal(self, request: Request, port: int) -> tuple[HTTPStatus, str] | None:
        """Why `request` may not upgrade (a status and a line), or None."""
        path = urlsplit(request.path).path
        if path != ENDPOINT:
            return HTTPStatus.NOT_FOUND, f"ACP is served at {ENDPOINT}"
        named = request.headers.get_all("Host")
        host = named[0].lower() if len(named) == 1 else ""
        if host not in self.hosts(port):
            return HTTPStatus.FORBIDDEN, "this Host is not the address the server listens on"
        origins = request.headers.get_all("Origin")
        if self.web is not None and origins == [f"http://{host}"] and self.web.has_cookie(request):
            return None  # the page this server served, logged in (see `_web`)
        if origins and (len(origins) > 1 or origins[0].rstrip("/") not in self._origins):
            return HTTPStatus.FORBIDDEN, "requests from web pages of this origin are refused"
        if self.person(request) is None:
            return HTTPStatus.UNAUTHORIZED, "send Authorization: Bearer <the server's token>"
        return None

    def person(self, request: Request) -> str | None:
        """The person whose token `request` presents; None for no token or an unknown one."""
        authorization = request.headers.get_all("Authorization")
        scheme, _, presented = (authorization[0] if len(authorization) == 1 else "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        given = presented.strip().encode()
        found: str | None = None
        for token, person in self._tokens:  # every token compared: the time tells nothing
            if hmac.compare_digest(given, token) and found is None:
                found = person
        return found


class WebSocketLines:
    """The messages of a WebSocket as lines (a `LineSource`); b"" once it closes."""

    def __init__(self, connection: ServerConnection) -> None:
        self._connection = connection
        self._splitter = LineSplitter(MAX_AGENT_LINE_BYTES)
        self._lines: deque[bytearray | OverLongLine] = deque()

    async def readline(self) -> bytes | bytearray | OverLongLine:
        from websockets.exceptions import ConnectionClosed

        while not self._lines:
            try:
                message = await self._connection.recv()
            except ConnectionClosed:
                return b""
            data = message.encode("utf-8") if isinstance(message, str) else message
            self._lines.extend(self._splitter.feed(data))
            last = self._splitter.end()  # a message is whole: it ends its last line
            if last is not None:
                self._lines.append(last)
        return self._lines.popleft()


class WebSocketWriter:
    """Each message as a text frame, sent in order by `send_queued` (a `ClientWriter`),
    which the handler serving the connection runs in a task group of its own."""

    def __init__(self, connection: ServerConnection, *, stall_s: float) -> None:
        self._connection = connection
        self._stall_s = stall_s
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._more = asyncio.Event()
        self._progress = asyncio.Event()
        self._gone: str | None = None

    def write(self, data: bytes) -> None:
        if self._gone is not None:
            raise BrokenPipeError(self._gone)
        # One JSON-RPC message per frame: streamed text comes as several lines in one write.
        messages = data.split(b"\n") if b"\n" in data else (data,)
        for message in messages:
            self._queue.append(message)
            self._queued += len(message)
        self._more.set()

    async def writable(self) -> None:
        while self._gone is None and self._queued > HIGH_WATER_BYTES:
            self._progress.clear()
            try:
                async with asyncio.timeout(self._stall_s):
                    await self._progress.wait()
            except TimeoutError:
                self.disconnect(f"the client read nothing for {self._stall_s:g} s")
        if self._gone is not None:
            raise BrokenPipeError(self._gone)

    async def send_queued(self) -> None:
        """Send what is queued, in order, as it comes, until cancelled or the connection
        closes."""
        from websockets.exceptions import ConnectionClosed

        try:
            while True:
                await self._more.wait()
                while self._queue:
                    data = self._queue.popleft()
                    await self._connection.send(data.decode("utf-8"))
                    self._queued -= len(data)
                    self._progress.set()
                self._more.clear()
        except ConnectionClosed as exc:
            self._gone = f"the connection closed: {exc}"
            self._progress.set()
        except Exception as exc:  # ends this client's sending, never the server
            logger.exception("sending to a WebSocket client failed")
            self._gone = f"sending failed: {exc}"
            self._progress.set()

    def disconnect(self, why: str) -> None:
        if self._gone is None:
            self._gone = why
            logger.warning("closing a WebSocket client: %s", why)
        self._progress.set()
        transport = getattr(self._connection, "transport", None)
        if transport is not None:
            transport.abort()

    def close(self) -> None:
        """Take no more messages (the handler's group ends the sending)."""
        if self._gone is None:
            self._gone = "the connection is closed"
        self._progress.set()

    def hang_up(self) -> None:
        """Take no more messages and end the connection now, through no fault of the
        client's (the server stops): unlike `disconnect`, nothing to warn of."""
        self.close()
        transport = getattr(self._connection, "transport", None)
        if transport is not None:
            transport.abort()


async def listen_websocket(
    server: AppServer,
    address: ListenAddress,
    gate: WebSocketGate,
) -> tuple[Server, int]:
    """Serve ACP on WebSocket at `address` through `gate`; the server and its port."""
    from websockets.asyncio.server import serve

    port_holder: dict[str, int] = {}
    # The person of each connection let in, from its upgrade to its handler (weak: an
    # upgrade that fails after the check leaves nothing behind).
    people: weakref.WeakKeyDictionary[ServerConnection, str] = weakref.WeakKeyDictionary()

    def check(connection: ServerConnection, request: Request) -> Response | None:
        web = gate.web
        if web is not None and request.headers.get("Upgrade", "").lower() != "websocket":
            named = request.headers.get_all("Host")
            if len(named) != 1 or named[0].lower() not in gate.hosts(port_holder["port"]):
                return connection.respond(HTTPStatus.FORBIDDEN, "Not this server's name.\n")
            return web.respond(connection, request)  # the page (`_web`)
        refused = gate.refusal(request, port_holder["port"])
        if refused is None:
            # A known token's person, or (no token: the web page's cookie) the server's.
            people[connection] = gate.person(request) or gate.server_person
            return None
        status, why = refused
        logger.warning("WebSocket upgrade refused (%s): %s", status.value, why)
        response = connection.respond(status, why + "\n")
        if status is HTTPStatus.UNAUTHORIZED:
            response.headers["WWW-Authenticate"] = 'Bearer realm="acp-agent"'
        return response

    async def handler(connection: ServerConnection) -> None:
        writer = WebSocketWriter(connection, stall_s=server.stall_s)
        async with anyio.create_task_group() as sending:
            sending.start_soon(writer.send_queued, name="ws send")
            try:
                person = people.pop(connection, None)
                await server.serve_client(
                    WebSocketLines(connection),
                    writer,
                    kind="websocket",
                    person=person,
                    hang_up=writer.hang_up,
                )
            finally:
                writer.close()
                sending.cancel_scope.cancel()

    try:
        listening = await serve(
            handler,
            address.host,
            address.port,
            process_request=check,
            max_size=MAX_AGENT_LINE_BYTES,
            compression=None,  # ACP's lines are small and many: deflate costs more than it saves
            server_header=None,
        )
    except OSError as exc:  # the person's to fix (another port), not a fault to trace
        raise AddressRefused(_cannot_listen(address, exc)) from None
    port = int(listening.sockets[0].getsockname()[1])
    port_holder["port"] = port

    async def stop() -> None:
        listening.close(close_connections=True)

    server.on_stop(stop)
    return listening, port


def _cannot_listen(address: ListenAddress, exc: OSError) -> str:
    """Why `address` cannot be listened on (`exc`, from binding it), and what to do."""
    host = f"[{address.host}]" if ":" in address.host else address.host
    where = f"{host}:{address.port}"
    if exc.errno == errno.EADDRINUSE:
        return f"address {where} is in use: stop what listens there or choose another port"
    if exc.errno == errno.EACCES:
        return (
            f"cannot listen on {where}: permission denied (ports below 1024 need "
            "privileges); choose another port"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {where}: not an address of this machine; name one of its own"
    return f"cannot listen on {where}: {exc.strerror or exc}; name another address with --listen"
