"""v2 messages as a peer writes them: structure, write back identically, validate as v2.

The v2-specific shapes an adapter will send and read (a prompt answered with its
`messageId`, `state_update`s, upserts where `null` clears, `session/resume` with
`replayFrom`, the per-item cancels) against literal JSON, and the validation entry
point `acp-agent check` can use telling v2 lines from v1 ones.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from jsonschema import Draft202012Validator

from protocol.v2 import methods, types
from protocol.v2.converter import get_converter
from protocol.validation import UNDEFINED_KEY, WireValidator

CONVERTER = get_converter()
UNSTABLE_CONVERTER = get_converter(include_unstable=True)
V2 = WireValidator(protocol_version=2)
V2_UNSTABLE = WireValidator(protocol_version=2, unstable=True)
V1 = WireValidator()
FILE = "/home/me/project/src/main.py"


def update(body: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": "s", "update": body}


#: (method, "params" | "result", literal JSON as a peer sends it), all in the stable draft.
LITERALS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "initialize",
        "params",
        {
            "protocolVersion": 2,
            "info": {"name": "zed", "version": "0.230.0"},
            "capabilities": {"auth": {"terminal": {}}, "elicitation": {"form": {}}},
        },
    ),
    (
        "initialize",
        "result",
        {
            "protocolVersion": 2,
            "info": {"name": "acp-agent", "version": "0.1.0"},
            "capabilities": {
                "session": {"prompt": {"embeddedContext": {}}, "mcp": {"http": {}}},
            },
            "authMethods": [{"type": "agent", "methodId": "openai", "name": "OpenAI API key"}],
        },
    ),
    ("auth/login", "params", {"methodId": "openai"}),
    ("auth/logout", "params", {}),
    ("session/new", "params", {"cwd": "/home/me/project"}),
    ("session/new", "result", {"sessionId": "sess-1", "availableCommands": []}),
    (
        "session/prompt",
        "params",
        {"sessionId": "s", "prompt": [{"type": "text", "text": "Explain"}]},
    ),
    # Answered on acceptance: the id of the inserted user message, no stop reason.
    ("session/prompt", "result", {"messageId": "m-1"}),
    ("session/resume", "params", {"sessionId": "s", "cwd": "/p", "replayFrom": {"type": "start"}}),
    # The extension cursor issue 37 plans (`_`-prefixed: the draft's open form).
    (
        "session/resume",
        "params",
        {"sessionId": "s", "cwd": "/p", "replayFrom": {"type": "_acp-agent/after", "cursor": "41"}},
    ),
    ("session/resume", "params", {"sessionId": "s", "cwd": "/p"}),
    ("session/resume", "result", {}),
    ("session/cancel", "params", {"sessionId": "s"}),
    ("tool_call/cancel", "params", {"sessionId": "s", "toolCallId": "call-1"}),
    ("tool_call/cancel", "result", {}),
    ("terminal/cancel", "params", {"sessionId": "s", "terminalId": "t1"}),
    ("session/update", "params", update({"sessionUpdate": "state_update", "state": "running"})),
    (
        "session/update",
        "params",
        update({"sessionUpdate": "state_update", "state": "requires_action"}),
    ),
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "state_update",
                "state": "idle",
                "stopReason": "end_turn",
                "background": [
                    {"type": "terminal", "terminalId": "t1"},
                    {"type": "tool_call", "toolCallId": "call-2"},
                ],
            }
        ),
    ),
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "state_update",
                "state": "idle",
                "stopReason": "error",
                "error": {"code": -32603, "message": "provider unreachable"},
            }
        ),
    ),
    ("session/update", "params", update({"sessionUpdate": "state_update", "state": "idle"})),
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "user_message",
                "messageId": "m-1",
                "content": [{"type": "text", "text": "Explain"}],
            }
        ),
    ),
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "m-2",
                "content": {"type": "text", "text": "Hel"},
            }
        ),
    ),
    # An upsert clearing its content: `null`, not absence.
    (
        "session/update",
        "params",
        update({"sessionUpdate": "agent_message", "messageId": "m-2", "content": None}),
    ),
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call-1",
                "title": "Run `pytest -q`",
                "kind": "execute",
                "status": "in_progress",
                "capabilities": {"cancel": {}},
            }
        ),
    ),
    (
        "session/update",
        "params",
        update({"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "name": None}),
    ),
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "tool_call_content_chunk",
                "toolCallId": "call-1",
                "content": {"type": "terminal", "terminalId": "t1"},
            }
        ),
    ),
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "terminal_update",
                "terminalId": "t1",
                "command": "pytest -q",
                "cwd": "/p",
                "exitStatus": {"exitCode": 0},
            }
        ),
    ),
    (
        "session/update",
        "params",
        update({"sessionUpdate": "terminal_output_chunk", "terminalId": "t1", "data": "b2sK"}),
    ),
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "plan_update",
                "plan": {
                    "type": "items",
                    "planId": "p1",
                    "entries": [
                        {"content": "Write tests", "priority": "high", "status": "pending"}
                    ],
                },
            }
        ),
    ),
    # An update kind from a newer peer or an extension keeps its payload.
    ("session/update", "params", update({"sessionUpdate": "_acp-agent/job", "job": {"id": 3}})),
]

#: Shapes only the unstable draft has: subagents (branches), a turn's token usage.
UNSTABLE_LITERALS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "state_update",
                "state": "idle",
                "stopReason": "end_turn",
                "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10},
            }
        ),
    ),
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "subagent_update",
                "sessionId": "branch-1",
                "title": "Try the other fix",
                "state": {"state": "running"},
            }
        ),
    ),
    (
        "session/update",
        "params",
        update(
            {
                "sessionUpdate": "state_update",
                "state": "running",
                "background": [{"type": "subagent", "sessionId": "branch-1"}],
            }
        ),
    ),
]


def spec_type(method: str, part: str) -> Any:
    spec = methods.REQUESTS.get(method) or methods.NOTIFICATIONS[method]
    return spec.params_type if part == "params" else spec.result_type


def wire_problems(validator: WireValidator, method: str, part: str, payload: Any) -> list[str]:
    """What `validator` finds wrong with `payload` as the peer writing it would send it.

    The validator reads an agent's lines; what a client writes (the params of the
    methods an agent serves) is checked against its definition directly.
    """
    spec = methods.REQUESTS.get(method) or methods.NOTIFICATIONS[method]
    if part == "params" and spec.side is methods.Side.AGENT:
        schema = {"$ref": f"#/$defs/{spec.params}", "$defs": validator.defs}
        return [e.message for e in Draft202012Validator(schema).iter_errors(payload)]
    return validator.problems(*as_lines(method, part, payload))


def as_lines(method: str, part: str, payload: dict[str, Any]) -> tuple[list[bytes], list[bytes]]:
    """The line an agent would write carrying `payload` (after the request, for results)."""
    if part == "params":
        kind = methods.REQUESTS.get(method)
        line = {"jsonrpc": "2.0", "method": method, "params": payload}
        if kind is not None:
            line["id"] = 1
        return [], [json.dumps(line).encode()]
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}
    response = {"jsonrpc": "2.0", "id": 1, "result": payload}
    return [json.dumps(request).encode()], [json.dumps(response).encode()]


def ids(literals: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    return [f"{m}-{p}-{i}" for i, (m, p, _) in enumerate(literals)]


@pytest.mark.parametrize(("method", "part", "literal"), LITERALS, ids=ids(LITERALS))
def test_v2_literal_structures_writes_back_identically_and_validates(
    method: str, part: str, literal: dict[str, Any]
) -> None:
    value = CONVERTER.structure(literal, spec_type(method, part))
    assert CONVERTER.unstructure(value) == literal
    assert wire_problems(V2, method, part, literal) == []


@pytest.mark.parametrize(
    ("method", "part", "literal"), UNSTABLE_LITERALS, ids=ids(UNSTABLE_LITERALS)
)
def test_unstable_v2_literal_round_trips_and_validates_against_the_unstable_draft(
    method: str, part: str, literal: dict[str, Any]
) -> None:
    value = UNSTABLE_CONVERTER.structure(literal, spec_type(method, part))
    assert UNSTABLE_CONVERTER.unstructure(value) == literal
    assert wire_problems(V2_UNSTABLE, method, part, literal) == []
    assert unstable_parts(value), "expected a shape only the unstable draft defines"


def unstable_parts(value: Any) -> list[str]:
    """The unstable classes in `value`, and its classes' unstable fields that are set."""
    if isinstance(value, list):
        return [name for item in value for name in unstable_parts(item)]
    if not attrs.has(type(value)):
        return []
    found = [type(value).__name__] if type(value) in types.UNSTABLE_TYPES else []
    for field in types.WIRE_FIELDS[type(value)]:
        inner = getattr(value, field.name)
        if field.unstable and inner is not None:
            found.append(f"{type(value).__name__}.{field.name}")
        found += unstable_parts(inner)
    return found


def test_the_prompt_answer_and_the_turn_end_have_their_own_classes() -> None:
    answer = CONVERTER.structure({"messageId": "m-1"}, types.PromptResponse)
    assert answer == types.PromptResponse(message_id="m-1")
    idle = CONVERTER.structure(
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"},
        types.SessionUpdate,
    )
    assert isinstance(idle, types.SessionStateUpdateIdleCancelled)
    running = CONVERTER.structure(
        {"sessionUpdate": "state_update", "state": "running"}, types.SessionUpdate
    )
    assert isinstance(running, types.SessionStateUpdateRunning)
    # `session/status` answers with the same states, without the update's tag.
    status = CONVERTER.structure({"state": "running"}, types.StateUpdate)
    assert isinstance(status, types.RunningStateUpdate)


def test_an_upsert_tells_a_cleared_field_from_an_unchanged_one() -> None:
    cleared = types.ToolCallProgress(tool_call_id="c", title=types.JSON_NULL)
    unchanged = types.ToolCallProgress(tool_call_id="c")
    assert CONVERTER.unstructure(cleared) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "title": None,
    }
    assert CONVERTER.unstructure(unchanged) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
    }
    read = CONVERTER.structure({"toolCallId": "c", "status": None}, types.ToolCallUpdate)
    assert read.status is types.JSON_NULL


def test_an_extension_replay_cursor_keeps_its_payload() -> None:
    request = CONVERTER.structure(
        {"sessionId": "s", "cwd": "/p", "replayFrom": {"type": "_acp-agent/after", "cursor": "41"}},
        types.ResumeSessionRequest,
    )
    assert request.replay_from == types.OtherReplayFrom(
        type="_acp-agent/after", extra={"cursor": "41"}
    )
    start = CONVERTER.structure({"type": "start"}, types.ReplayFrom)
    assert start == types.ReplayFromStart()
    # A named field wins over a stray copy of its key in the rest.
    odd = types.OtherReplayFrom(type="_x", extra={"type": "start", "n": 1})
    assert CONVERTER.unstructure(odd) == {"type": "_x", "n": 1}


def test_the_method_table_has_v2s_methods_and_not_v1s() -> None:
    assert methods.REQUESTS[methods.SESSION_PROMPT].result_type is types.PromptResponse
    assert methods.REQUESTS[methods.SESSION_RESUME].stable
    assert methods.REQUESTS[methods.TOOL_CALL_CANCEL].side is methods.Side.AGENT
    assert methods.REQUESTS[methods.AUTH_LOGOUT].stable
    assert methods.NOTIFICATIONS[methods.SESSION_UPDATE].side is methods.Side.CLIENT
    assert not methods.REQUESTS[methods.SESSION_FORK].stable
    gone = {"session/load", "session/set_mode", "authenticate", "logout", "fs/read_text_file"}
    assert gone.isdisjoint(methods.REQUESTS)
    assert not {name for name in methods.REQUESTS if name.startswith("terminal/")} - {
        "terminal/cancel"
    }


def test_the_v2_validator_tells_v2_lines_from_v1_ones() -> None:
    v1_answer = as_lines("session/prompt", "result", {"stopReason": "end_turn"})
    assert V1.problems(*v1_answer) == []
    assert any("messageId" in p for p in V2.problems(*v1_answer))
    v2_answer = as_lines("session/prompt", "result", {"messageId": "m-1"})
    assert V2.problems(*v2_answer) == []
    assert V1.problems(*v2_answer) != []
    # v2 removed the client file system: an agent reading through it speaks v1.
    read = {"sessionId": "s", "path": FILE}
    line = {"jsonrpc": "2.0", "id": 5, "method": "fs/read_text_file", "params": read}
    read_lines: tuple[list[bytes], list[bytes]] = ([], [json.dumps(line).encode()])
    assert V1.problems(*read_lines) == []
    assert V2.problems(*read_lines) == ["line 1: fs/read_text_file: not a method of this schema"]
    stray = as_lines("session/prompt", "result", {"messageId": "m-1", "stopReason": "end_turn"})
    assert V2.problems(*stray) == [f"line 1: session/prompt: {UNDEFINED_KEY}: $.stopReason"]


def test_no_validator_for_a_version_without_a_schema() -> None:
    with pytest.raises(ValueError, match="protocol version 3"):
        WireValidator(protocol_version=3)
