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
  them), each update carrying its cursor in `_meta["acp-agent"].cursor`:
  `"<seq>:<part>"`, the event's seq and the update's place among that
  event's updates. A client resumes after any cursor it got (`"<seq>"` means
  all of that event). Updates not made from an event (commands, settings)
  carry the position reached, `"<seq>"`. Attached clients are also told of
  the main line's jobs as they start and end (`_jobs`).

After each event the view waits while the client is behind
(`writable`): a slow client holds back only its own delivery, which then
catches up from the timeline. A client that is gone costs nothing more
than translating: its prompts still finish (the server keeps their work).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

import anyio
import attrs

from acp_agent.adapters.acp._stream import SessionStream, Translator
from acp_agent.adapters.server._jobs import JOB_METHOD, job_notice
from acp_agent.agent import (
    ConversationRewound,
    Event,
    SessionMetadataChanged,
    UsageTally,
    UserInputAdopted,
)
from acp_agent.values import Value
from protocol import methods, types
from protocol.errors import ConnectionClosed, InvalidParams

if TYPE_CHECKING:
    from acp_agent.adapters.acp._updates import UpdateTranslator
    from protocol.connection import AgentConnection
    from protocol.text_chunks import TextChunks

__all__ = ("META_KEY", "AttachedTranslator", "Cursor", "SessionView")

logger = logging.getLogger(__name__)

#: Our extensions live under this key of `_meta`.
META_KEY: Final = "acp-agent"
_CURSOR = re.compile(r"(0|[1-9][0-9]{0,17})(?::(0|[1-9][0-9]{0,8}))?")


@attrs.frozen
class Cursor(Value):
    """A place in a session's updates: after event `seq`'s update `part` (None: all of it)."""

    seq: int
    part: int | None = None

    @classmethod
    def parse(cls, text: object) -> Cursor:
        """A cursor as a client sends it back; -32602 if it is not one."""
        match = _CURSOR.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidParams(f"Invalid params: cursor: not a cursor this agent gave: {text!r}")
        part = match.group(2)
        return cls(int(match.group(1)), None if part is None else int(part))

    def __str__(self) -> str:
        return str(self.seq) if self.part is None else f"{self.seq}:{self.part}"


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
        if isinstance(event.payload, UserInputAdopted | SessionMetadataChanged):
            return self._replay.translate(event)
        if isinstance(event.payload, ConversationRewound):
            return self._replay.translate(event)
        return self._live.translate(event)


class SessionView(SessionStream):
    """One connection's stream of one session (see the module docstring)."""

    def __init__(
        self,
        connection: AgentConnection,
        session_id: str,
        translator: Translator,
        *,
        writable: Callable[[], Awaitable[None]],
    ) -> None:
        super().__init__(connection, session_id, translator)
        self._writable = writable
        #: This connection's turns: (published position when it began, when it ended).
        self._windows: list[tuple[int, int | None]] = []
        #: Attached: every event is shown, each update with its cursor.
        self.attached = False
        #: The last event delivered (all of its updates sent or learnt).
        self.position = 0
        self._current: int | None = None
        self._part = 0
        #: Resuming after a cursor inside an event: its parts up to here were seen.
        self._skip: Cursor | None = None
        #: Holds live events (after `_ready_at`) until the attach's answer is out.
        self._hold: anyio.Event | None = None
        self._ready_at = 0

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
        self.attached = True
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
        self.attached = False
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
            if skip is not None and seq < skip.seq:
                self.learn(event)  # the rest of a batch before the cursor's event
            else:
                self._current, self._part = seq, 0
                try:
                    self.show(event, self.translator)
                    self._tell_job(event)
                finally:
                    self._current = None
                    if skip is not None and seq >= skip.seq:
                        self._skip = None
        elif self._own(seq):
            self.show(event, self.translator)
        else:
            self.learn(event)
        self.position = seq
        try:
            await self._writable()
        except (BrokenPipeError, ConnectionError, OSError):
            self._client_gone()

    def _tell_job(self, event: Event) -> None:
        """A job of the main line started or ended: `_acp-agent/job` (see `_jobs`)."""
        if self._gone or (self._skip is not None and self._skip.seq >= event.seq):
            return
        meta = {META_KEY: {"cursor": str(Cursor(int(event.seq)))}}
        params = job_notice(self._session_id, event, meta)
        if params is None:
            return
        try:
            self._connection.notify(JOB_METHOD, params)
        except ConnectionClosed:
            self._client_gone()

    def _send_text(self, chunks: TextChunks, seq: int) -> None:
        if not self.attached or self._gone:
            super()._send_text(chunks, seq)
            return
        # The template's fast path, each chunk with its cursor; parts the client has
        # (resuming inside this event) are left out.
        skip = self._skip
        seen = -1
        if skip is not None and skip.seq == seq:
            seen = len(chunks.texts) if skip.part is None else skip.part
        parts = range(self._part, self._part + len(chunks.texts))
        kept = [(part, text) for part, text in zip(parts, chunks.texts, strict=True) if part > seen]
        self._part += len(chunks.texts)
        if not kept:
            return
        shown = attrs.evolve(chunks, texts=[text for _, text in kept])
        metas = [{META_KEY: {"cursor": str(Cursor(seq, part))}} for part, _ in kept]
        try:
            self._connection.notify_text_chunks(self._session_id, shown, metas=metas)
        except ConnectionClosed:
            self._client_gone()
        except Exception:
            logger.exception(
                "streamed text of session %s (event %d) not sent", self._session_id, seq
            )

    def _notify(self, update: types.SessionUpdate) -> None:
        if not self.attached:
            super()._notify(update)
            return
        if self._current is None:
            cursor = Cursor(self.position)
        else:
            skip = self._skip
            if (
                skip is not None
                and skip.seq == self._current
                and (skip.part is None or self._part <= skip.part)
            ):
                self._part += 1
                return  # the client has this one
            cursor = Cursor(self._current, self._part)
        self._connection.notify(
            methods.SESSION_UPDATE,
            types.SessionNotification(
                session_id=self._session_id,
                update=update,
                meta={META_KEY: {"cursor": str(cursor)}},
            ),
        )
        if self._current is not None:
            self._part += 1
