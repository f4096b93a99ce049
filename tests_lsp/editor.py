"""What the tests of `acp-agent lsp` share: a started language server and what its editor saw.

`start_editor` starts the server (embedded, or `--connect`ed to an app server) for a
workspace folder with `app.py` on disk, driven by pytest-lsp's client with the
capabilities of a real editor: VS Code (annotated edits it confirms), Neovim
(message requests) or a Helix-like client (neither: proposals as code actions).
"""

from __future__ import annotations

import asyncio
import copy
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Union

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from tests.support.agent import agent_env, write_script

#: How long a test waits for something the server should do promptly.
WAIT_S = 30.0

#: Read the file, fix it, say so: a turn that changes one file.
FIX = (
    [{"tool_call": {"name": "read", "arguments": {"path": "app.py"}}}],
    [
        {
            "tool_call": {
                "name": "edit",
                "arguments": {"path": "app.py", "old_text": "valeu", "new_text": "value"},
            }
        }
    ],
    [{"text": "Fixed the typo."}],
)

BUFFER = "value = 1\nprint(valeu)  # unsaved\n"
ON_DISK = "value = 1\nprint(valeu)\n"


def helix_like() -> types.ClientCapabilities:
    """A client like Helix: applies edits, but no change annotations and no message
    requests served (it answers them -32601: no handler is registered)."""
    capabilities = copy.deepcopy(client_capabilities("neovim"))
    assert capabilities.workspace is not None
    assert capabilities.window is not None
    capabilities.workspace.workspace_edit = types.WorkspaceEditClientCapabilities(
        document_changes=True
    )
    capabilities.window.show_document = None
    return capabilities


class Editor:
    """A started server, its client, and what the editor saw."""

    def __init__(self, client: LanguageClient, folder: Path, home: Path) -> None:
        self.client = client
        self.folder = folder
        self.home = home
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.questions: list[types.ShowMessageRequestParams] = []
        self.apply_answer = True
        self.question_answer: str | None = "Allow once"
        self.closed = False

    async def close(self) -> None:
        """Shut the server down as an editor does (`shutdown`, `exit`), once."""
        if not self.closed:
            self.closed = True
            await self.client.shutdown_session()
            await self.client.stop()

    async def open(self, name: str, text: str) -> str:
        uri = from_fs_path(str(self.folder / name)) or ""
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=text
                )
            )
        )
        return uri

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(arguments))
        )

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait (bounded) until `condition` holds for what the editor has seen."""

        async def polled() -> None:
            # What the client records has no event to wait on: poll it.
            while not condition():  # noqa: ASYNC110
                await asyncio.sleep(0.05)

        await asyncio.wait_for(polled(), WAIT_S)

    async def message(self, matches: Callable[[str], bool]) -> str:
        """The first message shown that `matches`, once one is (bounded wait)."""
        await self.until(lambda: any(matches(m.message) for m in self.client.messages))
        return next(m.message for m in self.client.messages if matches(m.message))


HELIX = helix_like()


def read_code_actions_as_editors_do(client: LanguageClient) -> None:
    """lsprotocol 2025.0.0 reads every item with a `command` key as a `Command`, so a code
    action that runs one would lose its title, kind and edit; an editor tells them apart
    by the type of `command` (a string in a `Command`)."""
    converter = client.protocol._converter

    def structure(item: Any, _: type) -> types.Command | types.CodeAction:
        kind = types.Command if isinstance(item.get("command"), str) else types.CodeAction
        return converter.structure(item, kind)

    converter.register_structure_hook(types.Command | types.CodeAction, structure)
    converter.register_structure_hook(
        Union[types.Command, types.CodeAction],  # noqa: UP007 - the hook's own spelling
        structure,
    )


def replaced_text(edit: types.WorkspaceEdit) -> str:
    """The new text of the one document `edit` replaces."""
    if edit.document_changes:
        (change,) = [c for c in edit.document_changes if isinstance(c, types.TextDocumentEdit)]
        (text_edit,) = change.edits
        return text_edit.new_text
    assert edit.changes is not None
    ((_, (text_edit,)),) = edit.changes.items()
    return text_edit.new_text


async def start_editor(
    started: list[Editor],
    tmp_path: Path,
    capabilities: types.ClientCapabilities,
    *replies: list[dict[str, Any]],
    args: Sequence[str] = (),
    home: Path | None = None,
) -> Editor:
    """Start `acp-agent lsp` (with `args`) for `tmp_path/project`, its `app.py` on disk,
    and initialize it as an editor with `capabilities` would; kept in `started`."""
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    (folder / "app.py").write_text(ON_DISK)
    home = home or tmp_path / "home"
    script = write_script(tmp_path / "script.json", *(replies or FIX))
    client = make_test_lsp_client()
    read_code_actions_as_editors_do(client)
    editor = Editor(client, folder, home)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        editor.edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=editor.apply_answer)

    if capabilities is not HELIX:  # Helix answers -32601: no handler

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def question(params: types.ShowMessageRequestParams) -> Any:
            editor.questions.append(params)
            answer = editor.question_answer
            return None if answer is None else types.MessageActionItem(title=answer)

    await client.start_io(
        sys.executable,
        "-m",
        "acp_agent",
        "lsp",
        "--home",
        str(home),
        "--script",
        str(script),
        *args,
        env=agent_env(),
    )
    started.append(editor)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            workspace_folders=[
                types.WorkspaceFolder(uri=from_fs_path(str(folder)) or "", name="project")
            ],
        )
    )
    return editor
