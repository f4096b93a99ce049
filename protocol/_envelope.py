"""Read one ndjson line as a JSON-RPC 2.0 message, or say exactly why it is not one.

Only the top-level object is examined here (a JSON `object_hook` would also
turn nested dicts that happen to carry `"jsonrpc"` into messages, W5); the
params stay plain JSON until the dispatcher structures them for their method.
ACP v1 has no batches, so a JSON array is an invalid request. A message
nested deeper than `jsonbounds.MAX_JSON_DEPTH` is refused here, before
any recursive code walks it: a request is answered -32602, a response fails
the request it answers, and a notification is dropped (it is never answered).
"""

from __future__ import annotations

import json
from typing import Any, Final, TypeAlias

import attrs

from jsonbounds import MAX_JSON_DEPTH, TOO_DEEP, nesting_exceeds
from protocol.errors import AcpError, InvalidParams, InvalidRequest, ParseError

__all__ = (
    "ABSENT",
    "Batch",
    "Dropped",
    "ErrorResponse",
    "Message",
    "Notification",
    "Rejected",
    "Request",
    "RequestId",
    "Response",
    "oversized_line",
    "parse_line",
    "request_id_or_none",
)

#: JSON-RPC ids are integers or strings (the schema also allows null).
RequestId: TypeAlias = int | str | None


class _Absent:
    """The `params` member was not there (distinct from an explicit null)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()


@attrs.frozen
class Request:
    """A call that expects exactly one response with the same id."""

    id: RequestId
    method: str
    params: Any


@attrs.frozen
class Notification:
    """A call that must never be answered."""

    method: str
    params: Any


@attrs.frozen
class Response:
    """A successful answer to a request we sent."""

    id: RequestId
    result: Any


@attrs.frozen
class ErrorResponse:
    """An error answer to a request we sent (`id` is null for errors about unreadable lines)."""

    id: RequestId
    error: AcpError


@attrs.frozen
class Rejected:
    """A line that is no message; answer `error` to `id` (null when it could not be read)."""

    id: RequestId
    error: AcpError


@attrs.frozen
class Dropped:
    """A notification that cannot be taken (too deep); it is logged, never answered."""

    method: str
    reason: str


Message: TypeAlias = Request | Notification | Response | ErrorResponse


@attrs.frozen
class Batch:
    """A JSON-RPC batch (ACP v2 only): each entry classified as a line of its own would be."""

    entries: tuple[Message | Rejected | Dropped, ...]


def parse_line(
    line: bytes | bytearray, *, batches: bool = False
) -> Message | Batch | Rejected | Dropped:
    """Classify one line (without its newline) as a message, or as a rejection to answer;
    with `batches` (v2), an array is a `Batch` (an empty one is rejected whole)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(None, ParseError(f"Parse error: invalid UTF-8 at byte {exc.start}"))
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return Rejected(None, InvalidRequest(f"Invalid request: the message is {TOO_DEEP}"))
    except ValueError as exc:
        return Rejected(None, ParseError(f"Parse error: {_first_line(exc)}"))
    if isinstance(value, list):
        if not batches:
            return Rejected(
                None, InvalidRequest("Invalid request: batches are not supported in ACP v1")
            )
        if not value:
            return Rejected(None, InvalidRequest("Invalid request: an empty batch"))
        return Batch(tuple(_entry(item) for item in value))
    return _entry(value)


def _entry(value: Any) -> Message | Rejected | Dropped:
    """One decoded message (a line's, or a batch entry's), classified."""
    if not isinstance(value, dict):
        return Rejected(None, InvalidRequest("Invalid request: a message must be a JSON object"))
    message = _classify(value)
    if not isinstance(message, Rejected) and nesting_exceeds(value, MAX_JSON_DEPTH):
        return _too_deep(message)
    return message


def _too_deep(message: Message) -> Rejected | Dropped | ErrorResponse:
    match message:
        case Request(msg_id, method, _):
            return Rejected(msg_id, InvalidParams(f"Invalid params: {method}: {TOO_DEEP}"))
        case Notification(method, _):
            return Dropped(method, f"the notification is {TOO_DEEP}")
        case Response(msg_id, _) | ErrorResponse(msg_id, _):
            return ErrorResponse(
                msg_id, InvalidRequest(f"Invalid request: the answer is {TOO_DEEP}")
            )


def oversized_line(size_bytes: int, limit_bytes: int) -> Rejected:
    """The rejection of a line too long to read (it was skipped unread, so no id is known)."""
    return Rejected(
        None,
        InvalidRequest(
            f"Invalid request: the line is {size_bytes} bytes long, "
            f"over the limit of {limit_bytes} bytes"
        ),
    )


def request_id_or_none(value: Any) -> tuple[bool, RequestId]:
    """Whether `value` is a valid request id, and the id itself (None when it is not)."""
    if value is None or isinstance(value, str):
        return True, value
    # bool is an int subclass in Python, but `true` is no id.
    if isinstance(value, int) and not isinstance(value, bool):
        return True, value
    return False, None


def _classify(obj: dict[str, Any]) -> Message | Rejected:
    has_id = "id" in obj
    id_ok, msg_id = request_id_or_none(obj.get("id"))

    def reject(reason: str) -> Rejected:
        return Rejected(msg_id, InvalidRequest(f"Invalid request: {reason}"))

    if obj.get("jsonrpc") != "2.0":
        return reject('"jsonrpc" must be "2.0"')
    if has_id and not id_ok:
        return reject('"id" must be an integer, a string or null')

    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str):
            return reject('"method" must be a string')
        params = obj.get("params", ABSENT)
        if params is not ABSENT and params is not None and not isinstance(params, dict | list):
            return reject('"params" must be an object or an array')
        if has_id:
            return Request(msg_id, method, params)
        return Notification(method, params)

    if not has_id:
        return reject('a message needs "method", or "id" with "result" or "error"')
    if ("result" in obj) == ("error" in obj):
        return reject('a response carries exactly one of "result" and "error"')
    if "result" in obj:
        return Response(msg_id, obj["result"])
    return ErrorResponse(msg_id, _error_from_wire(obj["error"]))


def _error_from_wire(error: Any) -> AcpError:
    """The peer's error object as an `AcpError`; a malformed one still fails the request."""
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        if isinstance(code, int) and not isinstance(code, bool) and isinstance(message, str):
            return AcpError.from_wire(code, message, error.get("data"))
    return AcpError(f"Malformed error response: {json.dumps(error)[:200]}", code=-32603)


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; JSON does not.
    raise ValueError(f"{name} is not valid JSON")


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
