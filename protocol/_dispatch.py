"""The JSON-RPC 2.0 engine for one side of ACP, on asyncio.

It is ours, not pygls': pygls imports lsprotocol's whole LSP type set
(~400 ms) on every start, and its request handling needed workarounds to be
right for ACP. What the engine does:

- an `async def` handler runs as a task of the connection's task group, in a
  cancel scope of its own, started in the context the line was received in,
  so the read loop never waits for it and the connection waits for it before
  it ends; a plain handler runs at once;
- routes keyed by method *and* kind, checked against the generated method
  table (side, stability), with params structured into the generated types
  and -32602 naming the offending field;
- envelopes written as plain JSON (an error reply keeps `"id": null`), and
  errors without traceback `data` (the traceback goes to the log);
- our outgoing requests kept apart from the peer's incoming ones, so equal
  ids from the two sides never collide, and late replies to abandoned
  requests are dropped (W6); a request may have a deadline, after which it is
  withdrawn with `$/cancel_request` and fails with `PeerTimedOut`;
- a line that cannot be read (not UTF-8, not JSON) is answered -32700 with a
  null id, the only id JSON-RPC 2.0 allows when none can be read (Zed's Rust
  SDK does the same), its first bytes are logged, and it fails nothing else:
  it may have been an answer to one of our requests, which then ends at its
  deadline;
- `$/cancel_request` answered with -32800 by cancelling the handler's scope (W7);
- `after_response(callback)`: a request handler schedules work for right after
  its successful response is written (notifications about a session the peer
  learns of from that very response).

Logs name methods and ids only: params and results carry file contents and
possibly credentials.

One module past 600 lines on purpose: requests in, requests out, their
cancellation and their ids are one bookkeeping that must not drift apart;
the envelope checks and the line reader are their own modules.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

import anyio
import attrs

from jsonbounds import MAX_JSON_DEPTH, TOO_DEEP, OverLongLine, nesting_exceeds
from protocol import methods
from protocol._envelope import (
    ABSENT,
    Batch,
    Dropped,
    ErrorResponse,
    Message,
    Notification,
    Rejected,
    Request,
    RequestId,
    Response,
    oversized_line,
    parse_line,
)
from protocol.converter import structure_error_message
from protocol.errors import (
    AcpError,
    ConnectionClosed,
    ConnectionNotStarted,
    InternalError,
    InvalidParams,
    MessageTooDeep,
    MethodNotFound,
    ParseError,
    PeerDisconnected,
    PeerTimedOut,
    RemoteProtocolError,
    RequestCancelled,
    UnstableNotEnabled,
    WrongMethod,
)
from protocol.methods import MessageKind, MethodSpec, Side

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from cattrs import Converter

__all__ = (
    "AcpProtocol",
    "AgentSideProtocol",
    "ClientSideProtocol",
    "Handler",
    "MethodTable",
    "Writer",
)

logger = logging.getLogger(__name__)

#: A handler takes the structured params (plain JSON for `_` extension
#: methods) and returns the result object; `async def` handlers run concurrently.
Handler = Callable[[Any], Any]

_EXTENSION_PREFIX: Final = "_"
#: How many abandoned request ids are remembered (to drop their late answers quietly).
_MAX_ABANDONED: Final = 1024
#: How much of a line that cannot be read is logged.
_LOGGED_BYTES: Final = 200

#: The callbacks the running request handler scheduled for after its response.
_AFTER_RESPONSE: contextvars.ContextVar[list[Callable[[], None]]] = contextvars.ContextVar(
    "acp_after_response"
)


@attrs.frozen
class _Route:
    """One registered handler and what it serves."""

    method: str
    kind: MessageKind
    #: None for `_` extension methods, whose params and results are plain JSON.
    spec: MethodSpec | None
    handler: Handler


class MethodTable(Protocol):
    """A protocol version's method table: `protocol.methods`, `protocol.v2.methods`."""

    @property
    def CANCEL_REQUEST(self) -> str: ...
    @property
    def REQUESTS(self) -> Mapping[str, MethodSpec]: ...
    @property
    def NOTIFICATIONS(self) -> Mapping[str, MethodSpec]: ...


class Writer(Protocol):
    """Where whole lines go: `write` takes one message's JSON, without the newline."""

    def write(self, data: bytes) -> None: ...


class _NotificationKey:
    """A private key for a running notification handler in the table of running ones."""


#: Receives a handler's outcome: its result, its exception, or cancelled.
_Callback = Callable[[Future[Any]], None]


class AcpProtocol:
    """One end of an ACP connection: routes, typed payloads, error replies, requests out."""

    #: The sides whose methods this end handles.
    SERVES: ClassVar[frozenset[Side]]
    #: The side the peer is; we send it its methods.
    PEER: ClassVar[Side]
    #: Outgoing ids are `<prefix><n>`, or plain integers when None.
    ID_PREFIX: ClassVar[str | None]

    def __init__(self, converter: Converter) -> None:
        self._converter = converter
        #: The protocol version's method table (v1's unless `use_methods` chose another).
        self._methods: MethodTable = methods
        #: Called with each incoming request's method and raw params before it is routed
        #: (`on_request`): where a version is chosen at `initialize`.
        self._before_request: Callable[[str, Any], None] | None = None
        #: Whether a batch line is served (v2) or refused (v1).
        self._batches = False
        #: Where lines go (`set_writer`); None until the connection starts.
        self.writer: Writer | None = None
        #: Where async handlers run (`set_task_group`): the connection's task group.
        self._task_group: TaskGroup | None = None
        #: The cancel scope of each async handler still running (the peer's requests by
        #: id, our notification handlers by a private key); its task is the group's.
        self._running: dict[Any, anyio.CancelScope] = {}
        #: Set whenever no async handler runs (`input_ended` waits for it).
        self._idle = asyncio.Event()
        self._idle.set()
        #: Whether unstable methods may be served or sent; set by the connection.
        self.unstable = False
        self._routes: dict[tuple[MessageKind, str], _Route] = {}
        #: Our requests to the peer, by id, awaiting its answer.
        self._pending: dict[RequestId, Future[Any]] = {}
        #: Ids of our requests whose caller gave up: their late answers are dropped quietly.
        self._abandoned: set[RequestId] = set()
        self._ids = itertools.count(1)
        self._input_ended = False
        self._closed = False

    @property
    def converter(self) -> Converter:
        """The cattrs converter for ACP payloads."""
        return self._converter

    def set_writer(self, writer: Writer, *, include_headers: bool = False) -> None:
        """Send every message as one line through `writer`. ACP frames by newline:
        `include_headers` (LSP's Content-Length framing) must stay false."""
        if include_headers:
            raise ValueError("ACP lines are newline-delimited; there are no headers")
        self.writer = writer

    def set_task_group(self, task_group: TaskGroup) -> None:
        """Run `async def` handlers as tasks of `task_group`: the connection's, which
        waits for them before it ends. Until it is set, a message for an async
        handler raises `ConnectionNotStarted`."""
        self._task_group = task_group

    def use_methods(self, table: MethodTable, *, batches: bool = False) -> None:
        """Serve and send the methods of `table` (a version's generated method module, as
        `protocol.v2.methods`) from now on; the routes registered so far are dropped.
        `batches`: take JSON-RPC batches (v2; v1 has none), each entry served alone."""
        self._methods = table
        self._batches = batches
        self._routes.clear()

    def on_request(self, hook: Callable[[str, Any], None] | None) -> None:
        """Call `hook(method, raw_params)` for each incoming request before it is routed
        (None: no more); it may `use_methods` and register the routes that serve it."""
        self._before_request = hook

    # -- registration --------------------------------------------------------

    def register(self, method: str, handler: Handler, *, kind: MessageKind | None = None) -> None:
        """Route `method` to `handler` (for both kinds of an extension method unless `kind`)."""
        if method == self._methods.CANCEL_REQUEST:
            raise WrongMethod(f"{method} is handled by the connection itself")
        for route_kind, spec in self._table_entries(method, kind):
            if spec is not None:
                if spec.side not in self.SERVES:
                    raise WrongMethod(
                        f"{method} is handled by the {spec.side.value}, "
                        f"not by this {'/'.join(sorted(s.value for s in self.SERVES))} side"
                    )
                if not spec.stable and not self.unstable:
                    raise UnstableNotEnabled(method)
            if (route_kind, method) in self._routes:
                raise WrongMethod(f"a {route_kind.value} handler for {method} exists already")
            self._routes[(route_kind, method)] = _Route(method, route_kind, spec, handler)

    def _table_entries(
        self, method: str, kind: MessageKind | None
    ) -> list[tuple[MessageKind, MethodSpec | None]]:
        if method.startswith(_EXTENSION_PREFIX):
            kinds = [kind] if kind is not None else list(MessageKind)
            return [(k, None) for k in kinds]
        entries: list[tuple[MessageKind, MethodSpec | None]] = []
        table = self._methods
        if method in table.REQUESTS and kind in (None, MessageKind.REQUEST):
            entries.append((MessageKind.REQUEST, table.REQUESTS[method]))
        if method in table.NOTIFICATIONS and kind in (None, MessageKind.NOTIFICATION):
            entries.append((MessageKind.NOTIFICATION, table.NOTIFICATIONS[method]))
        if not entries:
            what = f"an ACP {kind.value}" if kind is not None else "an ACP method"
            raise WrongMethod(f"{method} is not {what}; extension methods start with '_'")
        if len(entries) > 1:
            raise WrongMethod(f"{method} is both a request and a notification; pass kind=")
        return entries

    # -- incoming ------------------------------------------------------------

    def receive_line(self, line: bytes | bytearray | OverLongLine) -> None:
        """Handle one line from the peer: dispatch it, or answer why it is no message.

        An `OverLongLine` (a line the reader skipped as too long) is answered
        as an invalid request with a null id.
        """
        if isinstance(line, OverLongLine):
            message: Message | Batch | Rejected | Dropped = oversized_line(
                line.size_bytes, line.limit_bytes
            )
        else:
            message = parse_line(line, batches=self._batches)
        if isinstance(message, Batch):
            # Each entry as a line of its own: answered one by one (none is ever sent as a
            # batch by us); a notification-only batch gets no reply.
            for entry in message.entries:
                self._receive_message(entry, line)
            return
        self._receive_message(message, line)

    def _receive_message(
        self, message: Message | Rejected | Dropped, line: bytes | bytearray | OverLongLine
    ) -> None:
        context = contextvars.copy_context()
        match message:
            case Request(msg_id, method, params):
                context.run(self._receive_request, msg_id, method, params)
            case Notification(method, params):
                context.run(self._receive_notification, method, params)
            case Response(msg_id, result):
                self._receive_response(msg_id, result, None)
            case ErrorResponse(msg_id, error):
                self._receive_response(msg_id, None, error)
            case Rejected(msg_id, error):
                if isinstance(error, ParseError) and not isinstance(line, OverLongLine):
                    logger.warning(
                        "Could not read a line from the peer (%s); its first %d bytes: %r",
                        error.message,
                        _LOGGED_BYTES,
                        bytes(line[:_LOGGED_BYTES]),
                    )
                else:
                    logger.warning("Rejected a line from the peer: %s", error.message)
                self._send_error(msg_id, error)
            case Dropped(method, reason):
                logger.warning("Dropped notification %r from the peer: %s", method, reason)

    @property
    def running_handlers(self) -> int:
        """How many async handlers (requests and notifications) are running now."""
        return len(self._running)

    def _receive_request(self, msg_id: RequestId, method: str, params: Any) -> None:
        if self._before_request is not None:
            self._before_request(method, params)
        route = self._routes.get((MessageKind.REQUEST, method))
        if route is None:
            logger.info("No handler for request %r (id %r)", method, msg_id)
            self._send_error(msg_id, MethodNotFound(f"Method not found: {method}"))
            return
        if msg_id in self._running:
            logger.warning("The peer reused id %r while that request is still running", msg_id)
        # Each request runs in its own copied context (see `receive_line`), so the
        # handler's task, and only it, sees this list.
        after: list[Callable[[], None]] = []
        _AFTER_RESPONSE.set(after)
        self._execute_handler(
            msg_id,
            self._wrap(route),
            callback=partial(self._answer, msg_id=msg_id, method=method, after=after),
            args=(params,),
        )

    def _receive_notification(self, method: str, params: Any) -> None:
        if method == self._methods.CANCEL_REQUEST:
            self._cancel_incoming(params)
            return
        route = self._routes.get((MessageKind.NOTIFICATION, method))
        if route is None:
            # Unknown notifications are ignored (ACP §2); never answered.
            logger.debug("Ignoring notification %r", method)
            return
        key = _NotificationKey()
        self._execute_handler(
            key,
            self._wrap(route),
            callback=partial(self._notification_done, method=method),
            args=(params,),
        )

    def _execute_handler(
        self,
        key: Any,
        handler: Callable[[Any], Any],
        *,
        callback: _Callback,
        args: tuple[Any, ...],
    ) -> None:
        """Run `handler(*args)`: an async one as a task of the connection's group, in a
        cancel scope kept in the running table under `key` until it ends; a plain one
        now. `callback` gets the outcome either way."""
        if inspect.iscoroutinefunction(handler):
            if self._task_group is None:
                raise ConnectionNotStarted()
            scope = anyio.CancelScope()
            self._running[key] = scope
            self._idle.clear()
            self._task_group.start_soon(self._run_handler, key, scope, handler, args, callback)
            return
        done: Future[Any] = Future()
        try:
            done.set_result(handler(*args))
        except Exception as exc:
            done.set_exception(exc)
        callback(done)

    async def _run_handler(
        self,
        key: Any,
        scope: anyio.CancelScope,
        handler: Callable[..., Awaitable[Any]],
        args: tuple[Any, ...],
        callback: _Callback,
    ) -> None:
        """One async handler's task: `callback` gets its outcome however it ends (its
        scope cancelled by `$/cancel_request` or the end of input, the group's by the
        connection's end: cancelled). Only a cancellation from outside leaves it."""
        outcome: Future[Any] = Future()
        try:
            with scope:
                # Cancelled before it began (a `$/cancel_request` right behind it): it
                # does not begin at all.
                if not scope.cancel_called:
                    outcome.set_result(await handler(*args))
        except Exception as exc:
            outcome.set_exception(exc)
        finally:
            if self._running.get(key) is scope:
                del self._running[key]
                if not self._running:
                    self._idle.set()
            if not outcome.done():
                outcome.cancel()
            try:
                callback(outcome)
            except Exception:
                logger.exception("Answering a handler's outcome failed")

    def _wrap(self, route: _Route) -> Callable[[Any], Any]:
        """The handler taking raw params and returning the wire result, async if it is."""
        if inspect.iscoroutinefunction(route.handler):

            async def call_async(raw_params: Any) -> Any:
                result = await route.handler(self._structure_params(route, raw_params))
                return self._result_to_wire(route, result)

            return call_async

        def call(raw_params: Any) -> Any:
            result = route.handler(self._structure_params(route, raw_params))
            if inspect.isawaitable(result):
                raise TypeError(f"the handler for {route.method} returned an awaitable")
            return self._result_to_wire(route, result)

        return call

    def _structure_params(self, route: _Route, raw_params: Any) -> Any:
        if route.spec is None:
            return None if raw_params is ABSENT else raw_params
        # JSON-RPC lets params be omitted; ACP params are objects, so that is `{}`.
        if raw_params is ABSENT or raw_params is None:
            raw_params = {}
        if not isinstance(raw_params, dict):
            raise InvalidParams("Invalid params: params must be an object")
        try:
            return self._converter.structure(raw_params, route.spec.params_type)
        except Exception as exc:
            raise InvalidParams(f"Invalid params: {structure_error_message(exc)}") from exc

    def _result_to_wire(self, route: _Route, result: Any) -> Any:
        if route.kind is MessageKind.NOTIFICATION:
            return None
        if route.spec is None:
            return result
        expected = route.spec.result_type
        if not _isinstance(result, expected):
            raise TypeError(
                f"the handler for {route.method} returned {type(result).__name__}, "
                f"not {getattr(expected, '__name__', expected)}"
            )
        try:
            wire = self._converter.unstructure(result)
        except RecursionError:
            raise MessageTooDeep(f"the result of {route.method} is {TOO_DEEP}") from None
        if nesting_exceeds(wire, MAX_JSON_DEPTH - 2):
            raise MessageTooDeep(f"the result of {route.method} is {TOO_DEEP}")
        return wire

    def after_response(self, callback: Callable[[], None]) -> None:
        """Call `callback` right after the running request's successful response is written.

        Only from within a request handler (`RuntimeError` otherwise). Callbacks
        run in the order given, in the event loop's thread, before any other
        message is handled; none runs when the request fails or is cancelled.
        """
        after = _AFTER_RESPONSE.get(None)
        if after is None:
            raise RuntimeError("after_response() is only for request handlers")
        after.append(callback)

    def _answer(
        self,
        future: Future[Any],
        *,
        msg_id: RequestId,
        method: str,
        after: list[Callable[[], None]] | None = None,
    ) -> None:
        """Send the handler's outcome as the response to request `msg_id`."""
        if future.cancelled():
            logger.info("Request %r (id %r) was cancelled", method, msg_id)
            self._send_error(msg_id, RequestCancelled())
            return
        exc = future.exception()
        if exc is not None:
            self._send_error(msg_id, self._to_wire_error(exc, method, msg_id))
            return
        if not self._send_result(msg_id, future.result()):
            return
        for callback in after or ():
            try:
                callback()
            except Exception:
                logger.exception(
                    "A callback after the response to %r (id %r) failed", method, msg_id
                )

    def _notification_done(self, future: Future[Any], *, method: str) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if isinstance(exc, AcpError):
            logger.warning("Notification %r was not handled: %s", method, exc.message)
        elif exc is not None:
            logger.error("The handler for notification %r failed", method, exc_info=exc)

    @staticmethod
    def _to_wire_error(exc: BaseException, method: str, msg_id: RequestId) -> AcpError:
        """The error to answer with; only `AcpError`s reach the wire as themselves."""
        if isinstance(exc, AcpError):
            logger.info("Request %r (id %r) answered with %s", method, msg_id, exc.code)
            return exc
        logger.error("The handler for %r (id %r) failed", method, msg_id, exc_info=exc)
        return InternalError("Internal error; see the agent log for details")

    def _cancel_incoming(self, raw_params: Any) -> None:
        """`$/cancel_request`: cancel that handler; its answer becomes -32800."""
        spec = self._methods.NOTIFICATIONS[self._methods.CANCEL_REQUEST]
        try:
            params = self._converter.structure(
                raw_params if isinstance(raw_params, dict) else {}, spec.params_type
            )
        except Exception as exc:
            logger.warning("Ignoring %s: %s", spec.name, structure_error_message(exc))
            return
        target = self._running.get(params.request_id)
        if target is None:
            logger.debug("Nothing to cancel for request id %r", params.request_id)
            return
        target.cancel()

    def _receive_response(self, msg_id: RequestId, result: Any, error: AcpError | None) -> None:
        future = self._pending.pop(msg_id, None)
        if future is None:
            if msg_id in self._abandoned:
                self._abandoned.discard(msg_id)
                logger.debug("Dropped the late answer to abandoned request %r (W6)", msg_id)
            else:
                logger.warning("Response to unknown request id %r", msg_id)
            return
        if future.done():
            return  # the caller gave up; a late answer has nowhere to go (W6)
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    # -- outgoing --------------------------------------------------------------

    def notify(self, method: str, params: Any | None = None) -> None:
        """Send notification `method` to the peer (typed params, plain JSON for extensions)."""
        self.notify_encoded(self.encode_notification(method, params))

    def encode_notification(self, method: str, params: Any | None = None) -> bytes:
        """The line `notify` would write, checked as it checks it, for a caller that writes
        many at once (`notify_encoded`): a replay's thousands of updates in a few writes."""
        spec = self._outgoing_spec(method, MessageKind.NOTIFICATION)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        message["params"] = self._params_to_wire(spec, params)
        return _encode(message)

    def notify_encoded(self, lines: bytes) -> None:
        """Send notifications already encoded (compact JSON, one message per line, no
        final newline) in one write; `ConnectionClosed` once the peer is gone.

        For the encoders that write a known shape from a template (`protocol.text_chunks`);
        everything else goes through `notify`, which checks the method and the params.
        """
        if self.writer is None:
            raise ConnectionNotStarted()
        if self._closed or not self._write(lines):
            raise ConnectionClosed()

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any:
        """Send request `method`, await the answer and return it structured.

        Raises the `AcpError` the peer answered with, `RemoteProtocolError` for
        a result that does not fit, `PeerDisconnected` if the peer goes away,
        `PeerTimedOut` when `timeout_s` (None: no deadline) passes first. If the
        caller is cancelled or the deadline passes before the answer came, the
        peer is sent `$/cancel_request` (never for a request it already
        answered) and a late answer is dropped quietly.
        """
        msg_id, future = self._send_request(method, params)
        try:
            # The shield keeps a cancelled caller from cancelling the future the
            # late answer will be delivered to (W6).
            async with asyncio.timeout(timeout_s):
                raw = await asyncio.shield(asyncio.wrap_future(future))
        except TimeoutError:
            if not future.done():
                self._abandon(msg_id)
                logger.warning("No answer to %r (id %r) within %g s", method, msg_id, timeout_s)
                raise PeerTimedOut(method, timeout_s or 0.0) from None
            raw = future.result()  # answered just as the deadline passed: the answer counts
        except asyncio.CancelledError:
            if not future.done():  # answered already: there is nothing left to cancel
                self._abandon(msg_id)
            raise
        spec = self._methods.REQUESTS.get(method)
        if spec is None:
            return raw
        try:
            # `{}` and `null` both answer "nothing to report" (fs/write_text_file).
            return self._converter.structure({} if raw is None else raw, spec.result_type)
        except Exception as exc:
            raise RemoteProtocolError(
                f"Invalid result for {method}: {structure_error_message(exc)}"
            ) from exc

    def _send_request(self, method: str, params: Any) -> tuple[RequestId, Future[Any]]:
        spec = self._outgoing_spec(method, MessageKind.REQUEST)
        if self._input_ended:
            raise PeerDisconnected("the peer has closed its side and cannot answer")
        n = next(self._ids)
        msg_id: RequestId = n if self.ID_PREFIX is None else f"{self.ID_PREFIX}{n}"
        message = {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": method,
            "params": self._params_to_wire(spec, params),
        }
        future: Future[Any] = Future()
        self._pending[msg_id] = future
        try:
            self._send_or_raise(message)
        except BaseException:
            del self._pending[msg_id]
            raise
        return msg_id, future

    def _abandon(self, msg_id: RequestId) -> None:
        """Give up on request `msg_id`: a late answer is dropped, never set on a future
        nobody awaits, and the peer is told it may stop working on it."""
        self._pending.pop(msg_id, None)
        self._remember_abandoned(msg_id)
        self._tell_peer_cancelled(msg_id)

    def _remember_abandoned(self, msg_id: RequestId) -> None:
        if len(self._abandoned) >= _MAX_ABANDONED:
            self._abandoned.pop()  # any one: a peer that never answers must not grow this
        self._abandoned.add(msg_id)

    def _tell_peer_cancelled(self, msg_id: RequestId) -> None:
        if self._closed or self._input_ended:
            return
        spec = self._methods.NOTIFICATIONS[self._methods.CANCEL_REQUEST]
        try:
            self.notify(spec.name, spec.params_type(request_id=msg_id))
        except (ConnectionClosed, OSError):
            logger.debug("Could not send %s for id %r", spec.name, msg_id)

    def _outgoing_spec(self, method: str, kind: MessageKind) -> MethodSpec | None:
        if method.startswith(_EXTENSION_PREFIX):
            return None
        table = (
            self._methods.REQUESTS if kind is MessageKind.REQUEST else self._methods.NOTIFICATIONS
        )
        spec = table.get(method)
        if spec is None:
            raise WrongMethod(f"{method} is not an ACP {kind.value}; extensions start with '_'")
        if spec.side not in (self.PEER, Side.PROTOCOL):
            raise WrongMethod(f"{method} is handled by the {spec.side.value}, not by the peer")
        if not spec.stable and not self.unstable:
            raise UnstableNotEnabled(method)
        return spec

    def _params_to_wire(self, spec: MethodSpec | None, params: Any) -> Any:
        if spec is None:
            wire = params
        else:
            if not _isinstance(params, spec.params_type):
                raise TypeError(
                    f"{spec.name} takes "
                    f"{getattr(spec.params_type, '__name__', spec.params_type)}, "
                    f"not {type(params).__name__}"
                )
            try:
                wire = self._converter.unstructure(params)
            except RecursionError:
                raise MessageTooDeep(f"{spec.name}: params {TOO_DEEP}") from None
        # The envelope and params add two levels to what the params nest.
        if nesting_exceeds(wire, MAX_JSON_DEPTH - 2):
            raise MessageTooDeep(f"params {TOO_DEEP}")
        return wire

    # -- writing ------------------------------------------------------------------

    def _send_result(self, msg_id: RequestId, result: Any) -> bool:
        """Write the result; False if it could not be (an error went instead, or none)."""
        try:
            body = _encode({"jsonrpc": "2.0", "id": msg_id, "result": result})
        except (TypeError, ValueError) as exc:
            logger.error("The result for id %r is not JSON", msg_id, exc_info=exc)
            self._send_error(msg_id, InternalError("Internal error; see the agent log for details"))
            return False
        return self._write(body)

    def _send_error(self, msg_id: RequestId, error: AcpError) -> None:
        try:
            body = _encode({"jsonrpc": "2.0", "id": msg_id, "error": error.to_wire()})
        except (TypeError, ValueError):
            plain = AcpError(error.message, code=error.code)
            body = _encode({"jsonrpc": "2.0", "id": msg_id, "error": plain.to_wire()})
        self._write(body)

    def _send_or_raise(self, message: dict[str, Any]) -> None:
        self.notify_encoded(_encode(message))

    def _write(self, body: bytes) -> bool:
        """Write one line; False (and the connection closed) if the peer is gone."""
        if self._closed or self.writer is None:
            return False
        try:
            self.writer.write(body)
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            logger.info("The peer stopped reading (%s); closing the connection", exc)
            self._closed = True
            return False
        return True

    # -- the end ----------------------------------------------------------------

    async def input_ended(self, *, grace_s: float, cancel_handlers: bool = True) -> None:
        """The peer's stream ended: fail our pending requests, cancel running handlers.

        Cancelled requests are still answered (-32800) while the peer reads;
        handlers get `grace_s` seconds to unwind before we stop waiting (the
        connection's task group still waits for them when it ends). With
        `cancel_handlers=False` they run on (`wait_handlers` waits for them): a
        server whose client left keeps the work it accepted.
        """
        self._input_ended = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(PeerDisconnected())
        self._pending.clear()
        if not cancel_handlers:
            return
        for scope in list(self._running.values()):
            scope.cancel()
        with anyio.move_on_after(grace_s):
            await self._idle.wait()

    async def wait_handlers(self) -> None:
        """Wait until every async handler running now (and any it leads to) has ended."""
        while self._running:
            await self._idle.wait()

    def close(self) -> None:
        """Stop sending: later `notify`/`request` calls raise `ConnectionClosed`."""
        self._closed = True


class AgentSideProtocol(AcpProtocol):
    """The agent's end: serves agent methods, calls the client's; ids `agent-<n>`."""

    SERVES = frozenset({Side.AGENT})
    PEER = Side.CLIENT
    ID_PREFIX = "agent-"


class ClientSideProtocol(AcpProtocol):
    """The client's end: serves client methods, calls the agent's; integer ids."""

    SERVES = frozenset({Side.CLIENT})
    PEER = Side.AGENT
    ID_PREFIX = None


def _isinstance(value: Any, expected: Any) -> bool:
    """isinstance that accepts union aliases and says yes to what it cannot check."""
    try:
        return isinstance(value, expected)
    except TypeError:
        return True


def _encode(message: Any) -> bytes:
    """Compact UTF-8 JSON; never a raw newline, NaN or a lone surrogate on the wire."""
    try:
        text = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot be UTF-8; the escaped form can.
        return json.dumps(message, allow_nan=False, separators=(",", ":")).encode("ascii")
