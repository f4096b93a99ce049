"""How deep a peer's JSON may nest, checked where a line enters (the bound itself:
`tests/jsonbounds`)."""

from __future__ import annotations

import json

from protocol._envelope import Dropped, ErrorResponse, Rejected, Request, parse_line
from protocol.errors import InvalidParams, InvalidRequest
from protocol.limits import MAX_JSON_DEPTH


def nested(depth: int) -> object:
    """`[[...]]`, `depth` levels, built without recursion."""
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def line(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode()


def test_a_request_at_the_limit_is_taken():
    params = {"x": nested(MAX_JSON_DEPTH - 2)}
    message = parse_line(line({"jsonrpc": "2.0", "id": 1, "method": "m", "params": params}))
    assert isinstance(message, Request)


def test_a_request_past_the_limit_is_answered_invalid_params_naming_it():
    params = {"x": nested(MAX_JSON_DEPTH - 1)}
    message = parse_line(line({"jsonrpc": "2.0", "id": 7, "method": "m", "params": params}))
    assert isinstance(message, Rejected)
    assert message.id == 7
    assert isinstance(message.error, InvalidParams)
    assert "nested deeper than 100 levels" in message.error.message


def test_a_notification_past_the_limit_is_dropped_not_answered():
    params = {"x": nested(MAX_JSON_DEPTH)}
    message = parse_line(line({"jsonrpc": "2.0", "method": "session/cancel", "params": params}))
    assert isinstance(message, Dropped)
    assert message.method == "session/cancel"


def test_a_response_past_the_limit_fails_the_request_it_answers():
    message = parse_line(line({"jsonrpc": "2.0", "id": 3, "result": nested(MAX_JSON_DEPTH)}))
    assert isinstance(message, ErrorResponse)
    assert message.id == 3
    assert isinstance(message.error, InvalidRequest)


def test_a_line_too_deep_for_the_json_parser_is_an_invalid_request():
    message = parse_line(b"[" * 200_000 + b"]" * 200_000)
    assert isinstance(message, Rejected)
    assert message.id is None
    assert isinstance(message.error, InvalidRequest)
