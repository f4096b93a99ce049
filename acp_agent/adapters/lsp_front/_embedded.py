"""The front end's sessions in this process's runtime, through its handle.

`acp-agent lsp` without `--connect`: the runtime runs here, and a folder's
session is a `SessionHandle` the front end opens with the editor's side (its
files through the editor, its questions asked there). A session is open in one
process at a time: one an app server holds is refused, saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp_agent.adapters.lsp_front._asking import Asker
from acp_agent.adapters.lsp_front._files import EditorFiles
from acp_agent.adapters.lsp_front._prompter import EditorPrompter
from acp_agent.adapters.lsp_front._session import (
    FolderSession,
    RewindFailed,
    StepReporter,
    TurnEnd,
)
from acp_agent.adapters.lsp_front._transcript import render_transcript
from acp_agent.adapters.lsp_front._watcher import TurnWatcher
from acp_agent.adapters.lsp_front._workspaces import WorkspaceSessions
from acp_agent.agent import (
    Agent,
    NoRewindPoint,
    RewindRefused,
    SessionBusy,
    SessionHandle,
    SessionHeld,
    SessionSubscription,
    StoreNotFound,
    TurnEnded,
    TurnSlot,
    UserInputAdopted,
    hidden_ranges,
    is_hidden,
)
from acp_agent.content import TextContent

__all__ = ("EmbeddedSession", "EmbeddedSessions")

logger = logging.getLogger(__name__)


class EmbeddedSession(FolderSession):
    """A folder's session in this process (see the module docstring)."""

    def __init__(
        self,
        folder: str,
        files: EditorFiles,
        handle: SessionHandle,
        subscription: SessionSubscription,
        watcher: TurnWatcher,
    ) -> None:
        super().__init__(folder, files)
        self.handle = handle
        self._subscription = subscription
        self._watcher = watcher
        #: The running turn's place in the queue, while one runs.
        self._slot: TurnSlot | None = None

    @property
    def id(self) -> str:
        return str(self.handle.id)

    @property
    def title(self) -> str | None:
        return self.handle.title

    @property
    def model(self) -> str | None:
        return self.handle.controls.model_id

    @property
    def mode(self) -> str:
        return str(self.handle.controls.mode)

    @property
    def running(self) -> bool:
        return self._slot is not None

    @property
    def alive(self) -> bool:
        return bool(self.handle.open)

    async def run(self, prompt: str, report: StepReporter) -> TurnEnd:
        self._watcher.watch(report)
        try:
            async with self.handle.turn_slot() as slot:
                self._slot = slot
                if slot.cancelled:
                    return TurnEnd("", cancelled=True)
                turn = await slot.start([TextContent(prompt)])
                outcome = await turn.outcome(seen_by=self._subscription)
                reply = self._watcher.stop()
                await self._title_after_exchange(prompt)
                if slot.cancelled or not isinstance(outcome.ending, TurnEnded):
                    return TurnEnd(reply, cancelled=True)
                failure = None if outcome.failure is None else outcome.failure.message
                return TurnEnd(reply, failure=failure)
        finally:
            self._watcher.stop()
            self._slot = None

    async def _title_after_exchange(self, prompt: str) -> None:
        """The session's title after its first exchange, from the prompt (as ACP sessions)."""
        from acp_agent.agent import title_from_prompt

        if self.handle.title is None:
            title = title_from_prompt([TextContent(prompt)])
            if title:
                await self.handle.set_title(title)

    async def cancel(self) -> int:
        return await self.handle.cancel()

    async def last_message(self) -> str | None:
        _, events = await self.handle.history()
        hidden = hidden_ranges(events)
        asked = [
            e.payload.input_id
            for e in events
            if isinstance(e.payload, UserInputAdopted) and not is_hidden(int(e.seq), hidden)
        ]
        return asked[-1] if asked else None

    async def rewind(self, message_id: str) -> dict[str, Any]:
        try:
            outcome = await self.handle.rewind(message_id)
        except (SessionBusy, NoRewindPoint, RewindRefused) as exc:
            raise RewindFailed(str(exc)) from None
        return outcome.as_json()

    async def transcript(self) -> str:
        _, events = await self.handle.history()
        return render_transcript(self.handle.title, events)

    async def close(self) -> None:
        await self.handle.close()


class EmbeddedSessions:
    """Opens folders' sessions in this process's runtime, remembering which is whose."""

    def __init__(
        self,
        agent: Callable[[], Awaitable[Agent]],
        *,
        data_dir: Path,
        mode: str | None = None,
    ) -> None:
        self._agent = agent
        self._mode = mode
        self._workspaces = WorkspaceSessions(data_dir / "lsp" / "sessions.json")

    async def open(self, folder: str, files: EditorFiles, asker: Asker) -> FolderSession:
        from acp_agent.agent import FrontEnd

        agent = await self._agent()
        front_end = FrontEnd(client=files, prompter=EditorPrompter(asker, folder=folder))
        handle = None
        stored = self._workspaces.session_of(folder)
        if stored is not None:
            try:
                handle = await agent.load(stored, front_end)
                await handle.activate(None)
            except StoreNotFound:
                logger.info("session %s of %s is gone; a new one starts", stored, folder)
            except SessionHeld:
                raise ValueError(
                    f"the session of {folder} is open in another acp-agent process (an app "
                    "server? then start the language server with --connect)"
                ) from None
        if handle is None:
            handle = await agent.new_session(folder, front_end, mode=self._mode)
            self._workspaces.remember(folder, handle.id)
        watcher = TurnWatcher()
        subscription = await handle.subscribe(watcher, after=None)
        return EmbeddedSession(folder, files, handle, subscription, watcher)

    async def problem(self) -> str | None:
        """None: the runtime opens on first use, and says what fails then."""
        return None

    async def aclose(self) -> None:
        """Nothing of its own: the runtime is closed by whoever built it."""
