"""One workspace folder's session as the LSP front end holds it, wherever it runs.

The session is either this process's (`_embedded`: the runtime's handle) or an
app server's (`_attached`: over ACP, shared with the server's other clients);
the front end drives both through this one face, `FolderSession`, and opens
them through a `SessionOpener`.
"""

from __future__ import annotations

import abc
from typing import Any, Protocol

import attrs

from acp_agent.adapters.lsp_front._asking import Asker
from acp_agent.adapters.lsp_front._files import EditorFiles
from acp_agent.adapters.lsp_front._watcher import StepReporter
from acp_agent.values import Value

__all__ = ("FolderSession", "RewindFailed", "SessionOpener", "StepReporter", "TurnEnd")


class RewindFailed(Exception):
    """The session could not go back (a turn runs, no such message, a conflict refused)."""


@attrs.frozen
class TurnEnd(Value):
    """How a turn of the front end's ended."""

    #: The model's text, each model request's a paragraph.
    reply: str
    cancelled: bool = False
    #: Why the model failed, when it did.
    failure: str | None = None


class FolderSession(abc.ABC):
    """A folder's open session: what the editor's commands do to it."""

    def __init__(self, folder: str, files: EditorFiles) -> None:
        self.folder = folder
        #: The folder's files as the editor has them.
        self.files = files
        #: The running turn's progress token, while one runs.
        self.progress_token: str | None = None
        #: The last reply, for `acp-agent.status`.
        self.last_reply: str | None = None
        #: What the person should know of how the session was opened (shown once).
        self.note: str | None = None

    @property
    @abc.abstractmethod
    def id(self) -> str:
        """The session's id (in the store this front end's sessions live in)."""

    @property
    @abc.abstractmethod
    def title(self) -> str | None: ...

    @property
    @abc.abstractmethod
    def model(self) -> str | None: ...

    @property
    @abc.abstractmethod
    def mode(self) -> str: ...

    @property
    @abc.abstractmethod
    def running(self) -> bool:
        """A turn of this front end's runs (or waits for its place)."""

    @property
    @abc.abstractmethod
    def alive(self) -> bool:
        """Still usable: not closed, its server still connected."""

    @abc.abstractmethod
    async def run(self, prompt: str, report: StepReporter) -> TurnEnd:
        """Run one turn of `prompt`, its steps told to `report`; how it ended."""

    @abc.abstractmethod
    async def cancel(self) -> int:
        """Cancel the session's running turn; how many prompts were cancelled."""

    @abc.abstractmethod
    async def last_message(self) -> str | None:
        """The id of the person's last message still in the conversation, if any."""

    @abc.abstractmethod
    async def rewind(self, message_id: str) -> dict[str, Any]:
        """Go back to just before `message_id` (`_acp-agent/rewind`'s answer);
        `RewindFailed` when it cannot."""

    @abc.abstractmethod
    async def transcript(self) -> str:
        """The conversation as Markdown."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop holding the session (idempotent)."""


class SessionOpener(Protocol):
    """Where the front end's sessions live: this process's runtime, or an app server."""

    async def open(self, folder: str, files: EditorFiles, asker: Asker) -> FolderSession:
        """`folder`'s session, resumed from the last time or new; `ValueError` saying why
        it cannot be had (the person reads it)."""
        ...

    async def problem(self) -> str | None:
        """Why no session can be had now (no server answers), or None: asked once the
        editor is initialized, so the person learns it before a command fails."""
        ...

    async def aclose(self) -> None:
        """Close what the opener holds once every session is closed."""
        ...
