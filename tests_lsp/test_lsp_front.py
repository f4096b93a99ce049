"""`acp-agent lsp` end to end: the real server over stdio, driven by pytest-lsp's client.

Run apart from the main suite (pytest-asyncio and anyio's plugin cannot share a
session): `python -m pytest tests_lsp -p no:anyio -o addopts=... ` (see `.ci/run`).
Each test starts the server with a home of its own and the scripted model, and
speaks as a real editor would: VS Code (annotated edits it confirms), Neovim
(message requests) or a Helix-like client (neither: proposals as code actions).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pytest_lsp import client_capabilities

from protocol import methods
from protocol import types as acp
from tests.support.agent import running_agent
from tests_lsp.editor import BUFFER, HELIX, ON_DISK, WAIT_S, Editor, replaced_text

pytestmark = pytest.mark.asyncio


async def test_a_fix_from_a_diagnostic_arrives_as_an_annotated_edit_and_the_session_loads_in_acp(
    start: Callable[..., Any],
) -> None:
    editor: Editor = await start(client_capabilities("visual-studio-code"))
    uri = await editor.open("app.py", BUFFER)
    problem = types.Diagnostic(
        range=types.Range(
            start=types.Position(line=1, character=6), end=types.Position(line=1, character=11)
        ),
        message='"valeu" is not defined',
        source="pyflakes",
    )
    actions = await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=problem.range,
            context=types.CodeActionContext(diagnostics=[problem]),
        )
    )
    assert actions is not None
    fix = next(a for a in actions if isinstance(a, types.CodeAction) and "Fix" in a.title)
    assert fix.command is not None
    assert fix.command.command == "acp-agent.ask"
    assert '"valeu" is not defined' in fix.command.arguments[0]

    started = await editor.command(fix.command.command, *(fix.command.arguments or []))
    reply = await editor.message(lambda text: "typo" in text)

    assert reply == "Fixed the typo."
    (applied,) = editor.edits
    annotations = applied.edit.change_annotations or {}
    assert [a.needs_confirmation for a in annotations.values()] == [True]
    # The edit was made to the open buffer (its unsaved comment kept), not to the disk's text.
    assert replaced_text(applied.edit) == "value = 1\nprint(value)  # unsaved\n"
    (_token, reports), *_ = editor.client.progress_reports.items()
    steps = [getattr(r, "message", None) for r in reports]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert "Thinking" in steps
    assert any(step and step.startswith("Running: ") for step in steps)
    # The transcript opened in the editor lives in the agent's data folder, not the workspace.
    await editor.until(lambda: editor.client.shown_documents != [])
    (shown,) = editor.client.shown_documents
    assert shown.uri.startswith(from_fs_path(str(editor.home)) or "?")
    session_id = started["sessionId"]
    transcript = await anyio.Path(to_fs_path(shown.uri) or "?").read_text()
    assert "Fixed the typo." in transcript
    assert "valeu" in transcript

    # The same session, loaded by an ACP client once the editor has gone, shows the turn.
    await editor.close()
    async with running_agent(editor.home) as acp_client:
        await acp_client.request(
            methods.SESSION_LOAD,
            acp.LoadSessionRequest(
                session_id=session_id, cwd=str(editor.folder.resolve()), mcp_servers=[]
            ),
        )
        replayed = acp_client.updates_for(session_id)
    said = "".join(
        u.content.text
        for u in replayed
        if isinstance(u, acp.AgentMessageChunk) and isinstance(u.content, acp.TextContent)
    )
    assert said == "Fixed the typo."


async def test_a_rejected_edit_changes_nothing(start: Callable[..., Any]) -> None:
    editor: Editor = await start(client_capabilities("neovim"))
    editor.question_answer = "Reject"
    await editor.command("acp-agent.ask", "Fix the typo in app.py")

    await editor.message(lambda text: "typo" in text)

    (question,) = editor.questions
    assert "app.py" in question.message
    assert [a.title for a in question.actions or []] == [
        "Allow once",
        "Always for this kind",
        "Reject",
    ]
    assert editor.edits == []
    assert (editor.folder / "app.py").read_text() == ON_DISK


async def test_where_the_editor_cannot_ask_the_change_waits_as_a_code_action(
    start: Callable[..., Any],
) -> None:
    editor: Editor = await start(HELIX)
    uri = await editor.open("app.py", ON_DISK)
    await editor.command("acp-agent.ask", "Fix the typo in app.py", uri)
    await editor.message(lambda text: "Apply acp-agent's change" in text)
    whole = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
    )

    actions = await editor.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=whole,
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions is not None
    titles = [a.title for a in actions if isinstance(a, types.CodeAction)]
    assert titles == ["Apply acp-agent's change (1 file)", "Reject acp-agent's change"]
    apply = actions[0]
    assert isinstance(apply, types.CodeAction)
    assert apply.edit is not None
    assert replaced_text(apply.edit) == "value = 1\nprint(value)\n"
    assert editor.edits == []  # nothing applied before the person picks it
    assert apply.command is not None

    # The editor applies the action's edit, then runs its command.
    await editor.command(apply.command.command, *(apply.command.arguments or []))
    reply = await editor.message(lambda text: "typo" in text)

    assert reply == "Fixed the typo."
    assert editor.edits == []  # the editor applied it from the code action, not the server


SLOW = [{"text": "Working"}, {"sleep_ms": 30000}]


def thinking_tokens(editor: Editor) -> list[str]:
    """The progress tokens whose turn has reached the model."""
    return [
        str(token)
        for token, reports in editor.client.progress_reports.items()
        if any(getattr(r, "message", None) == "Thinking" for r in reports)
    ]


async def test_cancel_from_the_palette_or_the_progress_stops_the_turn(
    start: Callable[..., Any],
) -> None:
    editor: Editor = await start(client_capabilities("neovim"), SLOW)
    await editor.command("acp-agent.ask", "Take your time")
    await editor.until(lambda: len(thinking_tokens(editor)) == 1)
    cancelled = await editor.command("acp-agent.cancel")
    shown = await editor.message(lambda text: "cancelled" in text)
    status = await editor.command("acp-agent.status")

    assert cancelled == {"cancelled": 1}
    assert shown.startswith("acp-agent: cancelled.")
    assert status["running"] is False
    assert status["mode"] == "ask"

    # The editor's cancel button on the progress (window/workDoneProgress/cancel).
    editor.client.messages.clear()
    await editor.command("acp-agent.ask", "Again")
    await editor.until(lambda: len(thinking_tokens(editor)) == 2)
    editor.client.window_work_done_progress_cancel(
        types.WorkDoneProgressCancelParams(token=thinking_tokens(editor)[-1])
    )
    assert (await editor.message(lambda text: "cancelled" in text)).startswith(
        "acp-agent: cancelled."
    )


async def test_sigterm_during_a_turn_exits_cleanly_and_the_turn_is_kept(
    start: Callable[..., Any],
) -> None:
    editor: Editor = await start(client_capabilities("neovim"), SLOW)
    started = await editor.command("acp-agent.ask", "Take your time")
    await editor.until(lambda: len(thinking_tokens(editor)) == 1)
    process = editor.client._server
    assert process is not None

    process.send_signal(signal.SIGTERM)
    returncode = await asyncio.wait_for(process.wait(), WAIT_S)
    editor.closed = True
    await editor.client.stop()

    assert returncode == 0
    async with running_agent(editor.home) as acp_client:
        await acp_client.request(
            methods.SESSION_LOAD,
            acp.LoadSessionRequest(
                session_id=started["sessionId"],
                cwd=str(editor.folder.resolve()),
                mcp_servers=[],
            ),
        )
        replayed = acp_client.updates_for(started["sessionId"])
    assert [
        u.content.text
        for u in replayed
        if isinstance(u, acp.AgentMessageChunk) and isinstance(u.content, acp.TextContent)
    ] == ["Working"]


async def test_a_command_is_asked_in_the_editor_and_a_refusal_runs_nothing(
    start: Callable[..., Any],
) -> None:
    editor: Editor = await start(
        client_capabilities("neovim"),
        [{"tool_call": {"name": "shell", "arguments": {"command": "touch made.txt"}}}],
        [{"text": "It was refused."}],
    )
    editor.question_answer = "Reject"
    await editor.command("acp-agent.ask", "Make a file")

    reply = await editor.message(lambda text: "refused" in text)

    assert reply == "It was refused."
    (question,) = editor.questions
    assert "touch made.txt" in question.message
    assert not (editor.folder / "made.txt").exists()


async def test_the_folder_keeps_its_session_across_restarts_and_rewinds_it(
    start: Callable[..., Any],
) -> None:
    hello = [{"text": "Hello there."}]
    first: Editor = await start(client_capabilities("neovim"), hello)
    await first.command("acp-agent.ask", "Hi")
    await first.message(lambda text: "Hello" in text)
    before = await first.command("acp-agent.status")
    await first.close()

    again: Editor = await start(client_capabilities("neovim"), hello)
    after = await again.command("acp-agent.status")
    rewound = await again.command("acp-agent.rewind")

    assert after["sessionId"] == before["sessionId"]
    assert after["title"] == "Hi"
    assert rewound["rewound"] is True
    await again.message(lambda text: "rewound" in text)
