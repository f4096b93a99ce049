"""A load's replay from lines kept with the session, translating only what is new.

Translating a long history into updates was most of a `session/load`, and every
load translated the same events into the same lines again. So the lines a replay
sends are kept with the session, in chunks (`SessionHandle.keep_replay`): the live
stream keeps one as each turn ends (`ReplayKeeper`), and a load keeps what it had
to translate (`replay_kept`). A load sends the chunks it can use as they are and
translates only the events after them.

A chunk holds the lines of the events `(after, last]` and is used only while the
full translation would give the same lines:

- **the same client and code**: chunks are kept under a key of the session, what
  the client takes (the replay translator's settings) and the files of the code
  that translates and encodes (`replay_key`);
- **a chain from the start**: the first chunk starts at 0, each at the last one's
  end, none past what is published;
- **nothing joined it later**: a replay shows a tool call, a branch or a
  compaction once, where it first appeared, in its last state; an event after the
  chunk that is part of a thing the chunk shows ends the chunks usable there;
- **nothing hidden since**: a rewind recorded after the chunk that takes back
  events up to its end ends them too;
- **text does not run on**: a chunk never ends on a delta (a reply's text is
  one chunk of all its deltas).

The session's usage is shown once, where it last grew (`_replay`): a chunk keeps
its lines without it and where it last grew in them; the load puts the update
there, or in what it translated, with the usage of the whole history. A chunk
that cannot be kept or read costs nothing but the translation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

import attrs

from acp_agent.adapters.acp._replay import replayed_apart
from acp_agent.adapters.acp._stream import SessionStream, in_writes
from acp_agent.adapters.acp._updates import UpdateTranslator
from acp_agent.agent import (
    ConversationRewound,
    Event,
    ModelReasoningDelta,
    ModelTextDelta,
    ReplayStep,
    SessionHandle,
    StepKind,
    TurnEnded,
    TurnInterrupted,
    item_key,
)

__all__ = ("KeptChunk", "ReplayKeeper", "kept_chunks", "replay_kept", "replay_key")

logger = logging.getLogger(__name__)

#: The chunks' own format; a change of it starts new chunks.
_FORMAT: Final = 1
#: A chunk bigger than this is not kept (its lines stay whole in memory until written).
_CHUNK_LIMIT_BYTES: Final = 32 * 1024 * 1024
#: The files of the code that decides a replay's lines (part of the key), by package.
_CODE: Final = {
    "acp_agent": (
        "adapters/acp/_replay.py",
        "adapters/acp/_replay_kept.py",
        "adapters/acp/_stream.py",
        "adapters/acp/_updates.py",
        "adapters/acp/_job_rows.py",
        "adapters/acp/_notices.py",
        "adapters/acp_content.py",
        "agent/_replay.py",
        "agent/_usage.py",
        "content.py",
    ),
    "protocol": (
        "_dispatch.py",
        "_types_handshake.py",
        "_types_others.py",
        "_types_prompts.py",
        "_types_sessions.py",
        "converter.py",
        "text_chunks.py",
        "types.py",
    ),
}


@attrs.frozen
class KeptChunk:
    """The lines that show the events `(after, last]`, joined by newlines."""

    after: int
    last: int
    body: bytes
    #: Where in `body` the usage update goes if the usage last grew in these events (the
    #: end of the line it follows); None: it did not grow here.
    usage_at: int | None
    #: The shown things (`item_key`) these lines show.
    items: frozenset[tuple[str, str]]

    def encode(self) -> bytes:
        return _header(self.after, self.last, self.usage_at, self.items) + b"\n" + self.body

    @classmethod
    def decode(cls, data: bytes) -> KeptChunk | None:
        """The chunk `encode` made; None for anything else."""
        head, newline, body = data.partition(b"\n")
        try:
            header = json.loads(head) if newline else None
            if not isinstance(header, dict) or header.get("format") != _FORMAT:
                return None
            after, last, usage_at = header["after"], header["last"], header["usage_at"]
            items = frozenset((str(kind), str(name)) for kind, name in header["items"])
        except (ValueError, KeyError, TypeError):
            return None
        if not (isinstance(after, int) and isinstance(last, int) and 0 <= after < last):
            return None
        if usage_at is not None and not (isinstance(usage_at, int) and 0 <= usage_at <= len(body)):
            return None
        return cls(after, last, body, usage_at, items)

    def with_usage(self, line: bytes | None) -> bytes:
        """The body, with the usage update `line` where the usage last grew in it."""
        at = self.usage_at
        if line is None or at is None:
            return self.body
        if at == 0:
            return line + b"\n" + self.body if self.body else line
        return self.body[:at] + b"\n" + line + self.body[at:]


def replay_key(session_id: str, translator: UpdateTranslator, unstable: bool) -> str:
    """The key a session's replay chunks are kept under for a client this translator (and
    connection) translates for, with today's code (see the module docstring)."""
    settings = (
        _FORMAT,
        session_id,
        translator.terminal_output,
        translator.compaction_updates,
        translator.subagents,
        translator.plan_operations,
        unstable,
        _code_stamp(),
    )
    return hashlib.sha256(repr(settings).encode()).hexdigest()[:32]


_stamp: str | None = None


def _code_stamp() -> str:
    """The files of the code that makes a replay's lines, by size and time changed (a new
    version or an edited file starts new chunks); read once per process."""
    global _stamp
    if _stamp is None:
        import acp_agent
        import protocol
        from acp_agent import __version__

        roots = {"acp_agent": acp_agent.__file__, "protocol": protocol.__file__}
        parts: list[Any] = [__version__, sys.version_info[:2]]
        for package, files in _CODE.items():
            root = os.path.dirname(roots[package] or "")
            for name in files:
                try:
                    stat = os.stat(os.path.join(root, name))
                except OSError:
                    parts.append((package, name, None))
                else:
                    parts.append((package, name, stat.st_size, stat.st_mtime_ns))
        _stamp = repr(parts)
    return _stamp


# --- a load ---------------------------------------------------------------------------


async def kept_chunks(handle: SessionHandle, key: str) -> list[KeptChunk]:
    """The chunks kept under `key`, up to the first that cannot be read."""
    chunks: list[KeptChunk] = []
    for data in await handle.kept_replay(key):
        chunk = KeptChunk.decode(data)
        if chunk is None:
            break
        chunks.append(chunk)
    return chunks


def replay_kept(
    handle: SessionHandle,
    stream: SessionStream,
    translator: UpdateTranslator,
    key: str,
    kept: Sequence[KeptChunk],
    shown: Sequence[Event],
    covered: int,
    hidden: Sequence[tuple[int, int]],
    *,
    later: Callable[[Callable[[], None]], None],
) -> ReplayKeeper | None:
    """Send the replay of `shown` (the events up to `covered` a rewind did not hide) from
    the `kept` chunks that can be used (`kept_chunks`) and `translator`'s updates of the
    rest. What it translated is kept by `later(keep)`, which calls `keep` once the load
    is answered (so the answer never waits for it). Returns a keeper that goes on from
    `covered` when the chunks then reach it, else None.
    """
    chunks = _usable(kept, shown, covered, hidden)
    after = chunks[-1].last if chunks else 0
    steps, grown = replayed_apart(
        shown, translator, translator, after=(after, None) if chunks else None
    )
    usage = [line for u in translator.usage_update() if (line := stream.update_line(u))]
    usage_line = usage[0] if usage else None
    # Encoded step by step and written as the writes fill, so the client reads the first
    # while the rest are encoded; `lines` keeps each step's for the chunk kept after.
    lines: list[list[bytes]] = []

    def sent() -> Iterator[list[bytes]]:
        for body in _bodies(chunks, None if grown else usage_line):
            yield [body]
        usage_after = grown[-1] if grown and usage_line is not None else None
        for index, (step, updates) in enumerate(steps):
            step_lines = stream.step_lines(step, updates)
            lines.append(step_lines)
            yield step_lines
            if index == usage_after and usage_line is not None:
                yield [usage_line]

    for write in in_writes(sent()):
        stream.write_lines(write)

    start = len(chunks)
    items: set[tuple[str, str]] = set()
    for used in chunks:
        items |= used.items
    if after < covered and _closes(shown[-1], lines):
        # What `keep` holds until the answer is out: bytes, not the steps and updates they
        # were made from (tens of thousands of objects the collector would walk).
        shown_items = _items(step for step, _ in steps)

        def keep() -> None:
            encoded = _encoded_chunk(after, covered, lines, grown, shown_items)
            handle.keep_replay(key, start, [encoded])
            keeper.take_items(shown_items)

        keeper = ReplayKeeper(
            handle, stream, key, translator, after=covered, index=start + 1, items=items
        )
        later(keep)
        return keeper
    if len(kept) > start:
        later(lambda: handle.keep_replay(key, start, []))  # no longer usable: gone
    if after < covered:
        return None
    return ReplayKeeper(handle, stream, key, translator, after=covered, index=start, items=items)


def _usable(
    kept: Sequence[KeptChunk],
    shown: Sequence[Event],
    covered: int,
    hidden: Sequence[tuple[int, int]],
) -> list[KeptChunk]:
    """The chunks a load can send as they are (see the module docstring)."""
    chain: list[KeptChunk] = []
    after = 0
    for chunk in kept:
        if chunk.after != after or chunk.last > covered:
            break
        # A rewind after the chunk that hides some of it (one before it, it knew).
        if any(start <= chunk.last < end for start, end in hidden):
            break
        chain.append(chunk)
        after = chunk.last
    if not chain:
        return chain
    later = {key for event in shown if event.seq > after if (key := item_key(event))}
    usable = len(chain)
    for index in range(len(chain) - 1, -1, -1):
        if chain[index].items & later:
            usable = index
        later |= chain[index].items
    return chain[:usable]


def _bodies(chunks: Sequence[KeptChunk], usage_line: bytes | None) -> Iterable[bytes]:
    """The chunks' lines to send, the usage update in the last chunk where it grew."""
    grew = max((i for i, chunk in enumerate(chunks) if chunk.usage_at is not None), default=None)
    for index, chunk in enumerate(chunks):
        body = chunk.with_usage(usage_line if index == grew else None)
        if body:
            yield body


def _closes(last: Event, lines: Sequence[Sequence[bytes]]) -> bool:
    """Whether the lines of events up to `last` may be kept as a chunk: not text that may
    run on, not too big to hold."""
    if isinstance(last.payload, ModelTextDelta | ModelReasoningDelta):
        return False
    return sum(len(line) + 1 for step_lines in lines for line in step_lines) <= _CHUNK_LIMIT_BYTES


def _items(steps: Iterable[ReplayStep]) -> frozenset[tuple[str, str]]:
    """The shown things (`item_key`) `steps` show."""
    return frozenset(
        key for step in steps if step.kind is StepKind.ITEM if (key := item_key(step.events[0]))
    )


def _encoded_chunk(
    after: int,
    last: int,
    lines: Sequence[Sequence[bytes]],
    grown: Sequence[int],
    items: frozenset[tuple[str, str]],
) -> bytes:
    """The chunk of the events `(after, last]`, shown in its steps' `lines`, the usage
    having grown in steps `grown`, showing `items`, as `KeptChunk.encode` writes it: in
    one join (a turn with a big result holds its lines once more, not twice)."""
    usage_at: int | None = None
    if grown:
        shown = [line for step_lines in lines[: grown[-1] + 1] for line in step_lines]
        usage_at = sum(len(line) for line in shown) + max(len(shown) - 1, 0)
    header = _header(after, last, usage_at, items)
    flat = [line for step_lines in lines for line in step_lines]
    return b"\n".join([header, *flat]) if flat else header + b"\n"


def _header(
    after: int, last: int, usage_at: int | None, items: frozenset[tuple[str, str]]
) -> bytes:
    header = {
        "format": _FORMAT,
        "after": after,
        "last": last,
        "usage_at": usage_at,
        "items": sorted(items),
    }
    return json.dumps(header, separators=(",", ":")).encode()


# --- the live stream --------------------------------------------------------------------


class ReplayKeeper:
    """Keeps a chunk of the replay's lines as each turn of the main line ends, from the
    events the live stream delivers (`feed`), with a replay translator of its own that
    has translated everything before them.

    It stops for good at anything its chunks could not follow: a delivered event out
    of order (one it missed), a rewind, an event of a thing an earlier chunk shows, a
    failure. A later load translates from where it stopped, and keeps that.
    """

    def __init__(
        self,
        handle: SessionHandle,
        stream: SessionStream,
        key: str,
        translator: UpdateTranslator,
        *,
        after: int,
        index: int,
        items: set[tuple[str, str]],
    ) -> None:
        self._handle = handle
        self._stream = stream
        self._key = key
        self._translator = translator
        self._after = after
        self._index = index
        self._items = items
        self._events: list[Event] = []
        self._stopped = False

    @property
    def stopped(self) -> bool:
        return self._stopped

    def feed(self, events: Iterable[Event]) -> None:
        """Take events of the main line, in order; never raises."""
        if self._stopped:
            return
        try:
            for event in events:
                expected = (self._events[-1].seq if self._events else self._after) + 1
                payload = event.payload
                key = item_key(event)
                if (
                    event.seq != expected
                    or isinstance(payload, ConversationRewound)
                    or (key is not None and key in self._items)
                ):
                    self._stop(f"event {event.seq} ({type(payload).__name__})")
                    return
                self._events.append(event)
                if isinstance(payload, TurnEnded | TurnInterrupted):
                    self._keep()
        except Exception:
            logger.exception("keeping the replay of %s failed; loads translate it", self._key)
            self._stopped = True
            self._events.clear()

    def take_items(self, items: Iterable[tuple[str, str]]) -> None:
        """Note the shown things of a chunk kept before this keeper's first."""
        self._items |= set(items)

    def _keep(self) -> None:
        events = self._events
        steps, grown = replayed_apart(events, self._translator, self._translator)
        lines = [self._stream.step_lines(step, updates) for step, updates in steps]
        if not _closes(events[-1], lines):
            self._stop("a turn too big to keep")
            return
        items = _items(step for step, _ in steps)
        last = int(events[-1].seq)
        self._handle.keep_replay(
            self._key, self._index, [_encoded_chunk(self._after, last, lines, grown, items)]
        )
        self._index += 1
        self._after = last
        self._items |= items
        self._events = []

    def _stop(self, why: str) -> None:
        logger.debug("replay of key %s no longer kept live: %s", self._key, why)
        self._stopped = True
        self._events.clear()
