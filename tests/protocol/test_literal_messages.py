"""Each stable ACP method against literal JSON: structure, then write back byte-exact."""

from __future__ import annotations

import json
from typing import Any

import pytest

from protocol import methods, types
from protocol.converter import get_converter, structure_error_message

CONVERTER = get_converter()
FILE = "/home/me/project/src/main.py"

#: (method, "params" | "result", literal JSON as a peer sends it)
LITERALS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "initialize",
        "params",
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": True},
                "terminal": True,
                "auth": {"terminal": True},
                "_meta": {"terminal_output": True, "terminal-auth": True},
            },
            "clientInfo": {"name": "zed", "version": "0.210.0", "title": "Zed Preview"},
        },
    ),
    (
        "initialize",
        "result",
        {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"embeddedContext": True},
                "sessionCapabilities": {"list": {}, "close": {}},
            },
            "authMethods": [{"id": "openai", "name": "OpenAI API key"}],
            "agentInfo": {"name": "acp-agent", "version": "0.1.0"},
        },
    ),
    ("authenticate", "params", {"methodId": "openai"}),
    ("authenticate", "result", {}),
    ("session/new", "params", {"cwd": "/home/me/project", "mcpServers": []}),
    (
        "session/new",
        "params",
        {
            "cwd": "/home/me/project",
            "mcpServers": [
                {"name": "fs", "command": "/usr/bin/mcp-fs", "args": ["--ro"], "env": []},
                {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": []},
            ],
        },
    ),
    (
        "session/new",
        "result",
        {
            "sessionId": "sess-1",
            "modes": {
                "currentModeId": "ask",
                "availableModes": [{"id": "ask", "name": "Ask"}],
            },
            "configOptions": [
                {
                    "type": "select",
                    "id": "model",
                    "name": "Model",
                    "category": "model",
                    "currentValue": "openai/gpt-4.1",
                    "options": [{"value": "openai/gpt-4.1", "name": "GPT-4.1"}],
                }
            ],
        },
    ),
    ("session/load", "params", {"sessionId": "sess-1", "cwd": "/p", "mcpServers": []}),
    ("session/load", "result", {}),
    ("session/resume", "params", {"sessionId": "sess-1", "cwd": "/p"}),
    ("session/list", "params", {}),
    (
        "session/list",
        "result",
        {
            "sessions": [
                {
                    "sessionId": "s",
                    "cwd": "/p",
                    "title": "Fix bug",
                    "updatedAt": "2026-11-30T00:00:00Z",
                }
            ],
            "nextCursor": "abc",
        },
    ),
    ("session/close", "params", {"sessionId": "s"}),
    ("session/delete", "params", {"sessionId": "s"}),
    (
        "session/prompt",
        "params",
        {
            "sessionId": "s",
            "prompt": [
                {"type": "text", "text": "Explain"},
                {"type": "resource_link", "uri": f"file://{FILE}", "name": "main.py"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": f"file://{FILE}",
                        "text": "print(1)\n",
                        "mimeType": "text/x-python",
                    },
                },
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            ],
        },
    ),
    ("session/prompt", "result", {"stopReason": "end_turn"}),
    ("session/prompt", "result", {"stopReason": "cancelled"}),
    ("session/set_mode", "params", {"sessionId": "s", "modeId": "plan"}),
    ("session/set_config_option", "params", {"sessionId": "s", "configId": "model", "value": "x"}),
    (
        "session/set_config_option",
        "params",
        {"sessionId": "s", "configId": "thinking", "type": "boolean", "value": True},
    ),
    ("session/set_config_option", "result", {"configOptions": []}),
    (
        "session/request_permission",
        "params",
        {
            "sessionId": "s",
            "toolCall": {"toolCallId": "call-1", "title": "Run `pytest -q`", "kind": "execute"},
            "options": [
                {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "never", "name": "Reject", "kind": "reject_once"},
            ],
        },
    ),
    (
        "session/request_permission",
        "result",
        {"outcome": {"outcome": "selected", "optionId": "once"}},
    ),
    ("session/request_permission", "result", {"outcome": {"outcome": "cancelled"}}),
    ("fs/read_text_file", "params", {"sessionId": "s", "path": FILE, "line": 10, "limit": 20}),
    ("fs/read_text_file", "result", {"content": "x = 1\n"}),
    ("fs/write_text_file", "params", {"sessionId": "s", "path": FILE, "content": "x = 2\n"}),
    ("fs/write_text_file", "result", {}),
    (
        "terminal/create",
        "params",
        {
            "sessionId": "s",
            "command": "pytest",
            "args": ["-q"],
            "env": [{"name": "CI", "value": "1"}],
            "cwd": "/p",
            "outputByteLimit": 1048576,
        },
    ),
    ("terminal/create", "result", {"terminalId": "t1"}),
    (
        "terminal/output",
        "result",
        {"output": "ok\n", "truncated": False, "exitStatus": {"exitCode": 0}},
    ),
    ("terminal/wait_for_exit", "result", {"signal": "SIGKILL"}),
    ("terminal/kill", "params", {"sessionId": "s", "terminalId": "t1"}),
    ("terminal/release", "params", {"sessionId": "s", "terminalId": "t1"}),
    ("session/cancel", "params", {"sessionId": "s"}),
    ("$/cancel_request", "params", {"requestId": 7}),
    (
        "session/update",
        "params",
        {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Hel"},
                "messageId": "m1",
            },
        },
    ),
    (
        "session/update",
        "params",
        {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "tool_call",
                "toolCallId": "call-1",
                "title": "Edit main.py",
                "kind": "edit",
                "status": "pending",
                "locations": [{"path": FILE, "line": 3}],
                "rawInput": {"path": FILE, "old": "x = 1", "new": "x = 2"},
            },
        },
    ),
    (
        "session/update",
        "params",
        {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call-1",
                "status": "completed",
                "content": [
                    {"type": "diff", "path": FILE, "oldText": "x = 1\n", "newText": "x = 2\n"},
                    {"type": "content", "content": {"type": "text", "text": "done"}},
                    {"type": "terminal", "terminalId": "t1"},
                ],
            },
        },
    ),
    (
        "session/update",
        "params",
        {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "plan",
                "entries": [{"content": "Write tests", "priority": "high", "status": "pending"}],
            },
        },
    ),
    (
        "session/update",
        "params",
        {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "available_commands_update",
                "availableCommands": [
                    {"name": "compact", "description": "Summarise", "input": {"hint": "focus"}}
                ],
            },
        },
    ),
    (
        "session/update",
        "params",
        {
            "sessionId": "s",
            "update": {"sessionUpdate": "current_mode_update", "currentModeId": "plan"},
        },
    ),
    (
        "session/update",
        "params",
        {"sessionId": "s", "update": {"sessionUpdate": "session_info_update", "title": None}},
    ),
    (
        "session/update",
        "params",
        {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "usage_update",
                "used": 1200,
                "size": 200000,
                "cost": {"amount": 0.25, "currency": "USD"},
            },
        },
    ),
]


def _spec(method: str, params_or_result: str) -> Any:
    table = (
        methods.NOTIFICATIONS
        if method in ("session/cancel", "session/update", "$/cancel_request")
        else methods.REQUESTS
    )
    spec = table[method]
    return spec.params_type if params_or_result == "params" else spec.result_type


@pytest.mark.parametrize(
    ("method", "part", "literal"),
    LITERALS,
    ids=[f"{m}-{p}-{i}" for i, (m, p, _) in enumerate(LITERALS)],
)
def test_literal_message_structures_and_writes_back_identically(
    method: str, part: str, literal: dict[str, Any]
) -> None:
    value = CONVERTER.structure(literal, _spec(method, part))
    assert CONVERTER.unstructure(value) == literal


def test_tags_are_written_even_though_they_are_defaults() -> None:
    chunk = types.AgentMessageChunk(content=types.TextContent(text="hi"))
    assert CONVERTER.unstructure(chunk) == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "hi"},
    }


def test_none_optionals_are_omitted_and_meta_keeps_its_wire_name() -> None:
    info = types.Implementation(name="acp-agent", version="1", meta={"x": {"y": 1}})
    assert CONVERTER.unstructure(info) == {
        "name": "acp-agent",
        "version": "1",
        "_meta": {"x": {"y": 1}},
    }


def test_explicit_null_differs_from_absence() -> None:
    assert CONVERTER.unstructure(types.SessionInfoUpdate(title=types.JSON_NULL)) == {
        "sessionUpdate": "session_info_update",
        "title": None,
    }
    assert CONVERTER.unstructure(types.SessionInfoUpdate()) == {
        "sessionUpdate": "session_info_update"
    }


def test_default_on_error_falls_back_instead_of_rejecting_the_message() -> None:
    update = CONVERTER.structure(
        {"toolCallId": "c", "status": "exploded", "title": 5, "_meta": "nope"}, types.ToolCallUpdate
    )
    assert update == types.ToolCallUpdate(tool_call_id="c")


def test_invalid_array_items_are_skipped_where_the_schema_says_so() -> None:
    update = CONVERTER.structure(
        {
            "toolCallId": "c",
            "content": [{"type": "bogus"}, {"type": "terminal", "terminalId": "t"}],
        },
        types.ToolCallUpdate,
    )
    assert update.content == [types.Terminal(terminal_id="t")]


def test_open_enum_keeps_unknown_values_and_closed_enum_rejects_them() -> None:
    category = CONVERTER.structure("_vendor", types.SessionConfigOptionCategory)
    assert category == "_vendor"
    assert CONVERTER.unstructure(category) == "_vendor"
    with pytest.raises(Exception, match="not a valid StopReason"):
        CONVERTER.structure("paused", types.StopReason)


def test_stdio_mcp_server_accepts_the_lenient_type_tag_and_writes_none() -> None:
    server = CONVERTER.structure(
        {"type": "stdio", "name": "x", "command": "/bin/x", "args": [], "env": []}, types.McpServer
    )
    assert isinstance(server, types.McpServerStdio)
    assert "type" not in CONVERTER.unstructure(server)


def test_json_types_are_not_coerced() -> None:
    for bad in ({"sessionId": 5, "prompt": []}, {"sessionId": "s", "prompt": "text"}):
        with pytest.raises(Exception):  # noqa: B017, PT011 - any structuring error will do
            CONVERTER.structure(bad, types.PromptRequest)
    with pytest.raises(Exception):  # noqa: B017, PT011
        CONVERTER.structure({"protocolVersion": True}, types.InitializeRequest)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"prompt": []}, "sessionId: required field missing"),
        ({"sessionId": 1, "prompt": []}, "sessionId: expected a string, got a number"),
        (
            {"sessionId": "s", "prompt": [{"type": "text"}]},
            "prompt[0].text: required field missing",
        ),
        ({"sessionId": "s", "prompt": [{"type": "video"}]}, "prompt[0]: unknown type 'video'"),
    ],
)
def test_structure_errors_name_the_offending_field(params: dict[str, Any], message: str) -> None:
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the message is what is checked
        CONVERTER.structure(params, types.PromptRequest)
    assert structure_error_message(caught.value).startswith(message)


def test_unknown_keys_from_newer_peers_are_ignored() -> None:
    request = CONVERTER.structure(
        {"sessionId": "s", "prompt": [], "future": 1}, types.PromptRequest
    )
    assert request == types.PromptRequest(session_id="s", prompt=[])


def test_method_table_covers_the_baseline_in_both_directions() -> None:
    assert methods.REQUESTS[methods.SESSION_PROMPT].side is methods.Side.AGENT
    assert methods.REQUESTS[methods.FS_READ_TEXT_FILE].side is methods.Side.CLIENT
    assert methods.NOTIFICATIONS[methods.SESSION_UPDATE].result_type is None
    assert methods.NOTIFICATIONS[methods.CANCEL_REQUEST].side is methods.Side.PROTOCOL
    assert not methods.REQUESTS[methods.SESSION_FORK].stable
    assert methods.REQUESTS[methods.SESSION_RESUME].stable
    assert json.dumps(sorted(methods.REQUESTS)) == json.dumps(sorted(set(methods.REQUESTS)))
