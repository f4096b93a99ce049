"""The editor's files as a session's tools see them: open buffers in, confirmed edits out.

Reads return the editor's open document for a path (`didOpen`/`didChange`), so the
agent works on what the person sees, unsaved changes included; other files come
from the disk. A write becomes one `workspace/applyEdit` replacing the document:
annotated as needing confirmation where the client confirms annotated edits (VS Code),
else after the person allowed it (`_asking`); a change the person rejects raises
`EditRejected` and leaves the file as it was. A client that cannot apply the edit
(no `workspace/applyEdit`, or a new file it cannot create) gets it written to disk,
still only once allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import anyio
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path

from acp_agent.adapters.lsp_front._approvals import Decision
from acp_agent.adapters.lsp_front._asking import Asker
from acp_agent.adapters.lsp_front._editor import EditorTraits
from acp_agent.adapters.lsp_front._requests import request
from acp_agent.toolkit import DEFAULT_REQUEST_TIMEOUT_S, NoClient

__all__ = ("ANNOTATION_ID", "EditRejected", "EditorFiles", "replacing_edit")

#: The change annotation every edit of the agent carries.
ANNOTATION_ID: Final = "acp-agent"


class EditRejected(PermissionError):
    """The person rejected the change (or the editor did not apply it): nothing changed."""


def _end_of(text: str) -> types.Position:
    """The position just past `text`'s last character (UTF-16 columns, LSP's default)."""
    line = text.count("\n")
    last = text[text.rfind("\n") + 1 :]
    return types.Position(line=line, character=len(last.encode("utf-16-le")) // 2)


def replacing_edit(
    path: str, old: str | None, new: str, *, annotated: bool, document_changes: bool
) -> types.WorkspaceEdit:
    """The workspace edit that turns `path` from `old` (None: it does not exist) into `new`."""
    uri = from_fs_path(path) or path
    whole = types.Range(start=types.Position(line=0, character=0), end=_end_of(old or ""))
    if not (annotated or document_changes or old is None):
        return types.WorkspaceEdit(changes={uri: [types.TextEdit(range=whole, new_text=new)]})
    text_edit: types.TextEdit | types.AnnotatedTextEdit = (
        types.AnnotatedTextEdit(range=whole, new_text=new, annotation_id=ANNOTATION_ID)
        if annotated
        else types.TextEdit(range=whole, new_text=new)
    )
    changes: list[types.TextDocumentEdit | types.CreateFile] = []
    if old is None:
        changes.append(
            types.CreateFile(
                uri=uri,
                options=types.CreateFileOptions(ignore_if_exists=True),
                annotation_id=ANNOTATION_ID if annotated else None,
            )
        )
    document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None)
    changes.append(types.TextDocumentEdit(text_document=document, edits=[text_edit]))
    annotations = None
    if annotated:
        name = Path(path).name
        annotations = {
            ANNOTATION_ID: types.ChangeAnnotation(
                label="acp-agent's change",
                needs_confirmation=True,
                description=f"acp-agent changes {name}",
            )
        }
    return types.WorkspaceEdit(document_changes=changes, change_annotations=annotations)


class EditorFiles(NoClient):
    """The `ClientBridge` of one session of the LSP front end (see the module docstring):
    files through the editor; no terminals (`NoClient`'s)."""

    can_read_files = True
    can_write_files = True

    def __init__(
        self,
        server: LanguageServer,
        traits: EditorTraits,
        asker: Asker,
        *,
        folder: str,
        request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
    ) -> None:
        self._server = server
        self._traits = traits
        self._asker = asker
        self._folder = folder
        self._timeout_s = self.request_timeout_s = request_timeout_s
        #: The person answered "always for this kind" to an edit of this session.
        self.edits_allowed = False

    def open_text(self, path: str) -> str | None:
        """The editor's text of `path` if it has the document open."""
        uri = from_fs_path(path)
        if uri is None:
            return None
        document = self._server.workspace.text_documents.get(uri)
        return None if document is None else document.source

    async def read_text_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        text = self.open_text(path)
        if text is None:
            text = await anyio.Path(path).read_text(encoding="utf-8")
        if line is None and limit is None:
            return text
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        return "".join(lines[start : None if limit is None else start + limit])

    async def write_text_file(self, path: str, content: str) -> None:
        old = self.open_text(path)
        if old is None and await anyio.Path(path).is_file():
            old = await anyio.Path(path).read_text(encoding="utf-8", errors="replace")
        through_editor = self._traits.applies_edits and (
            old is not None or (self._traits.creates_files and self._traits.document_changes)
        )
        if through_editor and self._traits.annotations and not self.edits_allowed:
            edit = replacing_edit(path, old, content, annotated=True, document_changes=True)
            await self._apply(edit, confirmed_by_person=True)
            return
        plain = replacing_edit(
            path, old, content, annotated=False, document_changes=self._traits.document_changes
        )
        if not self.edits_allowed:
            answer = await self._asker.ask(
                f"acp-agent wants to change {_shown(path, self._folder)} "
                f"({_summary(old, content)}).",
                folder=self._folder,
                title="Apply acp-agent's change (1 file)",
                edit=plain if through_editor else None,
                files=(path,),
            )
            if answer.decision is Decision.REJECT:
                raise EditRejected(f"the person rejected the change to {path}; it was not made")
            if answer.decision is Decision.ALLOW_ALWAYS:
                self.edits_allowed = True
            if answer.applied:
                return  # the code action carried the edit, and the editor applied it
        if through_editor:
            await self._apply(plain, confirmed_by_person=False)
        else:
            await anyio.Path(path).write_text(content, encoding="utf-8")

    async def _apply(self, edit: types.WorkspaceEdit, *, confirmed_by_person: bool) -> None:
        result = await request(
            self._server,
            types.WORKSPACE_APPLY_EDIT,
            types.ApplyWorkspaceEditParams(edit=edit, label="acp-agent's change"),
            # A confirmation waits for the person; a plain edit only for the editor.
            timeout_s=None if confirmed_by_person else self._timeout_s,
        )
        if not getattr(result, "applied", False):
            reason = getattr(result, "failure_reason", None)
            raise EditRejected(
                "the change was rejected in the editor; nothing was changed"
                + (f" ({reason})" if reason else "")
            )


def _shown(path: str, folder: str) -> str:
    try:
        return str(Path(path).relative_to(folder))
    except ValueError:
        return path


def _summary(old: str | None, new: str) -> str:
    if old is None:
        return f"a new file of {new.count(chr(10)) + 1} lines"
    before, after = old.splitlines(), new.splitlines()
    changed = sum(1 for a, b in zip(before, after, strict=False) if a != b)
    changed += abs(len(before) - len(after))
    return f"{changed} line{'s' if changed != 1 else ''} changed"
