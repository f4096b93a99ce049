"""Errors of the ACP connection: what goes on the wire, what the peer did, what we misused.

The tree (``code`` is the JSON-RPC error code on the wire)::

    AcpError                      an error response: code, message, data
    ├── ParseError                -32700  the line is not JSON (or not UTF-8)
    ├── InvalidRequest            -32600  JSON, but not a JSON-RPC 2.0 message
    ├── MethodNotFound            -32601  no handler (unknown, unstable or other side)
    ├── InvalidParams             -32602  params do not fit the method
    ├── InternalError             -32603  the handler failed; details only in the log
    ├── RequestCancelled          -32800  cancelled by `$/cancel_request` or shutdown
    ├── AuthRequired              -32000  authenticate first
    └── ResourceNotFound          -32002  e.g. an unknown session id

    PeerError                     the other side misbehaved or went away
    ├── RemoteProtocolError       it sent a malformed response or result
    ├── PeerDisconnected          it closed the stream before answering
    └── PeerTimedOut              it did not answer within the request's deadline

    ConnectionMisuse(RuntimeError)  our own code used the connection wrongly
    ├── ConnectionNotStarted      sending before the connection has started
    ├── ConnectionClosed          sending on a connection that has closed
    ├── UnstableNotEnabled        an unstable method without `unstable=True`
    ├── WrongMethod               a method this connection cannot send or serve
    └── MessageTooDeep            a message nested deeper than the peer may take

Raise an `AcpError` subclass in a handler to answer with that error; a request
to the peer raises the `AcpError` subclass matching the code it answered with.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

__all__ = (
    "AcpError",
    "AuthRequired",
    "ConnectionClosed",
    "ConnectionMisuse",
    "ConnectionNotStarted",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "MessageTooDeep",
    "MethodNotFound",
    "ParseError",
    "PeerDisconnected",
    "PeerError",
    "PeerTimedOut",
    "RemoteProtocolError",
    "RequestCancelled",
    "ResourceNotFound",
    "UnstableNotEnabled",
    "WrongMethod",
)


class AcpError(Exception):
    """An error response on the wire: a code, a one-sentence message and optional data.

    Construct a subclass (`InvalidParams("Invalid params: cwd: ...")`); use
    `AcpError(code=...)` only for codes without a class of their own.
    """

    #: The code subclasses answer with; the base class needs `code=`.
    CODE: ClassVar[int] = -32603
    #: The message used when none is given.
    MESSAGE: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None, *, code: int | None = None):
        self.code: int = self.CODE if code is None else code
        self.message: str = message or self.MESSAGE
        self.data: Any = data
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC error object; `data` only when there is some."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_wire(cls, code: int, message: str, data: Any = None) -> AcpError:
        """The error class for `code` (the base class for codes we have no class for)."""
        error_class = _BY_CODE.get(code, AcpError)
        return error_class(message, data, code=code)


class ParseError(AcpError):
    """-32700: the line is not valid UTF-8 JSON."""

    CODE = -32700
    MESSAGE = "Parse error"


class InvalidRequest(AcpError):
    """-32600: valid JSON, but not a JSON-RPC 2.0 request, notification or response."""

    CODE = -32600
    MESSAGE = "Invalid request"


class MethodNotFound(AcpError):
    """-32601: nothing here handles that method."""

    CODE = -32601
    MESSAGE = "Method not found"


class InvalidParams(AcpError):
    """-32602: the params do not fit the method; the message names the field."""

    CODE = -32602
    MESSAGE = "Invalid params"


class InternalError(AcpError):
    """-32603: the handler failed; the traceback goes to the log, never on the wire."""

    CODE = -32603
    MESSAGE = "Internal error"


class RequestCancelled(AcpError):
    """-32800: the request was cancelled (`$/cancel_request`, or the connection is ending)."""

    CODE = -32800
    MESSAGE = "Request cancelled"


class AuthRequired(AcpError):
    """-32000: the client must authenticate first (only when auth methods are advertised)."""

    CODE = -32000
    MESSAGE = "Authentication required"


class ResourceNotFound(AcpError):
    """-32002: the thing named (a session, a file) does not exist."""

    CODE = -32002
    MESSAGE = "Resource not found"


_BY_CODE: Final[dict[int, type[AcpError]]] = {
    error_class.CODE: error_class
    for error_class in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        RequestCancelled,
        AuthRequired,
        ResourceNotFound,
    )
}


class PeerError(Exception):
    """The other side broke the protocol or went away; not an error response."""


class RemoteProtocolError(PeerError):
    """The peer sent a response or result that does not fit JSON-RPC or the method."""


class PeerDisconnected(PeerError):
    """The peer closed the connection before answering a request we sent."""

    def __init__(self, message: str = "the peer closed the connection before answering"):
        super().__init__(message)


class PeerTimedOut(PeerError):
    """The peer did not answer a request we sent within its deadline.

    The request was withdrawn (`$/cancel_request`) and a late answer is dropped,
    but the peer may have carried it out: whether it did is unknown.
    """

    def __init__(self, method: str, timeout_s: float):
        self.method = method
        self.timeout_s = timeout_s
        super().__init__(f"the peer did not answer {method} within {timeout_s:g} s")


class ConnectionMisuse(RuntimeError):
    """Our own code used a connection wrongly; fix the caller."""


class ConnectionNotStarted(ConnectionMisuse):
    """Nothing can be sent before the connection has started (`start_io`)."""

    def __init__(self, message: str = "the connection has not started; nothing can be sent yet"):
        super().__init__(message)


class ConnectionClosed(ConnectionMisuse):
    """The connection has closed: nothing more can be sent on it."""

    def __init__(self, message: str = "the connection is closed; nothing more can be sent"):
        super().__init__(message)


class UnstableNotEnabled(ConnectionMisuse):
    """An unstable ACP method was used on a connection created without `unstable=True`."""

    def __init__(self, method: str):
        self.method = method
        super().__init__(
            f"{method} is unstable; create the connection with unstable=True to use it"
        )


class WrongMethod(ConnectionMisuse):
    """A method this connection cannot send or serve (wrong side, kind or name)."""


class MessageTooDeep(ConnectionMisuse):
    """A message nested deeper than `protocol.limits.MAX_JSON_DEPTH`: the peer would refuse it,
    so it is never written (send a plainer form instead)."""
