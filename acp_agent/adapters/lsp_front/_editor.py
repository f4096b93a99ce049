"""What the editor on the other end can do, read once from its `initialize` capabilities.

The LSP front end picks how it shows progress, how it asks the person and how an edit
reaches the files from these: clients differ widely (VS Code confirms annotated edits,
Neovim asks with message requests, Helix has neither).
"""

from __future__ import annotations

import attrs
from lsprotocol import types

from acp_agent.values import Value

__all__ = ("EditorTraits",)


@attrs.frozen
class EditorTraits(Value):
    """The client capabilities the front end acts on."""

    #: `workspace/applyEdit` (edits go through the editor's buffers).
    applies_edits: bool = False
    #: `documentChanges` in a workspace edit (needed for annotated edits).
    document_changes: bool = False
    #: Change annotations: an edit can ask the person to confirm it in the editor.
    annotations: bool = False
    #: A workspace edit may create files.
    creates_files: bool = False
    #: `window/showMessageRequest` is declared (a client may still answer -32601).
    message_requests: bool = False
    #: `window/showDocument` (the transcript opens in the editor).
    shows_documents: bool = False
    #: Work-done progress the server starts (`window/workDoneProgress/create`).
    progress: bool = False

    @classmethod
    def of(cls, capabilities: types.ClientCapabilities | None) -> EditorTraits:
        """The traits `capabilities` declare (none declared: none)."""
        if capabilities is None:
            return cls()
        workspace = capabilities.workspace
        window = capabilities.window
        edit = workspace.workspace_edit if workspace is not None else None
        operations = (edit.resource_operations or ()) if edit is not None else ()
        return cls(
            applies_edits=bool(workspace is not None and workspace.apply_edit),
            document_changes=bool(edit is not None and edit.document_changes),
            annotations=bool(
                edit is not None
                and edit.document_changes
                and edit.change_annotation_support is not None
            ),
            creates_files=types.ResourceOperationKind.Create in operations,
            message_requests=window is not None and window.show_message is not None,
            shows_documents=bool(
                window is not None
                and window.show_document is not None
                and window.show_document.support
            ),
            progress=bool(window is not None and window.work_done_progress),
        )
