"""A fake model provider: a real HTTP server on 127.0.0.1 that plays scripted exchanges.

Each request takes the next scripted `Exchange` of its queue (one queue,
unless a `route` names a queue per request body: how a test scripts lines of
work that ask concurrently): a status, headers and a body
sent as HTTP chunks exactly as given (so a test chooses where the bytes
split, and how long to pause between them). A streaming exchange can end
three ways: properly, by closing the socket mid-body (`truncate`), or by
holding the response open until the client goes away (`hold`), which is
how a test sees that cancelling the consumer closed the connection. Every
request is recorded (method, path, headers, body) for golden tests. With
`body_limit` set, a request whose body is longer is refused the way OpenAI
refuses a prompt over the model's context window (400,
`context_length_exceeded`), without taking an exchange.

GET requests (the models lists: `GET /v1/models` of both formats, Anthropic's
`GET /v1/models/{id}`) take no exchange from a queue: `serve_get(path, exchange)`
answers every GET of that path (its query ignored) the same way until changed, and
any other path is a 404 in OpenAI's error format; they are recorded too. A server
never given a GET route answers every GET 501, unrecorded, as a chat-only server
(and the http.server default) does.

The wire builders below write the OpenAI and Anthropic streaming formats
byte for byte as those APIs do: compact JSON, `data: ` lines, a blank line
after each event, `event: ` names for Anthropic.
"""

from __future__ import annotations

import contextlib
import http.server
import itertools
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

__all__ = (
    "SSE_HEADERS",
    "Chunk",
    "Exchange",
    "FakeProviderServer",
    "RecordedRequest",
    "RecordingSleep",
    "anthropic_event",
    "anthropic_model",
    "anthropic_model_list",
    "anthropic_stream",
    "anthropic_text_block",
    "closed_port",
    "json_error",
    "json_response",
    "openai_chunk",
    "openai_model_list",
    "openai_reply",
    "openai_responses_reply",
    "openai_responses_stream",
    "openai_stream",
    "openai_tool_calls",
    "split_at",
    "sse_data",
)

SSE_HEADERS: Mapping[str, str] = {"content-type": "text/event-stream; charset=utf-8"}
#: How long a held response waits for the client to leave before giving up.
HOLD_LIMIT_S = 10.0


@attrs.frozen
class Chunk:
    """Bytes sent as one HTTP chunk, after a pause."""

    data: bytes
    delay_s: float = 0.0


@attrs.frozen
class Exchange:
    """One scripted response.

    `chunks` are sent in order, each as its own HTTP chunk (`bytes` means no
    pause). With `truncate` the socket closes after them without ending the
    body; with `hold` the response stays open until the client disconnects.
    """

    status: int = 200
    headers: Mapping[str, str] = SSE_HEADERS
    chunks: Sequence[bytes | Chunk] = ()
    truncate: bool = False
    hold: bool = False


@attrs.frozen
class RecordedRequest:
    """A request as the server received it; header names are lower-case."""

    method: str
    path: str
    #: The client's port: equal ports mean the connection was reused.
    client_port: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class RecordingSleep:
    """A `RetryPolicy.sleep` that records each delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay_s: float) -> None:
        self.delays.append(delay_s)


class FakeProviderServer:
    """The server; use as a context manager, or `start()` and `close()`."""

    def __init__(self, route: Callable[[bytes], str] | None = None) -> None:
        """`route` names the queue a request body takes its exchange from (`add(queue=)`)."""
        self._route = route
        self._queues: dict[str, deque[Exchange | Callable[[Any], Exchange]]] = {}
        self._get_routes: dict[str, Exchange] = {}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.requests: list[RecordedRequest] = []
        #: Refuse request bodies longer than this as over the context window (None: never).
        self.body_limit: int | None = None
        #: How many requests `body_limit` refused.
        self.refused = 0
        #: Set when the client closed a connection the server was still writing or holding.
        self.disconnected = threading.Event()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, *exchanges: Exchange | Callable[[Any], Exchange], queue: str = "") -> None:
        """Queue responses for the next requests (of `queue`), in order.

        A callable is called with the request's JSON body when its turn comes, for
        a reply that depends on what the agent sent (an id a tool returned).
        """
        with self._lock:
            self._queues.setdefault(queue, deque()).extend(exchanges)

    def serve_get(self, path: str, exchange: Exchange) -> None:
        """Answer every GET of `path` (its query ignored) with `exchange`, until changed."""
        with self._lock:
            self._get_routes[path] = exchange

    def start(self) -> FakeProviderServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    def _next_exchange(self, body: bytes) -> Exchange:
        queue = "" if self._route is None else self._route(body)
        with self._lock:
            exchanges = self._queues.get(queue)
            exchange = exchanges.popleft() if exchanges else None
        if isinstance(exchange, Exchange):
            return exchange
        if exchange is not None:
            return exchange(json.loads(body))
        refusal = json.dumps({"error": {"message": "fake provider: no exchange scripted"}})
        return Exchange(
            status=418, headers={"content-type": "application/json"}, chunks=[refusal.encode()]
        )

    def _get_exchange(self, path: str) -> Exchange:
        with self._lock:
            exchange = self._get_routes.get(path.partition("?")[0])
        if exchange is not None:
            return exchange
        message = f"fake provider: no GET route for {path}"
        return json_error(404, {"error": {"message": message, "type": "invalid_request_error"}})

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # As providers' servers do: each event leaves when written. With Nagle's
            # algorithm an event written after the headers waits for their ACK, which a
            # client delays up to 40 ms on a kept-alive connection.
            disable_nagle_algorithm = True

            def _record(self, body: bytes) -> None:
                server.requests.append(
                    RecordedRequest(
                        method=self.command,
                        path=self.path,
                        client_port=self.client_address[1],
                        headers={name.lower(): value for name, value in self.headers.items()},
                        body=body,
                    )
                )

            def do_GET(self) -> None:
                if not server._get_routes:
                    self.send_error(501, f"Unsupported method ({self.command!r})")
                    return
                self._record(b"")
                try:
                    server._respond(self, server._get_exchange(self.path))
                except (BrokenPipeError, ConnectionResetError):
                    server.disconnected.set()
                    self.close_connection = True

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                self._record(body)
                try:
                    limit = server.body_limit
                    if limit is not None and len(body) > limit:
                        server.refused += 1
                        server._respond(self, _context_length_exceeded(len(body), limit))
                        return
                    server._respond(self, server._next_exchange(body))
                except (BrokenPipeError, ConnectionResetError):
                    server.disconnected.set()
                    self.close_connection = True

            def handle(self) -> None:
                # The client dropping a kept-alive connection is normal for HTTP/1.1.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().handle()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def _respond(self, handler: http.server.BaseHTTPRequestHandler, exchange: Exchange) -> None:
        handler.send_response(exchange.status)
        for name, value in exchange.headers.items():
            handler.send_header(name, value)
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        handler.wfile.flush()
        for chunk in exchange.chunks:
            data, delay_s = (
                (chunk, 0.0) if isinstance(chunk, bytes) else (chunk.data, chunk.delay_s)
            )
            if delay_s:
                time.sleep(delay_s)
            if data:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                handler.wfile.flush()
        if exchange.hold:
            self._hold_until_client_leaves(handler.connection)
            handler.close_connection = True
            return
        if exchange.truncate:
            handler.connection.shutdown(socket.SHUT_RDWR)
            handler.close_connection = True
            return
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    def _hold_until_client_leaves(self, connection: socket.socket) -> None:
        deadline = time.monotonic() + HOLD_LIMIT_S
        while not self._closing.is_set() and time.monotonic() < deadline:
            readable, _, _ = select.select([connection], [], [], 0.02)
            if readable and not connection.recv(1, socket.MSG_PEEK):
                self.disconnected.set()
                return


def _context_length_exceeded(size: int, limit: int) -> Exchange:
    message = (
        f"This model's maximum context length is {limit // 4} tokens. However, your messages "
        f"resulted in {size // 4} tokens. Please reduce the length of the messages."
    )
    body = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
            "param": "messages",
        }
    }
    return json_error(400, body)


def split_at(data: bytes, *offsets: int, delay_s: float = 0.0) -> list[bytes | Chunk]:
    """`data` cut at the given offsets, each piece sent after `delay_s`."""
    bounds = [0, *offsets, len(data)]
    return [Chunk(data[start:end], delay_s) for start, end in itertools.pairwise(bounds)]


def sse_data(payload: Any, event: str | None = None) -> bytes:
    """One server-sent event with compact JSON data (or a literal string)."""
    data = (
        payload
        if isinstance(payload, str)
        else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    )
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {data}\n\n".encode()


def json_error(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Exchange:
    """An error response with a JSON body."""
    return json_response(body, status=status, headers=headers)


def json_response(
    body: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> Exchange:
    """A response with a JSON body."""
    return Exchange(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        chunks=[json.dumps(body).encode()],
    )


# OpenAI Chat Completions


def openai_chunk(
    delta: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    *,
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A `chat.completion.chunk`; with `usage` and no delta it is the final usage chunk."""
    chunk: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "gpt-fake",
        "system_fingerprint": "fp_fake",
        "choices": [],
    }
    if delta is not None or finish_reason is not None:
        chunk["choices"] = [
            {
                "index": 0,
                "delta": dict(delta or {}),
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ]
    chunk["usage"] = dict(usage) if usage is not None else None
    return chunk


def openai_stream(*chunks: Mapping[str, Any] | bytes, done: bool = True) -> bytes:
    """The body of a streamed completion: each chunk as `data:`, then `data: [DONE]`."""
    body = b"".join(chunk if isinstance(chunk, bytes) else sse_data(chunk) for chunk in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def openai_model_list(*model_ids: str) -> Exchange:
    """`GET /v1/models` of an OpenAI-compatible server listing `model_ids`."""
    data = [
        {"id": model_id, "object": "model", "created": 1767225600, "owned_by": "fake"}
        for model_id in model_ids
    ]
    return json_response({"object": "list", "data": data})


# OpenAI Responses (what codex speaks with `wire_api = "responses"`)


def openai_responses_stream(*pieces: str, response_id: str = "resp_fake") -> list[bytes]:
    """The events of a streamed Responses reply: one assistant message in `pieces`, then
    `response.completed` with its usage; each event is one item (send each as a chunk)."""
    events: list[bytes] = []

    def event(event_type: str, **fields: Any) -> None:
        payload = {"type": event_type, "sequence_number": len(events), **fields}
        events.append(sse_data(payload, event=event_type))

    message = {"id": "msg_fake", "type": "message", "role": "assistant"}
    response = {"id": response_id, "object": "response", "model": "gpt-fake", "output": []}
    text = "".join(pieces)
    done = {
        **message,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    event("response.created", response={**response, "status": "in_progress"})
    event(
        "response.output_item.added",
        output_index=0,
        item={**message, "status": "in_progress", "content": []},
    )
    for piece in pieces:
        event(
            "response.output_text.delta",
            item_id=message["id"],
            output_index=0,
            content_index=0,
            delta=piece,
        )
    event("response.output_item.done", output_index=0, item=done)
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": len(pieces),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10 + len(pieces),
    }
    event(
        "response.completed",
        response={**response, "status": "completed", "output": [done], "usage": usage},
    )
    return events


def openai_responses_reply(*pieces: str) -> Exchange:
    """A streamed Responses reply of one message in `pieces`, each event its own chunk."""
    return Exchange(chunks=list(openai_responses_stream(*pieces)))


# Anthropic Messages


def anthropic_event(event_type: str, **fields: Any) -> bytes:
    """One Messages stream event: `event: <type>` and its JSON data."""
    return sse_data({"type": event_type, **fields}, event=event_type)


def anthropic_stream(*events: bytes) -> bytes:
    return b"".join(events)


def anthropic_text_block(index: int, *pieces: str) -> bytes:
    """A text content block streamed in `pieces`."""
    start = anthropic_event(
        "content_block_start", index=index, content_block={"type": "text", "text": ""}
    )
    deltas = b"".join(
        anthropic_event(
            "content_block_delta", index=index, delta={"type": "text_delta", "text": piece}
        )
        for piece in pieces
    )
    return start + deltas + anthropic_event("content_block_stop", index=index)


def _anthropic_model_info(model_id: str) -> dict[str, Any]:
    return {
        "type": "model",
        "id": model_id,
        "display_name": model_id.replace("-", " ").title(),
        "created_at": "2026-01-01T00:00:00Z",
    }


def anthropic_model(model_id: str) -> Exchange:
    """`GET /v1/models/{id}` of Anthropic: the model (an alias answers with its full id)."""
    return json_response(_anthropic_model_info(model_id))


def anthropic_model_list(*model_ids: str) -> Exchange:
    """`GET /v1/models` of Anthropic: one page listing `model_ids`."""
    return json_response(
        {
            "data": [_anthropic_model_info(model_id) for model_id in model_ids],
            "has_more": False,
            "first_id": model_ids[0] if model_ids else None,
            "last_id": model_ids[-1] if model_ids else None,
        }
    )


def openai_reply(text: str) -> Exchange:
    """A streamed OpenAI reply of one text chunk that ends the turn."""
    return Exchange(
        chunks=[openai_stream(openai_chunk({"content": text}), openai_chunk({}, "stop"))]
    )


def openai_tool_calls(*calls: tuple[str, str, Mapping[str, Any]]) -> Exchange:
    """A streamed OpenAI reply proposing `(call id, tool, arguments)` calls, each whole."""
    deltas = [
        {
            "index": i,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for i, (call_id, name, arguments) in enumerate(calls)
    ]
    return Exchange(
        chunks=[
            openai_stream(
                openai_chunk({"role": "assistant", "tool_calls": deltas}),
                openai_chunk({}, "tool_calls"),
            )
        ]
    )


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (it was just bound and released): where
    a test points a client that must fail to connect."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
