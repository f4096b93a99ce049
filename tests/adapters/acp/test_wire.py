"""Framing and bad input, byte for byte, against the real acp-agent process.

One agent serves the whole bad-input series: after every bad line it must
still answer a good `initialize`, and everything it wrote over the series
must be valid JSON-RPC that fits the schema.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol import methods
from protocol.limits import MAX_AGENT_LINE_BYTES
from tests.support import WireValidator, agent_command
from tests.support.raw_agent import RawAgent

pytestmark = pytest.mark.e2e

#: The promptness bound for exiting once stdin closes (stated by the issue).
EXIT_BOUND_S = 1.0
#: An over-long line, and the agent's peak RSS while it skips one: far below what
#: reading it whole would take (several times its size).
BIG_LINE_BYTES = 100 * 1024 * 1024
PEAK_RSS_BOUND_BYTES = 200 * 1024 * 1024

_ids = itertools.count(1)


@pytest.fixture(scope="module")
def raw() -> Iterator[RawAgent]:
    agent = RawAgent(agent_command(script="greeting.json"))
    yield agent
    assert agent.stop() == 0
    assert WireValidator().problems(agent.sent, agent.received) == []
    assert b"Traceback" not in b"\n".join(agent.received)


def _initialize_line(msg_id: Any) -> bytes:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": "initialize"}
    return json.dumps({**message, "params": {"protocolVersion": 1}}).encode() + b"\n"


def assert_still_serving(raw: RawAgent) -> None:
    msg_id = f"alive-{next(_ids)}"
    raw.send(_initialize_line(msg_id))
    response = raw.read_message()
    assert response["id"] == msg_id
    assert response["result"]["protocolVersion"] == 1


def test_unparsable_line_is_a_parse_error_with_null_id(raw: RawAgent):
    raw.send(b'{"jsonrpc": "2.0", "id": 1, "method": \n')

    assert _error(raw.read_message()) == (None, -32700)
    assert_still_serving(raw)


def test_invalid_utf8_is_a_parse_error_and_the_agent_keeps_serving(raw: RawAgent):
    raw.send(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "x": "\xff\xfe"}\n')

    assert _error(raw.read_message()) == (None, -32700)
    assert_still_serving(raw)


@pytest.mark.parametrize(
    ("message", "answered_id"),
    [
        ({"jsonrpc": "1.0", "id": 7, "method": "initialize", "params": {}}, 7),
        ({"id": "no-version", "method": "initialize", "params": {}}, "no-version"),
        ({"jsonrpc": "2.0", "id": 8, "method": 42}, 8),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "initialize"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "initialize"}, None),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "initialize"}, None),
        ({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": "text"}, 9),
        ({"jsonrpc": "2.0", "id": 10}, 10),
        ({"jsonrpc": "2.0"}, None),
        ("a string", None),
        (42, None),
        (None, None),
    ],
    ids=[
        "wrong-version",
        "missing-version",
        "method-not-a-string",
        "fractional-id",
        "boolean-id",
        "object-id",
        "params-not-structured",
        "neither-call-nor-answer",
        "empty-envelope",
        "string",
        "number",
        "null",
    ],
)
def test_invalid_request_is_answered_with_invalid_request(
    raw: RawAgent, message: Any, answered_id: Any
):
    raw.send_json(message)

    assert _error(raw.read_message()) == (answered_id, -32600)
    assert_still_serving(raw)


def test_json_array_is_an_invalid_request_answered_with_one_object_not_a_batch(raw: RawAgent):
    raw.send(b"[" + _initialize_line(99).strip() + b"]\n")

    line = raw.read_line()
    assert line.startswith(b"{")
    assert _error(json.loads(line)) == (None, -32600)
    assert_still_serving(raw)


def test_empty_json_array_is_an_invalid_request(raw: RawAgent):
    raw.send(b"[]\n")

    assert _error(raw.read_message()) == (None, -32600)
    assert_still_serving(raw)


def test_unknown_method_is_method_not_found(raw: RawAgent):
    raw.send_json({"jsonrpc": "2.0", "id": "m", "method": "session/teleport", "params": {}})

    response = raw.read_message()
    assert _error(response) == ("m", -32601)
    assert "session/teleport" in response["error"]["message"]
    assert_still_serving(raw)


def test_unknown_extension_request_is_method_not_found(raw: RawAgent):
    raw.send_json({"jsonrpc": "2.0", "id": 5, "method": "_foo/bar", "params": {}})

    assert _error(raw.read_message()) == (5, -32601)
    assert_still_serving(raw)


def test_unknown_notifications_get_no_answer(raw: RawAgent):
    raw.send_json({"jsonrpc": "2.0", "method": "_foo/bar", "params": {}})
    raw.send_json({"jsonrpc": "2.0", "method": "session/teleport", "params": {}})
    raw.send_json({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}})

    # The very next line answers the next request: nothing came for the notifications.
    assert_still_serving(raw)


def test_invalid_params_is_answered_with_a_message_naming_the_field(raw: RawAgent):
    raw.send_json({"jsonrpc": "2.0", "id": 11, "method": "initialize", "params": {}})
    missing = raw.read_message()
    raw.send_json(
        {
            "jsonrpc": "2.0",
            "id": 12,
            "method": "session/new",
            "params": {"cwd": 5, "mcpServers": []},
        }
    )
    wrong_type = raw.read_message()

    assert _error(missing) == (11, -32602)
    assert missing["error"]["message"] == "Invalid params: protocolVersion: required field missing"
    assert _error(wrong_type) == (12, -32602)
    assert wrong_type["error"]["message"].startswith("Invalid params: cwd: ")
    assert_still_serving(raw)


def test_blank_lines_and_crlf_line_endings_are_accepted(raw: RawAgent):
    raw.send(b"\n  \n" + _initialize_line("crlf").rstrip(b"\n") + b"\r\n")

    assert raw.read_message()["id"] == "crlf"
    assert_still_serving(raw)


def test_a_twenty_megabyte_prompt_line_is_handled(raw: RawAgent):
    raw.send_json(
        {
            "jsonrpc": "2.0",
            "id": "s",
            "method": methods.SESSION_NEW,
            "params": {"cwd": "/tmp", "mcpServers": []},
        }
    )
    session_id = raw.read_message()["result"]["sessionId"]
    big_text = "x" * (20 * 1024 * 1024)

    raw.send_json(
        {
            "jsonrpc": "2.0",
            "id": "big",
            "method": methods.SESSION_PROMPT,
            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": big_text}]},
        }
    )

    messages = [raw.read_message(timeout_s=30)]
    while "id" not in messages[-1]:
        messages.append(raw.read_message(timeout_s=30))
    assert {m.get("method") for m in messages[:-1]} == {methods.SESSION_UPDATE}
    # The line crossed whole; 5M tokens are more than the model takes, so the prompt is
    # answered without being sent (see tests/limits/test_context_window.py).
    result = messages[-1]["result"]
    assert result["stopReason"] == "end_turn"
    assert result["_meta"]["acp-agent"]["error"]["kind"] == "prompt_too_large"
    assert_still_serving(raw)


def test_request_right_before_stdin_closes_is_answered_or_dropped_cleanly_within_one_second():
    agent = RawAgent(agent_command(script="greeting.json"))
    # The bound is about shutting down, not starting: wait until the agent serves.
    agent.send(_initialize_line(1))
    agent.read_message()
    agent.send(_initialize_line(2))
    agent.close_stdin()

    returncode, waited_s = agent.wait_for_exit()
    agent.stop()

    assert returncode == 0
    assert waited_s < EXIT_BOUND_S
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in agent.received)
    assert WireValidator().problems(agent.sent, agent.received) == []


def test_a_line_over_the_limit_is_answered_invalid_request_without_being_kept_in_memory():
    agent = RawAgent(agent_command(script="greeting.json"))
    try:
        agent.send(_initialize_line(1))
        agent.read_message()
        # A valid request, were it not for its size: the agent must not read it.
        big = b"x" * BIG_LINE_BYTES
        head = b'{"jsonrpc":"2.0","id":"big","method":"initialize","params":{"protocolVersion":1,'
        line = head + b'"_meta":{"padding":"' + big + b'"}}}'
        agent.send(line + b"\n" + _initialize_line("after"))

        rejection = agent.read_message(timeout_s=60)
        answer = agent.read_message()
        peak_rss_bytes = _peak_rss_bytes(agent.process.pid)
    finally:
        returncode = agent.stop()

    assert rejection == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": f"Invalid request: the line is {len(line)} bytes long, "
            f"over the limit of {MAX_AGENT_LINE_BYTES} bytes",
        },
    }
    assert answer["id"] == "after"
    assert answer["result"]["protocolVersion"] == 1
    # Keeping the line, let alone parsing it, would cost several times its size.
    assert peak_rss_bytes < PEAK_RSS_BOUND_BYTES
    assert returncode == 0


def _peak_rss_bytes(pid: int) -> int:
    """The process's peak resident set so far (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")


def _error(message: dict[str, Any]) -> tuple[Any, int]:
    assert set(message) == {"jsonrpc", "id", "error"}, message
    return message["id"], message["error"]["code"]
