"""A session's `session/update` stream: every published event, in timeline order.

`SessionStream` is the editor's subscriber on a session (through the session
handle's `subscribe`, which also tells a prompt once its turn's end went out
through it, so no update of a turn follows its response): it sends each
published event's updates as they are delivered. Nothing an event holds can
stop it: an event it cannot show is logged with its seq and shown plainer, or
as a notice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from acp_agent.agent import Event, new_id
from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.errors import ConnectionClosed, MessageTooDeep
from protocol.text_chunks import TextChunks, encode_text_chunks

if TYPE_CHECKING:
    from acp_agent.adapters.acp._replay import Replayed
    from acp_agent.agent import ReplayStep

__all__ = ("Keeper", "SessionStream", "Translator", "in_writes")

logger = logging.getLogger(__name__)

#: A replay writes its updates in writes of about this many bytes.
_REPLAY_WRITE_BYTES: Final = 256 * 1024


class Translator(Protocol):
    """Makes the `session/update`s of one event (an `UpdateTranslator`, or one wrapping it)."""

    def streamed_text(self, event: Event) -> TextChunks | None:
        """The event's updates if it is streamed text, as chunks; None for any other event.

        What `translate` would return for it, as typed updates; either call learns the
        event (call one of them per event)."""
        ...

    def translate(self, event: Event) -> list[types.SessionUpdate]: ...

    def learn(self, event: Event) -> None:
        """Learn what `translate` would from `event`, making no update (history the client
        has, or was sent by a replay)."""
        ...


class Keeper(Protocol):
    """Takes the events a stream delivered, in order (`_replay_kept.ReplayKeeper`)."""

    def feed(self, events: Iterable[Event]) -> None:
        """Never raises."""
        ...


class SessionStream:
    """Sends a session's updates in timeline order.

    An event that cannot be shown (its translation or its encoding fails) is
    logged with its seq and shown plainer, or as a short notice, and the stream
    goes on, so its turn still ends.
    """

    #: Whether a replay's lines are the same for every client with these capabilities, so
    #: a load may send lines kept from an earlier one (`_replay_kept`): no cursors in them,
    #: nothing after a step. A stream that adds either says False.
    keeps_replay: ClassVar[bool] = True

    def __init__(
        self, connection: AgentConnection, session_id: str, translator: Translator
    ) -> None:
        self._connection = connection
        self._session_id = session_id
        self.translator = translator
        self._gone = False
        #: What keeps the replay's lines as turns end (`_replay_kept.ReplayKeeper`), fed
        #: every delivered event after it is shown; None: nothing is kept.
        self.keeper: Keeper | None = None

    @property
    def name(self) -> str:
        return f"acp session/update {self._session_id}"

    async def handle(self, event: Event) -> None:
        self.show(event, self.translator)
        if self.keeper is not None:
            self.keeper.feed((event,))

    def show(self, event: Event, translator: Translator) -> None:
        """Send the updates `translator` makes of `event`; never raises."""
        try:
            chunks = translator.streamed_text(event)
            if chunks is not None:
                self._send_text(chunks, event.seq)
                return
            updates = translator.translate(event)
        except Exception:
            logger.exception(
                "event %d (%s) of session %s could not be translated; a notice is shown instead",
                event.seq,
                type(event.payload).__name__,
                self._session_id,
            )
            updates = [_notice(event.seq)]
        for update in updates:
            self.send(update, seq=event.seq)

    def learn(self, event: Event) -> None:
        """Let the live translator learn an event of the history, sending nothing."""
        try:
            self.translator.learn(event)
        except Exception:
            logger.exception(
                "event %d of session %s could not be learnt from", event.seq, self._session_id
            )

    def send_replay(self, steps: Sequence[tuple[ReplayStep, Sequence[Replayed]]]) -> None:
        """Send a replay's updates (`_replay.replayed`), in order, a few writes for all of
        them; never raises. An update that cannot be encoded goes plainer, as in `send`."""
        for lines in self.replay_writes(steps):
            self._write_lines(lines)

    def replay_writes(
        self, steps: Sequence[tuple[ReplayStep, Sequence[Replayed]]]
    ) -> Iterator[list[bytes]]:
        """A replay's lines, encoded, in writes of about `_REPLAY_WRITE_BYTES` (for a sender
        that waits for its client between them)."""
        return in_writes(self.step_lines(step, updates) for step, updates in steps)

    def step_lines(self, step: ReplayStep, updates: Sequence[Replayed]) -> list[bytes]:
        """The lines that show one replayed step (its updates, encoded)."""
        lines: list[bytes] = []
        for shown in updates:
            meta = self._replay_meta(shown.cursor)
            update = shown.update
            if isinstance(update, TextChunks):
                line: bytes | None = encode_text_chunks(
                    self._session_id, update, metas=None if meta is None else [meta]
                )
            else:
                line = self._encoded(update, shown.cursor[0], meta)
            if line is not None:
                lines.append(line)
        lines.extend(self._replayed(step))
        return lines

    def update_line(self, update: types.SessionUpdate) -> bytes | None:
        """`update` as a replay sends it, with no cursor (None: it cannot be sent)."""
        return self._encoded(update, 0, None)

    def _replay_meta(self, cursor: tuple[int, int | None]) -> dict[str, Any] | None:
        """The `_meta` a replayed update carries, for the cursor it leaves the client at."""
        return None

    def _replayed(self, step: ReplayStep) -> list[bytes]:
        """Lines sent after a replayed step's updates (none here)."""
        return []

    def _encoded(
        self, update: types.SessionUpdate, seq: int, meta: dict[str, Any] | None
    ) -> bytes | None:
        """`update` as its notification's line, or plainer (see `send`); None: not even a
        notice could be (logged)."""
        for attempt in _attempts(update, seq):
            notification = types.SessionNotification(
                session_id=self._session_id, update=attempt, meta=meta
            )
            try:
                return self._connection.encode_notification(methods.SESSION_UPDATE, notification)
            except MessageTooDeep as exc:
                logger.warning(
                    "an update (%s) of session %s is sent plainer (event %d): %s",
                    attempt.session_update,
                    self._session_id,
                    seq,
                    exc,
                )
            except Exception:
                logger.exception(
                    "an update (%s) of session %s could not be sent (event %d)",
                    attempt.session_update,
                    self._session_id,
                    seq,
                )
        return None

    def write_lines(self, lines: list[bytes]) -> None:
        """Write encoded lines in one write (`replay_writes`); a client gone gets no more."""
        self._write_lines(lines)

    def _write_lines(self, lines: list[bytes]) -> None:
        if self._gone:
            return
        try:
            self._connection.notify_encoded(b"\n".join(lines))
        except ConnectionClosed:
            self._client_gone()

    def send(self, update: types.SessionUpdate, *, seq: int | None = None) -> None:
        """Send one update now; a client that went away gets no more (and no error).

        An update that cannot be encoded is replaced by a plainer form of it (a
        tool call without its raw input and output), or by a notice.
        """
        if self._gone:
            return
        for attempt in _attempts(update, seq):
            try:
                self._notify(attempt)
            except ConnectionClosed:
                self._client_gone()
                return
            except MessageTooDeep as exc:
                logger.warning(
                    "an update (%s) of session %s is sent plainer (event %s): %s",
                    attempt.session_update,
                    self._session_id,
                    "?" if seq is None else seq,
                    exc,
                )
                continue
            except Exception:
                logger.exception(
                    "an update (%s) of session %s could not be sent (event %s)",
                    attempt.session_update,
                    self._session_id,
                    "?" if seq is None else seq,
                )
                continue
            return

    def _send_text(self, chunks: TextChunks, seq: int) -> None:
        """Streamed text, encoded from a template and written at once (see `text_chunks`)."""
        if self._gone:
            return
        try:
            self._connection.notify_text_chunks(self._session_id, chunks)
        except ConnectionClosed:
            self._client_gone()
        except Exception:
            logger.exception(
                "streamed text of session %s could not be sent (event %d); sent typed instead",
                self._session_id,
                seq,
            )
            for update in chunks.updates():
                self.send(update, seq=seq)

    def _client_gone(self) -> None:
        self._gone = True
        logger.info("the client is gone; updates of session %s are dropped", self._session_id)

    def _notify(self, update: types.SessionUpdate) -> None:
        self._connection.notify(
            methods.SESSION_UPDATE,
            types.SessionNotification(session_id=self._session_id, update=update),
        )

    def close(self) -> None:
        """Send nothing more (the session was closed)."""
        self._gone = True


def in_writes(lines_by_step: Iterable[list[bytes]]) -> Iterator[list[bytes]]:
    """Lines in writes of about `_REPLAY_WRITE_BYTES` each (a replay's thousands of updates
    in a few writes)."""
    lines: list[bytes] = []
    size = 0
    for step_lines in lines_by_step:
        for line in step_lines:
            lines.append(line)
            size += len(line)
        if size >= _REPLAY_WRITE_BYTES:
            yield lines
            lines, size = [], 0
    if lines:
        yield lines


def _attempts(update: types.SessionUpdate, seq: int | None) -> Iterator[types.SessionUpdate]:
    """`update`, then its plainer forms, then a notice: each made only once the one before
    could not be sent (nearly every update goes as it is, and a replay sends thousands)."""
    yield update
    for make in (_without_raw, _plainer):
        plainer = make(update)
        if plainer is not None:
            yield plainer
    yield _notice(seq)


def _without_raw(update: types.SessionUpdate) -> types.SessionUpdate | None:
    """A tool call without its raw input and output (free-form JSON, the likeliest to fail),
    its status and content kept; None for any other update, or one without either."""
    if not isinstance(update, types.ToolCall | types.ToolCallProgress):
        return None
    if update.raw_input is None and update.raw_output is None:
        return None
    return types.evolve(update, raw_input=None, raw_output=None)


def _plainer(update: types.SessionUpdate) -> types.SessionUpdate | None:
    """The update without what is most likely to fail: free-form JSON (a tool call's raw
    input and output, a content block's `_meta`)."""
    if isinstance(update, types.UserMessageChunk | types.AgentMessageChunk):
        content = update.content
        if getattr(content, "meta", None) is None:
            return None
        return types.evolve(update, content=types.evolve(content, meta=None), meta=None)
    if isinstance(update, types.ToolCall):
        return types.ToolCall(
            tool_call_id=update.tool_call_id,
            title=update.title,
            kind=update.kind,
            status=update.status,
            content=[_notice_content()],
        )
    if isinstance(update, types.ToolCallProgress):
        return types.ToolCallProgress(
            tool_call_id=update.tool_call_id, status=update.status, content=[_notice_content()]
        )
    return None


def _notice_content() -> types.ToolCallContent:
    return types.Content(content=types.TextContent(text=_NOTICE))


def _notice(seq: int | None) -> types.SessionUpdate:
    where = "" if seq is None else f" (event {seq})"
    # A message of its own, named the same each time the event is shown.
    message_id = new_id("msg") if seq is None else f"notice_{seq}"
    return types.AgentMessageChunk(
        content=types.TextContent(text=f"\n\n[{_NOTICE}{where}]\n\n"), message_id=message_id
    )


#: What the person reads in place of something that could not be shown.
_NOTICE = "acp-agent: part of this could not be shown; the agent log has the details"
