"""What one connection is shown of one session: its own turns, or, attached, everything.

`SessionView` is the connection's `session/update` stream of a session (the
ACP adapter's `SessionStream`, subscribed through the session handle). On the
server a session has other clients, so the view decides what reaches this
one:

- **Not attached** (a client as over stdio): only the events published while
  one of this connection's own prompts held the session's turn (its
  *windows*, opened and closed by `ServerSession.turn_slot`). Everything
  else is learnt, not sent, so its translator stays right: other clients'
  turns reach it at its next `session/load`, and nothing follows an answer.
- **Attached** (`_acp-agent/attach`): every event, translated by an
  `AttachedTranslator` (the live one, plus the person's messages, titles and
  rewind marks that a live stream otherwise leaves to the client that sent
  them), each update carrying its cursor (`_cursors`); an attach's replay
  sends what the client lacks in as few updates as it takes (`_attach`).
  Attached clients are also told of the main line's jobs as they start and end
  (`_jobs`), in a replay where they happened.

After each event the view waits while the client is behind
(`writable`): a slow client holds back only its own delivery, which then
catches up from the timeline. A client that is gone costs nothing more
than translating: its prompts still finish (the server keeps their work).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from acp_agent.adapters.server._cursors import META_KEY, Cursor, CursoredStream
from acp_agent.adapters.server._jobs import JOB_METHOD, job_notice
from acp_agent.agent import (
    ConversationRewound,
    Event,
    ReplayStep,
    SessionMetadataChanged,
    StepKind,
    UsageTally,
    UserInputAdopted,
)
from protocol.errors import ConnectionClosed

if TYPE_CHECKING:
    from acp_agent.adapters.acp._stream import Translator
    from acp_agent.adapters.acp._updates import UpdateTranslator
    from protocol import types
    from protocol.connection import AgentConnection
    from protocol.text_chunks import TextChunks

__all__ = ("META_KEY", "AttachedTranslator", "SessionView")

logger = logging.getLogger(__name__)


class AttachedTranslator:
    """The live translator, plus what only the client that sent it knows live: the
    person's messages, the title, a rewind's mark (as a replay shows them)."""

    def __init__(self, live: UpdateTranslator, replay: UpdateTranslator) -> None:
        self._live = live
        self._replay = replay

    @property
    def usage(self) -> UsageTally:
        """What the session used, as the live translator tallied it."""
        return self._live.usage

    def streamed_text(self, event: Event) -> TextChunks | None:
        return self._live.streamed_text(event)

    def translate(self, event: Event) -> list[types.SessionUpdate]:
        return self._for(event).translate(event)

    def learn(self, event: Event) -> None:
        self._for(event).learn(event)

    def _for(self, event: Event) -> UpdateTranslator:
        if isinstance(event.payload, UserInputAdopted | SessionMetadataChanged):
            return self._replay
        if isinstance(event.payload, ConversationRewound):
            return self._replay
        return self._live


class SessionView(CursoredStream):
    """One connection's stream of one session (see the module docstring)."""

    def __init__(
        self,
        connection: AgentConnection,
        session_id: str,
        translator: Translator,
        *,
        writable: Callable[[], Awaitable[None]],
    ) -> None:
        super().__init__(connection, session_id, translator, writable=writable)
        #: Not attached: only this connection's turns are shown, without cursors.
        self.stamped = False
        #: This connection's turns: (published position when it began, when it ended).
        self._windows: list[tuple[int, int | None]] = []
        #: Holds live events (after `_ready_at`) until the attach's answer is out.
        self._hold: anyio.Event | None = None
        self._ready_at = 0

    @property
    def attached(self) -> bool:
        """Every event is shown, each update with its cursor."""
        return self.stamped

    # --- its own turns (not attached) ------------------------------------------------

    def turn_began(self, position: int) -> None:
        """One of this connection's prompts holds the turn from after `position`."""
        self._windows.append((position, None))

    def turn_over(self, position: int) -> None:
        """That prompt's turn is over: events up to `position` were its own."""
        for i, (start, end) in enumerate(self._windows):
            if end is None:
                self._windows[i] = (start, position)
                return

    def _own(self, seq: int) -> bool:
        self._windows = [w for w in self._windows if w[1] is None or w[1] >= seq]
        return any(start < seq and (end is None or seq <= end) for start, end in self._windows)

    # --- attached --------------------------------------------------------------------

    def attach(self, translator: Translator, *, skip: Cursor | None, ready_at: int) -> None:
        """Show everything from now on through `translator`; live events (after `ready_at`)
        wait for `ready()`. `skip`: the cursor resumed after, whose event's earlier parts
        the client has."""
        self.translator = translator
        self.stamped = True
        self._skip = skip
        self._ready_at = ready_at
        self._hold = anyio.Event()

    def attach_ready_at(self, position: int) -> None:
        """The published position the attach's subscription started live from."""
        self._ready_at = position

    def ready(self) -> None:
        """The attach's answer is out: live events flow."""
        if self._hold is not None:
            self._hold.set()
            self._hold = None

    def detach(self, translator: Translator) -> None:
        """Back to this connection's own turns only, through `translator`."""
        self.translator = translator
        self.stamped = False
        self._skip = None
        self.ready()

    # --- delivery ----------------------------------------------------------------------

    async def handle(self, event: Event) -> None:
        hold = self._hold
        if hold is not None and event.seq > self._ready_at:
            await hold.wait()
        seq = int(event.seq)
        if self.attached:
            skip = self._skip
            # A job's notice goes with its event, unless the client had (part of) it.
            if self.deliver(event) and (skip is None or seq > skip.seq):
                self._tell_job(event)
        elif self._own(seq):
            self.show(event, self.translator)
        else:
            self.learn(event)
        self.position = seq
        await self.wait_writable()

    def _tell_job(self, event: Event) -> None:
        """A job of the main line started or ended: `_acp-agent/job` (see `_jobs`)."""
        if self._gone:
            return
        meta = {META_KEY: {"cursor": str(Cursor(int(event.seq)))}}
        params = job_notice(self._session_id, event, meta)
        if params is None:
            return
        try:
            self._connection.notify(JOB_METHOD, params)
        except ConnectionClosed:
            self._client_gone()

    def _replayed(self, step: ReplayStep) -> list[bytes]:
        """A replayed job's start or end, as live (`_tell_job`), where it happened."""
        if not self.attached or step.kind is not StepKind.SINGLE:
            return []
        event = step.events[0]
        meta = {META_KEY: {"cursor": str(Cursor(int(event.seq)))}}
        params = job_notice(self._session_id, event, meta)
        return [] if params is None else [self._connection.encode_notification(JOB_METHOD, params)]
