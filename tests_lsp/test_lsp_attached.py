"""`acp-agent lsp --connect`: the language server attached to a running app server.

A real `acp-agent server` (the scripted model) and a real `acp-agent lsp --connect`
driven by pytest-lsp's client as VS Code would: the folder's session is the
server's, an ACP client attached to it on the server's socket sees the editor's
turn live, and the edit still goes through the editor (`workspace/applyEdit`, the
buffer's unsaved text kept: the server read it from the editor, and wrote nothing
to its own disk). Run apart from the main suite, as `test_lsp_front`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities

from protocol import types as acp
from tests.support.agent import write_script
from tests.support.app_server import cursor_of, running_server, socket_client
from tests_lsp.editor import BUFFER, FIX, ON_DISK, Editor, replaced_text

pytestmark = pytest.mark.asyncio

PROBLEM = types.Diagnostic(
    range=types.Range(
        start=types.Position(line=1, character=6), end=types.Position(line=1, character=11)
    ),
    message='"valeu" is not defined',
    source="pyflakes",
)


async def test_an_editor_attached_to_the_server_shares_its_session_live(
    start: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A short home: the server's socket path must fit a Unix socket's 108 bytes.
    home = tmp_path_factory.mktemp("srv")
    script = write_script(home / "script.json", *FIX)
    async with running_server(home, script=script) as server:
        attached = ("--connect", "--socket", str(server.socket))
        editor: Editor = await start(
            client_capabilities("visual-studio-code"), args=attached, home=home
        )
        uri = await editor.open("app.py", BUFFER)
        status = await editor.command("acp-agent.status")
        session_id = status["sessionId"]

        async with socket_client(server.socket) as observer:
            await observer.attach(session_id, role="observer", replay="start")
            fix = next(
                action
                for action in await editor.client.text_document_code_action_async(
                    types.CodeActionParams(
                        text_document=types.TextDocumentIdentifier(uri=uri),
                        range=PROBLEM.range,
                        context=types.CodeActionContext(diagnostics=[PROBLEM]),
                    )
                )
                or []
                if isinstance(action, types.CodeAction) and "Fix" in action.title
            )
            assert fix.command is not None
            started = await editor.command(fix.command.command, *(fix.command.arguments or []))
            reply = await editor.message(lambda text: "typo" in text)
            await editor.until(lambda: _said(observer, session_id) == "Fixed the typo.")
            live = [n for n in observer.updates if n.session_id == session_id]

        assert started["sessionId"] == session_id
        assert reply == "Fixed the typo."
        # The edit reached the editor, annotated for the person to confirm, made to the
        # open buffer (its unsaved comment kept): the server read the editor's text...
        (applied,) = editor.edits
        annotations = applied.edit.change_annotations or {}
        assert [a.needs_confirmation for a in annotations.values()] == [True]
        assert replaced_text(applied.edit) == "value = 1\nprint(value)  # unsaved\n"
        # ...and wrote nothing to its own disk: the editor applies the change.
        assert (editor.folder / "app.py").read_text() == ON_DISK
        # The turn's steps showed as work-done progress, as embedded.
        ((_token, reports),) = editor.client.progress_reports.items()
        steps = [getattr(r, "message", None) or "" for r in reports]
        assert any(step.startswith("Running: ") for step in steps)
        assert isinstance(reports[-1], types.WorkDoneProgressEnd)
        # The observer followed the turn live, each update with its cursor.
        asked = [
            u.content.text
            for n in live
            if isinstance(u := n.update, acp.UserMessageChunk)
            and isinstance(u.content, acp.TextContent)
        ]
        assert len(asked) == 1
        assert '"valeu" is not defined' in asked[0]
        assert any(isinstance(n.update, acp.ToolCall) for n in live)
        assert all(cursor_of(n) is not None for n in live)

        # The editor restarts: the folder gets the same session on the server back.
        await editor.close()
        again: Editor = await start(client_capabilities("neovim"), args=attached, home=home)
        resumed = await again.command("acp-agent.status")
        assert resumed["sessionId"] == session_id
        assert resumed["title"] is not None


async def test_with_no_server_the_editor_is_told_how_to_start_one(
    start: Callable[..., Any], tmp_path: Path
) -> None:
    socket = tmp_path / "none.sock"
    editor: Editor = await start(
        client_capabilities("neovim"), args=("--connect", "--socket", str(socket))
    )

    told = await editor.message(lambda text: "no acp-agent server" in text)

    assert str(socket) in told
    assert "acp-agent server" in told
    with pytest.raises(Exception, match="no acp-agent server"):
        await editor.command("acp-agent.ask", "Hello")


def _said(client: Any, session_id: str) -> str:
    """The agent's text the ACP client was sent for the session."""
    return "".join(
        u.content.text
        for u in client.updates_for(session_id)
        if isinstance(u, acp.AgentMessageChunk) and isinstance(u.content, acp.TextContent)
    )
