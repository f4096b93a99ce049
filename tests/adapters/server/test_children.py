"""A session's branches as child sessions on the server: their questions, and resuming them.

One real server (`acp-agent server`, a real SQLite store, the scripted model
in the `ask` mode the tests run in) and real socket clients. The main line
starts a branch that runs a command, so the branch asks; the editor holds the
turn without attaching (as over stdio) and never answers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from protocol import types
from protocol.converter import shared_converter
from tests.support import write_script
from tests.support.app_server import (
    DETACH,
    ServerProcess,
    SocketClient,
    cursor_of,
    running_server,
    socket_client,
)
from tests.support.conversation import shown
from tests.support.editor_client import allow_all
from tests.support.schema_validation import negotiated_problems

pytestmark = pytest.mark.e2e

REPLIES = [
    [
        {"text": "Starting."},
        {"tool_call": {"name": "branch", "arguments": {"task": "Run it", "title": "run"}}},
    ],
    [{"tool_call": {"name": "branch_wait", "arguments": {"all": True, "timeout_s": 30}}}],
    [{"text": "Done."}],
]
BRANCHES = [
    {
        "title": "run",
        "replies": [
            [
                {"text": "Running"},
                {"text": " it."},
                {"tool_call": {"name": "shell", "arguments": {"command": "echo ran"}}},
            ],
            [{"text": "It "}, {"text": "ran."}],
        ],
    }
]
SUBAGENTS = types.ClientCapabilities(subagents=types.SubagentCapabilities())
ASKED = "_acp-agent/permission_asked"
RESOLVED = "_acp-agent/permission_resolved"


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ServerProcess]:
    home = tmp_path_factory.mktemp("server-home")
    script = write_script(home / "script.json", *REPLIES, branches=BRANCHES)
    async with running_server(home, script=script) as running:
        yield running


def stamped(client: SocketClient, session_id: str) -> list[tuple[str, dict[str, Any]]]:
    """(cursor, update) of every update on `session_id` that carries a cursor, in order."""
    converter = client.protocol.converter
    return [
        (cursor, converter.unstructure(n.update))
        for n in client.updates
        if n.session_id == session_id and (cursor := cursor_of(n)) is not None
    ]


def made_of_events(client: SocketClient, session_id: str) -> list[tuple[str, dict[str, Any]]]:
    """`stamped`, only the updates made of an event (`seq:part`): not the commands, nor
    the children's announcements and state, which carry the position reached."""
    return [(c, u) for c, u in stamped(client, session_id) if ":" in c]


def typed(updates: list[tuple[str, dict[str, Any]]]) -> list[types.SessionUpdate]:
    converter = shared_converter(include_unstable=True)
    return [converter.structure(update, types.SessionUpdate) for _, update in updates]


def said(updates: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(
        u["content"]["text"] for _, u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


def told(client: SocketClient, method: str) -> list[dict[str, Any]]:
    return [params for name, params in client.notices if name == method]


def reports(client: SocketClient, session_id: str, child_id: str) -> list[dict[str, Any]]:
    """The child's reports as the parent's session shows them (the incoming views)."""
    return [
        u
        for _, u in stamped(client, session_id)
        if u["sessionUpdate"] == "session_message" and u["senderSessionId"] == child_id
    ]


async def test_a_branchs_question_on_its_child_session_and_each_child_resumed_after_its_cursor(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with (
        socket_client(server.socket) as editor,  # holds the turn, never attaches nor answers
        socket_client(server.socket, capabilities=SUBAGENTS) as watcher,  # an observer
        socket_client(server.socket, capabilities=SUBAGENTS) as leaving,  # leaves mid-way
    ):
        session_id = await editor.new_session(tmp_path)
        await watcher.attach(session_id, role="observer")
        await leaving.attach(session_id, role="observer")
        turn = asyncio.create_task(editor.prompt(session_id, "Run it in a branch"))

        # The observers are told the branch's question on its child session, with the
        # child's own tool call id and its command; the editor, which sees the branch as
        # a row of its turn, is asked on that row.
        await leaving.wait_until(lambda: bool(told(leaving, ASKED)))
        [question] = told(leaving, ASKED)
        child_id, call_id = question["sessionId"], question["toolCall"]["toolCallId"]
        assert child_id != session_id
        assert "echo ran" in json.dumps(question["toolCall"]["rawInput"])
        calls = [u["toolCallId"] for _, u in stamped(leaving, child_id) if "toolCallId" in u]
        assert call_id in calls
        await asyncio.wait_for(editor.asked.wait(), 10)
        [on_row] = editor.permission_requests
        assert on_row.session_id == session_id
        assert str(on_row.tool_call.tool_call_id).startswith("show_")
        assert str(on_row.tool_call.title).startswith("Branch 'run' asks: ")
        await watcher.wait_until(lambda: bool(told(watcher, ASKED)))
        assert told(watcher, ASKED) == [question]

        # One observer leaves while the branch waits: what it has of each session.
        parent_cursor = stamped(leaving, session_id)[-1][0]
        child_part = stamped(leaving, child_id)
        await leaving.stop()

        # A controller that takes subagents is asked at once, on the child's session.
        async with socket_client(server.socket, capabilities=SUBAGENTS, decide=allow_all) as ctl:
            answer = await ctl.attach(session_id, role="controller")
            assert answer["pendingPermissions"] == 1
            await asyncio.wait_for(ctl.asked.wait(), 10)
            [asked] = ctl.permission_requests
            assert (asked.session_id, asked.tool_call.tool_call_id) == (child_id, call_id)
            response = await asyncio.wait_for(turn, 30)
            assert response.stop_reason == types.StopReason.END_TURN
        # Resolved for everyone, each where it got it: the observer on the child, the
        # editor on its row.
        resolved = told(watcher, RESOLVED)
        assert resolved == [
            {
                "sessionId": child_id,
                "toolCallId": call_id,
                "outcome": {"outcome": "selected", "optionId": asked.options[0].option_id},
                "resolvedBy": answer["clientId"],
            }
        ]
        [row_resolved] = told(editor, RESOLVED)
        assert (row_resolved["sessionId"], row_resolved["toolCallId"]) == (
            session_id,
            on_row.tool_call.tool_call_id,
        )
        await watcher.wait_until(lambda: said(stamped(watcher, child_id)) == "Running it.It ran.")
        await watcher.wait_until(lambda: said(stamped(watcher, session_id)) == "Starting.Done.")
        whole = stamped(watcher, child_id)
        # The child's updates carry cursors of its own timeline, in order.
        assert [c for c, _ in whole] == sorted({c for c, _ in whole}, key=_position)

        # Back after the gap: each session resumes after its own cursor, with no gap and
        # nothing twice (its report to the parent included).
        # (A resumed connection updates calls announced on the one before: the strict
        # client's check does not apply, the schema's does.)
        async with socket_client(server.socket, capabilities=SUBAGENTS, check_wire=False) as back:
            await back.attach(
                session_id,
                role="observer",
                replay="cursor",
                cursor=parent_cursor,
                children={child_id: child_part[-1][0]},
            )
            await back.wait_until(
                lambda: len(child_part) + len(stamped(back, child_id)) >= len(whole)
            )
            assert child_part + stamped(back, child_id) == whole
            assert said(stamped(back, child_id)) == "It ran."
            assert len(reports(back, session_id, child_id)) == 1
            assert reports(watcher, session_id, child_id) == reports(back, session_id, child_id)
            # The parent's rest is a replay: fewer updates, the same conversation.
            both = made_of_events(leaving, session_id) + made_of_events(back, session_id)
            assert shown(typed(both)) == shown(typed(made_of_events(watcher, session_id)))
        assert negotiated_problems(back.sent, back.received) == []

        # Resuming after any of the child's cursors (a whole event, an event's part,
        # inside a batch) gives exactly what follows it. (One client, resuming over and
        # over: its updates, taken together, repeat on purpose.)
        end = stamped(watcher, session_id)[-1][0]
        async with socket_client(server.socket, capabilities=SUBAGENTS, check_wire=False) as again:
            for index, (cursor, _) in enumerate(whole):
                mark = len(again.updates)
                await again.attach(
                    session_id,
                    role="observer",
                    replay="cursor",
                    cursor=end,
                    children={child_id: cursor},
                )

                def rest(mark: int = mark) -> list[tuple[str, dict[str, Any]]]:
                    converter = again.protocol.converter
                    return [
                        (c, converter.unstructure(n.update))
                        for n in again.updates[mark:]
                        if n.session_id == child_id and (c := cursor_of(n)) is not None
                    ]

                wanted = whole[index + 1 :]
                await again.wait_until(lambda wanted=wanted: len(rest()) >= len(wanted))
                assert rest() == wanted, f"after {cursor}"
                await again.request(DETACH, {"sessionId": session_id})
        assert negotiated_problems(again.sent, again.received) == []


def _position(cursor: str) -> tuple[int, int]:
    seq, _, part = cursor.partition(":")
    return int(seq), int(part) if part else -1
