"""The full text of tool results truncated to their budget: kept in the store, read back by lines.

`FullResults.keep` puts the text a result was truncated from into the session's store
as its output `result/<call id>` (`Store.put_output`), a chunk of at most a
quarter of a million characters at a time, encoded as it goes: never joined or
encoded whole in memory. So it follows the session wherever the store does: an app server
that takes a session over reads the results its earlier turns produced.
`FullResults.read_lines` reads one back a chunk at a time for the
`read_result` tool (`_result_reader`), as numbered lines.

Results from before the store kept them are files,
`DIR/data/tool-results/<session>/<call>.txt`: a session's folder goes into the
store the first time the session opens here (`share_folder`, a mark in the
folder says it did), each file a chunk at a time, under the file's name, so
`read_result` finds them too.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import shutil
from collections.abc import AsyncGenerator, Iterator, Sequence
from pathlib import Path
from typing import Final

import anyio
import anyio.to_thread
import attrs

from acp_agent.core import SessionId, Store, StoreError
from acp_agent.values import Value

__all__ = ("LINE_CHARS", "RESULT_KEY_PREFIX", "FullResults", "ResultLines", "safe_name")

logger = logging.getLogger(__name__)

#: The store output of a call's full result is `result/<call id>`.
RESULT_KEY_PREFIX: Final = "result/"
#: A result goes into the store this many characters (or, from an old file, bytes) a chunk.
#: Each is encoded, then copied by SQLite as it is bound, on the store's thread: a chunk
#: of a million made a 1 MB MCP result's peak 1.55x a bare reader's, this one 1.2x
#: (`benchmarks/big_inputs.py`), and writing 16 MB took no longer.
_CHUNK_CHARS: Final = 1 << 18
#: A line longer than this is read back as several, each this long but the last.
LINE_CHARS: Final = 2000
#: In a session's folder of old results: they are in the store now.
_SHARED_MARK: Final = ".shared"


@attrs.frozen
class ResultLines(Value):
    """Lines of a kept result, as `FullResults.read_lines` found them."""

    #: The first line's number (from 1).
    first: int
    lines: tuple[str, ...]
    #: Whether the result ends with the last of `lines` (False: more follow).
    at_end: bool


class _Chunks:
    """`pieces` joined by newlines, as UTF-8 chunks of at most `_CHUNK_CHARS` characters.

    Iterable again from the start (a store retrying a write reads it twice); each chunk
    is encoded as it is asked for, so only one is in memory at a time.
    """

    def __init__(self, pieces: Sequence[str]) -> None:
        self._pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        for number, piece in enumerate(self._pieces):
            newline = "\n" if number else ""
            if not piece:
                if newline:
                    yield b"\n"
                continue
            for start in range(0, len(piece), _CHUNK_CHARS):
                text = piece[start : start + _CHUNK_CHARS]
                if start == 0 and newline:
                    text = newline + text
                yield text.encode("utf-8", "replace")


class _FileChunks:
    """A file's bytes, `_CHUNK_CHARS` bytes a chunk, read as they are asked for."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def __iter__(self) -> Iterator[bytes]:
        with self._path.open("rb") as file:
            while chunk := file.read(_CHUNK_CHARS):
                yield chunk


class FullResults:
    """Keeps and reads the full results of a store's sessions (see the module docstring).

    **Parameters:**

    * `store`: where they are kept (None: nowhere; the notes then say the rest is not kept).
    * `legacy_dir`: the folder results were kept in before the store kept them.
    """

    def __init__(self, store: Store | None, legacy_dir: Path | None = None) -> None:
        self.store = store
        self.legacy_dir = legacy_dir

    async def keep(self, session_id: str, call_id: str, pieces: Sequence[str]) -> bool:
        """Keep `pieces` joined by newlines as the call's full result; whether it was kept
        (a store that fails is logged: the capped copies are recorded all the same)."""
        if self.store is None:
            return False
        try:
            await self.store.put_output(SessionId(session_id), _key(call_id), _Chunks(pieces))
        except StoreError as exc:
            logger.warning("the full result of %s could not be kept: %s", call_id, exc)
            return False
        return True

    async def read_lines(
        self, session_id: str, call_id: str, first: int, count: int, *, max_chars: int
    ) -> ResultLines | None:
        """Lines `first` to `first + count - 1` of the call's full result (a line longer
        than `LINE_CHARS` counts as several), stopping before `max_chars` characters (one
        line at least); None when none is kept. Reads a chunk at a time, up to the one
        after the last line shown."""
        if self.store is None:
            return None
        session = SessionId(session_id)
        key = await self._find(session, call_id)
        if key is None:
            return None
        shown: list[str] = []
        chars = number = 0
        async with contextlib.aclosing(self._lines(session, key)) as lines:
            async for line in lines:
                number += 1
                if number < first:
                    continue
                if len(shown) == count or (shown and chars + len(line) + 1 > max_chars):
                    return ResultLines(first, tuple(shown), at_end=False)
                shown.append(line)
                chars += len(line) + 1
        return ResultLines(first, tuple(shown), at_end=True)

    async def _lines(self, session: SessionId, key: str) -> AsyncGenerator[str]:
        """The output's lines (see `read_lines`), a chunk read at a time."""
        assert self.store is not None
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending, index = "", 0
        while (chunk := await self.store.get_output(session, key, index)) is not None:
            index += 1
            *ended, pending = (pending + decoder.decode(chunk)).split("\n")
            for line in ended:
                for piece in _wrapped(line):
                    yield piece
            # A line with no end yet: its leading pieces are lines already; one piece (not
            # empty) stays, so an end that comes next adds no empty line.
            whole = (len(pending) - 1) // LINE_CHARS * LINE_CHARS if pending else 0
            for start in range(0, whole, LINE_CHARS):
                yield pending[start : start + LINE_CHARS]
            pending = pending[whole:]
        pending += decoder.decode(b"", final=True)
        if pending:
            for piece in _wrapped(pending):
                yield piece

    async def _find(self, session: SessionId, call_id: str) -> str | None:
        """The key the call's result is kept under: its id, or the name its file had."""
        assert self.store is not None
        names = [call_id]
        if call_id.endswith(".txt"):  # a note from before names the file
            names.append(Path(call_id).name.removesuffix(".txt"))
        names.append(safe_name(call_id))
        for name in dict.fromkeys(names):
            if await self.store.get_output(session, _key(name), 0) is not None:
                return _key(name)
        return None

    # --- results from before the store kept them -----------------------------------------

    def folder(self, session_id: str) -> Path | None:
        """The session's folder of results from before (whether or not there is one)."""
        if self.legacy_dir is None:
            return None
        return self.legacy_dir / safe_name(session_id)

    async def share_folder(self, session_id: str) -> None:
        """Put the session's results from before into the store, once (then a mark says so);
        each file a chunk at a time. A store that fails is logged: they stay here."""
        folder = self.folder(session_id)
        if self.store is None or folder is None:
            return
        mark = folder / _SHARED_MARK

        def kept() -> list[Path]:
            if not folder.is_dir() or mark.exists():
                return []
            return sorted(p for p in folder.glob("*.txt") if p.is_file())

        files = await anyio.to_thread.run_sync(kept)
        if not files:
            return
        try:
            for path in files:
                name = path.name.removesuffix(".txt")
                await self.store.put_output(SessionId(session_id), _key(name), _FileChunks(path))
        except (StoreError, OSError) as exc:
            logger.warning("results of %s not put in the store: %s", session_id, exc)
            return
        await anyio.to_thread.run_sync(mark.touch)

    async def forget_folder(self, session_id: str) -> None:
        """Delete the session's folder of results from before (the session was deleted;
        the store drops what it keeps with the session)."""
        folder = self.folder(session_id)
        if folder is not None:
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(folder, ignore_errors=True))


def _key(call_id: str) -> str:
    return RESULT_KEY_PREFIX + call_id


def _wrapped(line: str) -> Iterator[str]:
    """`line` in pieces of `LINE_CHARS` characters (an empty line is one empty piece)."""
    if len(line) <= LINE_CHARS:
        yield line
        return
    for start in range(0, len(line), LINE_CHARS):
        yield line[start : start + LINE_CHARS]


def safe_name(name: str) -> str:
    """An id as a file name (as results were kept in files): no separators, no leading dots."""
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return cleaned.lstrip(".") or "_"
