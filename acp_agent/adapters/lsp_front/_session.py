"""One workspace folder's session as the LSP front end holds it."""

from __future__ import annotations

import attrs

from acp_agent.adapters.lsp_front._files import EditorFiles
from acp_agent.adapters.lsp_front._watcher import TurnWatcher
from acp_agent.agent import SessionHandle, SessionSubscription, TurnSlot

__all__ = ("FolderSession",)


@attrs.define
class FolderSession:
    """A folder's open session: its handle, what follows it, its files as the editor has them."""

    folder: str
    handle: SessionHandle
    subscription: SessionSubscription
    watcher: TurnWatcher
    files: EditorFiles
    #: The running turn's place in the queue, while one runs.
    slot: TurnSlot | None = None
    #: The running turn's progress token, while one runs.
    progress_token: str | None = None
    #: The last reply, for `acp-agent.status`.
    last_reply: str | None = None
