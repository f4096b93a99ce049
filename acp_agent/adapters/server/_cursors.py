"""Cursors: a place in a session's updates, carried by each update an attached client gets.

Every update to an attached client carries its cursor in
`_meta["acp-agent"].cursor`: `"<seq>:<part>"`, the event it was made of (its
seq in the timeline of the line of work whose session it is on: the session's
main line, or a branch shown as a child session) and its place among that
event's updates; `"<seq>"` means all of that event (updates not made of an
event carry the position reached). A client resumes after any cursor it got.

`CursoredStream` is a session stream that stamps its updates so, and resumes
after a cursor: events before the cursor's are learnt, not sent, and the parts
of the cursor's own event up to it are left out. `resume_point` says where its
delivery starts (a batch end) for a cursor. A replay (`adapters.acp._replay`)
sends fewer updates than the events made live (a message in one chunk, a tool
call once); each carries the cursor it leaves the client at, so a replay resumes
after a cursor any stream gave.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from acp_agent.adapters.acp._stream import SessionStream, Translator
from acp_agent.agent import Event, Seq
from acp_agent.values import Value
from protocol import methods, types
from protocol.errors import ConnectionClosed, InvalidParams

if TYPE_CHECKING:
    from acp_agent.adapters.acp._replay import Replayed
    from acp_agent.agent import ReplayStep
    from protocol.connection import AgentConnection
    from protocol.text_chunks import TextChunks

__all__ = ("META_KEY", "Cursor", "CursoredStream", "resume_point")

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
    def parse(cls, text: object, *, name: str = "cursor") -> Cursor:
        """A cursor as a client sends it back; -32602 if it is not one."""
        match = _CURSOR.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidParams(f"Invalid params: {name}: not a cursor this agent gave: {text!r}")
        part = match.group(2)
        return cls(int(match.group(1)), None if part is None else int(part))

    def __str__(self) -> str:
        return str(self.seq) if self.part is None else f"{self.seq}:{self.part}"


def resume_point(
    covered: Seq, events: Sequence[Event], cursor: Cursor, *, name: str = "cursor"
) -> tuple[Seq, Cursor | None]:
    """Where a delivery resuming after `cursor` starts (a batch end), and the cursor whose
    event's earlier parts the client has (a cursor inside a batch; None: none).

    `events`: the published events of the stream up to `covered`, in order, from its
    first (seq 1 for a session; a child's own, after the point it branched off at)."""
    first = int(events[0].seq) if events else int(covered) + 1
    if cursor.seq > covered or cursor.seq < first - 1:
        raise InvalidParams(
            f"Invalid params: {name}: {cursor} is not within the stream ({first - 1} to {covered})"
        )
    if cursor.seq == first - 1:
        return Seq(cursor.seq), None  # before anything of it: from its start
    index = cursor.seq - first
    event = events[index]
    if cursor.part is None and (cursor.seq == covered or events[index + 1].starts_batch):
        return Seq(cursor.seq), None  # a batch end: the client has all of it
    return Seq(int(event.batch_id) - 1), cursor


class CursoredStream(SessionStream):
    """A session stream whose updates carry their cursors while `stamped` (see the module
    docstring). After each delivered event it waits while the client is behind
    (`writable`), so a slow client holds back only its own delivery."""

    #: Its replays' lines carry cursors: none is kept for another load.
    keeps_replay = False

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
        #: Updates carry their cursors.
        self.stamped = True
        #: The last event delivered (all of its updates sent or learnt).
        self.position = 0
        self._current: int | None = None
        self._part = 0
        #: Resuming after a cursor inside an event: its parts up to here were seen.
        self._skip: Cursor | None = None

    def show(self, event: Event, translator: Translator) -> None:
        if not self.stamped:
            super().show(event, translator)
            return
        self._current, self._part = int(event.seq), 0
        try:
            super().show(event, translator)
        finally:
            self._current = None

    def deliver(self, event: Event) -> bool:
        """Show a delivered event through the live translator, leaving out what the client
        has when resuming after a cursor (an event before the cursor's is learnt); whether
        it was shown (its parts after the cursor's)."""
        seq = int(event.seq)
        skip = self._skip
        if skip is not None and seq < skip.seq:
            self.learn(event)  # the rest of a batch before the cursor's event
            return False
        try:
            self.show(event, self.translator)
        finally:
            self._skip = None
        return True

    def _replay_meta(self, cursor: tuple[int, int | None]) -> dict[str, Any] | None:
        """A replayed update's cursor: the one it leaves the client at (`adapters.acp._replay`)."""
        return {META_KEY: {"cursor": str(Cursor(*cursor))}} if self.stamped else None

    async def send_replay_paced(
        self, steps: Sequence[tuple[ReplayStep, Sequence[Replayed]]]
    ) -> None:
        """`send_replay`, waiting while the client is behind between writes (as delivery
        waits between events): a long session's replay is not all held for a slow reader."""
        for lines in self.replay_writes(steps):
            self.write_lines(lines)
            await self.wait_writable()
            if self._gone:
                return

    async def wait_writable(self) -> None:
        """Wait while the client is behind; a client gone gets nothing more."""
        try:
            await self._writable()
        except (BrokenPipeError, ConnectionError, OSError):
            self._client_gone()

    def _send_text(self, chunks: TextChunks, seq: int) -> None:
        if not self.stamped or self._gone:
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
        if not self.stamped:
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
