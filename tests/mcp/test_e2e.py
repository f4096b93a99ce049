"""MCP through the real agent over stdio: the editor's servers in `session/new`.

A scripted model proposes the MCP tool call; the test client is the editor
(it answers the permission question). Servers are the SDK servers in
`tests/mcp/servers`.
"""

from __future__ import annotations

import statistics
import sys
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from tests.mcp.support import SERVERS
from tests.support import EditorClient, running_agent, write_script
from tests.support.editor_client import allow_all
from tests.support.steps import prompt_request

pytestmark = pytest.mark.e2e

#: The bound the issue sets: `session/new` with a server that never answers
#: answers within this of its time without servers.
HANG_BOUND_S = 0.3


def stdio_server(name: str, script: str = "tools_server.py") -> types.McpServerStdio:
    return types.McpServerStdio(
        name=name, command=sys.executable, args=[str(SERVERS / script)], env=[]
    )


def editor_agent(
    tmp_path: Path, replies: list[list[dict[str, Any]]]
) -> AbstractAsyncContextManager[EditorClient]:
    """The real agent playing `replies`; the client allows every call once."""
    script = write_script(tmp_path / "script.json", *replies)
    editor = EditorClient(decide=allow_all)
    return running_agent(tmp_path / "home", script=script, client=editor, exit_code=0)


async def test_an_editor_mcp_tool_is_called_end_to_end_through_the_agent(tmp_path: Path) -> None:
    call = {"name": "mcp__calc__add", "arguments": {"a": 2, "b": 40}, "id": "call_add"}
    replies = [[{"tool_call": call}], [{"text": "The sum is 42."}]]
    async with editor_agent(tmp_path, replies) as editor:
        session_id = await editor.new_session(tmp_path, [stdio_server("calc")])

        response = await editor.request(methods.SESSION_PROMPT, prompt_request(session_id))
        updates = editor.updates_for(session_id)

    assert response.stop_reason == types.StopReason.END_TURN
    [question] = editor.permission_requests
    assert question.tool_call.tool_call_id == "call_add"
    # The person sees the server, the tool and the arguments, not only the tool's name.
    shown = [
        part.content.text
        for part in question.tool_call.content or []
        if isinstance(part, types.Content) and isinstance(part.content, types.TextContent)
    ]
    assert "Tool 'add' of MCP server 'calc'" in shown[0]
    assert shown[1] == 'With these arguments:\n```json\n{\n  "a": 2,\n  "b": 40\n}\n```'
    calls = [u for u in updates if isinstance(u, types.ToolCall | types.ToolCallProgress)]
    assert isinstance(calls[0], types.ToolCall)
    assert calls[0].title == "add (calc MCP)"
    final = calls[-1]
    assert isinstance(final, types.ToolCallProgress)
    assert final.status == types.ToolCallStatus.COMPLETED
    assert final.content == [
        types.Content(content=types.TextContent(text="42")),
    ]


async def test_session_new_with_a_server_that_never_answers_is_not_held_up(
    tmp_path: Path,
) -> None:
    async with editor_agent(tmp_path, [[{"text": "."}]]) as editor:
        await editor.new_session(tmp_path, [])  # opens the store: not what is measured

        async def timed(servers: list[types.McpServer]) -> float:
            started = time.perf_counter()
            await editor.new_session(tmp_path, servers)
            return time.perf_counter() - started

        normal = statistics.median([await timed([]) for _ in range(3)])
        hanging = statistics.median(
            [await timed([stdio_server("silent", "silent_server.py")]) for _ in range(3)]
        )

    assert hanging - normal < HANG_BOUND_S, f"{hanging=:.3f}s {normal=:.3f}s"
