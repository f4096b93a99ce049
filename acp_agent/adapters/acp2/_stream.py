"""One v2 session's `session/update` stream: events shown as v2 upserts, each with its cursor.

Every update made from an event carries its cursor in `_meta["acp-agent"].cursor`,
`"<seq>:<part>"` (the event's seq and the update's place among that event's updates),
the form the app server gives attached clients. `session/resume` replays from the
start, or after any cursor a client got (`{"type": "_acp-agent/after", "cursor": ...}`):
one translator per stream sees every event of the session once, in order, replayed or
live, so an event's updates and their numbering are the same either way, and the
replay sends them joined where they can be (`show_replay`, `joined`), each with the
cursor of the last it holds.

The foreground state comes from the timeline too: a person's message that begins a
turn is `running` (before its `user_message_chunk`s; one that joined the running
turn is only its chunks), a turn's end `idle` with its stop
reason, an interrupted turn `idle` / `cancelled`. A permission question in between
is `requires_action`, then `running` again (`asking`; those carry no cursor). Every
snapshot lists the background work, the main line's jobs (`_jobs`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from acp_agent.adapters.acp2._jobs import BackgroundJobs
from acp_agent.adapters.acp2._wire import state_idle, state_update, v2_updates
from acp_agent.agent import (
    ConversationRewound,
    Event,
    SessionMetadataChanged,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultRecorded,
    TurnEnded,
    TurnInterrupted,
    UserInputAdopted,
)
from protocol.converter import shared_converter
from protocol.errors import ConnectionClosed

if TYPE_CHECKING:
    from acp_agent.adapters.acp._updates import UpdateTranslator
    from protocol.connection import AgentConnection

__all__ = ("META_KEY", "V2Stream", "V2Translator", "joined")

logger = logging.getLogger(__name__)

#: Our extensions live under this key of `_meta`.
META_KEY: Final = "acp-agent"
#: About how many bytes of a replay's lines go in one write.
_REPLAY_WRITE_BYTES: Final = 256 * 1024


class V2Translator:
    """The live translator, plus what a client that did not send it cannot know: the
    person's messages (v2 echoes them), titles and rewind marks (as a replay shows them)."""

    def __init__(self, live: UpdateTranslator, replay: UpdateTranslator) -> None:
        self._live = live
        self._replay = replay
        #: The main line's jobs running, as this stream has seen them (`_jobs`).
        self.jobs = BackgroundJobs()
        #: The foreground state the events leave (re-sent when a job starts or ends).
        self._foreground = state_update("idle")

    def bodies(self, event: Event) -> list[dict[str, Any]]:
        """The v2 update bodies of `event`, in order (its cursor parts are their places)."""
        payload = event.payload
        shown_by = (
            self._replay
            if isinstance(payload, UserInputAdopted | SessionMetadataChanged | ConversationRewound)
            else self._live
        )
        wire = shared_converter(include_unstable=True)
        bodies: list[dict[str, Any]] = []
        if isinstance(payload, UserInputAdopted) and payload.begins_turn:
            bodies.append(self._now(state_update("running")))
        for update in shown_by.translate(event):
            bodies.extend(v2_updates(wire.unstructure(update)))
        if isinstance(payload, ToolResultRecorded) and payload.outcome.value == "interrupted":
            # Cut short while it ran: v2 has a status for that.
            for body in bodies:
                if body.get("toolCallId") == payload.call_id and "status" in body:
                    body["status"] = "cancelled"
        if isinstance(payload, ToolCallRequested | ToolCallStarted | ToolResultRecorded):
            _cancel_control(bodies, str(payload.call_id))
        if isinstance(payload, TurnEnded):
            bodies.append(self._now(state_idle(payload.stop_reason.value)))
        elif isinstance(payload, TurnInterrupted):
            bodies.append(self._now(state_idle("cancelled")))
        if shown := self.jobs.bodies(payload):
            # A job's terminal, then the snapshot listing it (or no longer listing it).
            bodies.extend([*shown, dict(self._foreground)])
        return bodies

    def _now(self, state: dict[str, Any]) -> dict[str, Any]:
        self._foreground = state
        return dict(state)


#: The chunks whose consecutive pieces of one message a replay joins.
_CHUNKS: Final = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})


def joined(earlier: dict[str, Any], later: dict[str, Any]) -> dict[str, Any] | None:
    """One update that leaves a client as `earlier` then `later` would, or None.

    Two pieces of plain text of one message (same kind, same `messageId`, nothing but
    the text) are one chunk of both; two upserts of one tool call without `_meta` (v2
    upserts: a field given replaces the one before, null clears it) are one upsert of
    the fields of both, the later's winning. Anything else is not joined.
    """
    kind = earlier.get("sessionUpdate")
    if kind != later.get("sessionUpdate"):
        return None
    if kind in _CHUNKS:
        text = _plain_text(earlier)
        more = _plain_text(later)
        if text is None or more is None or earlier["messageId"] != later["messageId"]:
            return None
        return {**earlier, "content": {"type": "text", "text": text + more}}
    if kind == "tool_call_update":
        if "_meta" in earlier or "_meta" in later:
            return None
        if earlier.get("toolCallId") != later.get("toolCallId"):
            return None
        return {**earlier, **later}
    return None


def _plain_text(body: dict[str, Any]) -> str | None:
    """The text of a chunk of plain text with a message id and nothing else, else None."""
    if body.keys() != {"sessionUpdate", "messageId", "content"} or not body["messageId"]:
        return None
    content = body["content"]
    if not isinstance(content, dict) or content.keys() != {"type", "text"}:
        return None
    text = content["text"]
    return text if content["type"] == "text" and isinstance(text, str) else None


def _cancel_control(bodies: list[dict[str, Any]], call_id: str) -> None:
    """A call that waits or runs offers `tool_call/cancel` (`capabilities.cancel`); a
    final one no longer does (null clears it)."""
    for body in bodies:
        if body.get("sessionUpdate") == "tool_call_update" and body.get("toolCallId") == call_id:
            if body.get("status") in ("pending", "in_progress"):
                body["capabilities"] = {"cancel": {}}
            elif body.get("status") in ("completed", "failed", "cancelled"):
                body["capabilities"] = None


class V2Stream:
    """A session's v2 updates to one client (see the module docstring); a subscriber."""

    def __init__(
        self,
        connection: AgentConnection,
        session_id: str,
        translator: V2Translator,
        *,
        writable: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """`writable` waits while the client is behind (the app server's clients)."""
        self._connection = connection
        self._writable = writable
        #: Permission questions waiting for this client (`asking`).
        self._questions = 0
        self._session_id = session_id
        self._translator = translator
        self._gone = False

    @property
    def name(self) -> str:
        return f"acp v2 session/update {self._session_id}"

    async def handle(self, event: Event) -> None:
        self.show(event)
        if self._writable is not None and not self._gone:
            await self._writable()

    def show(self, event: Event, *, after: tuple[int, int] | None = None) -> int:
        """Send `event`'s updates, those past cursor `after` only; returns how many sent."""
        try:
            bodies = self._translator.bodies(event)
        except Exception:
            logger.exception(
                "event %d of session %s could not be translated", event.seq, self._session_id
            )
            return 0
        sent = 0
        seq = int(event.seq)
        for part, body in enumerate(bodies):
            if after is not None and (seq, part) <= after:
                continue
            self.send(body, cursor=f"{seq}:{part}")
            sent += 1
        return sent

    def show_replay(self, events: Sequence[Event], *, after: tuple[int, int] | None = None) -> int:
        """Send the updates of `events` past cursor `after` as a resume replays them, as few
        as it takes (`joined`), in writes of about `_REPLAY_WRITE_BYTES`; returns how many
        sent. Each carries the cursor of the last update it holds: what followed it live
        follows it here, so a resume from any cursor a client got has no gap and no
        duplicate."""
        held: tuple[dict[str, Any], str] | None = None
        sent = 0
        batch: list[bytes] = []
        size = 0

        def add(body: dict[str, Any], cursor: str) -> None:
            nonlocal sent, size
            if self._gone:
                return
            line = self._encoded(body, cursor)
            if line is None:
                return
            batch.append(line)
            sent += 1
            size += len(line)
            if size >= _REPLAY_WRITE_BYTES:
                self._write(b"\n".join(batch))
                batch.clear()
                size = 0

        for event in events:
            try:
                bodies = self._translator.bodies(event)
            except Exception:
                logger.exception(
                    "event %d of session %s could not be translated", event.seq, self._session_id
                )
                continue
            seq = int(event.seq)
            for part, body in enumerate(bodies):
                if after is not None and (seq, part) <= after:
                    continue
                cursor = f"{seq}:{part}"
                if body.get("sessionUpdate") == "state_update":
                    # The work listed as it was here, not when this is sent.
                    body = {**body, "background": self._translator.jobs.listed()}
                if held is not None:
                    together = joined(held[0], body)
                    if together is not None:
                        held = (together, cursor)
                        continue
                    add(*held)
                held = (body, cursor)
        if held is not None:
            add(*held)
        if batch and not self._gone:
            self._write(b"\n".join(batch))
        return sent

    @contextlib.contextmanager
    def asking(self) -> Iterator[None]:
        """A permission question waits for this client: the session's state is
        `requires_action` while any does, `running` again once none does (v2: work
        blocked on the person says so). No cursor: the state is not from the timeline."""
        self._questions += 1
        if self._questions == 1:
            self.send(state_update("requires_action"))
        try:
            yield
        finally:
            self._questions -= 1
            if not self._questions:
                self.send(state_update("running"))

    def restart(self, translator: V2Translator) -> None:
        """Translate afresh with `translator` (a resume replays the history through it)."""
        self._translator = translator

    def learn(self, event: Event) -> None:
        """Let the translator see an event of the history, sending nothing."""
        try:
            self._translator.bodies(event)
        except Exception:
            logger.exception(
                "event %d of session %s could not be learnt", event.seq, self._session_id
            )

    def send(self, body: dict[str, Any], *, cursor: str | None = None) -> None:
        """Send one update body now (typed as v2 first: one that does not fit is dropped,
        logged); a client that went away gets no more."""
        if self._gone:
            return
        line = self._encoded(body, cursor)
        if line is not None:
            self._write(line)

    def _encoded(self, body: dict[str, Any], cursor: str | None) -> bytes | None:
        """The line `send` would write for `body`, not written (a replay writes many at
        once); None if it does not fit (logged)."""
        from protocol.v2 import methods

        params = self._typed(body, cursor)
        if params is None:
            return None
        try:
            return self._connection.encode_notification(methods.SESSION_UPDATE, params)
        except Exception:
            logger.warning(
                "a %s update of session %s could not be encoded; not sent",
                body.get("sessionUpdate"),
                self._session_id,
                exc_info=True,
            )
            return None

    def _typed(self, body: dict[str, Any], cursor: str | None) -> Any:
        """`body` with its cursor as the v2 notification's params; None if it does not fit
        the v2 schema (logged)."""
        from protocol.v2 import types

        if body.get("sessionUpdate") == "state_update" and "background" not in body:
            body = {**body, "background": self._translator.jobs.listed()}
        if cursor is not None:
            meta = dict(body.get("_meta") or {})
            meta[META_KEY] = {**meta.get(META_KEY, {}), "cursor": cursor}
            body = {**body, "_meta": meta}
        wire = {"sessionId": self._session_id, "update": body}
        try:
            return shared_converter(include_unstable=True).structure(
                wire, types.UpdateSessionNotification
            )
        except Exception:
            logger.warning(
                "a %s update of session %s does not fit the v2 schema; not sent",
                body.get("sessionUpdate"),
                self._session_id,
                exc_info=True,
            )
            return None

    def _write(self, lines: bytes) -> None:
        """Write encoded lines (joined by newlines) in one write."""
        try:
            self._connection.notify_encoded(lines)
        except ConnectionClosed:
            self._gone = True
            logger.info("the client is gone; updates of session %s are dropped", self._session_id)

    def close(self) -> None:
        """Send nothing more (the session was closed)."""
        self._gone = True
