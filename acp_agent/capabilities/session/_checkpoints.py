"""Checkpoints: what every file a tool changes held before, kept for a rewind.

`CheckpointStore` keeps file contents by SHA-256 digest, one copy per
content and session, under `DIR/data/checkpoints/<session>/`: never in the
person's repository. `CallChanges` is a tool call's `FileChanges`: before a
change it saves what each file holds now and records `FileChanged` (the digest
before and the digest after) in the branch, so the record exists before the
change does. Every change is kept, not only a turn's first: contents are
stored once each, and a rewind to any message finds the file as it was then.
A command confined to the roots runs inside `CallChanges.watching()`: the
session's `RootsIndex` keeps every file's content before it starts and its
changes are recorded once it ends (`_roots_index`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Final

import anyio
import attrs

from acp_agent.capabilities.session._roots_index import RootsIndex, RootsTree, TooManyFiles
from acp_agent.core import Branch, CallId, EventDraft, FileChanged
from acp_agent.records import Record
from acp_agent.toolkit import CommandFiles

__all__ = (
    "MAX_KEPT_BYTES",
    "CallChanges",
    "CheckpointStore",
    "Entry",
    "entries_under",
    "entry_digest",
    "read_entry",
)

logger = logging.getLogger(__name__)

#: A file larger than this is not kept (a rewind says it cannot bring it back).
MAX_KEPT_BYTES: Final = 64 * 1024 * 1024
#: Who records `FileChanged` facts.
CHECKPOINTS_PRODUCER: Final = "capabilities.checkpoints"
#: The `after` of a change whose outcome is unknown (an unconfirmed write): no content
#: has this digest, so whatever the path holds later, other than what it held
#: before, counts as changed outside the agent.
UNKNOWN_AFTER: Final = "unknown"
_LINK_PREFIX: Final = b"symlink\x00"


@attrs.frozen
class Entry(Record):
    """What a path holds now, as a checkpoint needs it."""

    #: SHA-256 of a file's bytes (of `symlink\\0target` for a link); None: nothing there.
    digest: str | None
    #: A regular file's bytes, when it is small enough to keep.
    data: bytes | None = None
    #: Where a symlink points.
    link: str | None = None
    #: A regular file's permission bits.
    mode: int | None = None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_entry(path: Path) -> Entry:
    """What `path` holds now, without following a final symlink (blocking)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return Entry(None)
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(path)
        return Entry(_digest(_LINK_PREFIX + os.fsencode(target)), link=target)
    if not stat.S_ISREG(info.st_mode):
        return Entry(f"{stat.filemode(info.st_mode)[0]}-entry")  # never restored over
    mode = stat.S_IMODE(info.st_mode)
    if info.st_size > MAX_KEPT_BYTES:
        hasher = hashlib.sha256()
        with path.open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                hasher.update(block)
        return Entry(hasher.hexdigest(), mode=mode)
    data = path.read_bytes()
    return Entry(_digest(data), data=data, mode=mode)


def entry_digest(path: Path) -> str | None:
    """The digest `read_entry` gives `path` (blocking)."""
    return read_entry(path).digest


def entries_under(path: Path) -> Iterator[Path]:
    """`path` itself unless it is a directory; else every file and symlink below it."""
    if not path.is_dir() or path.is_symlink():
        yield path
        return
    with os.scandir(path) as scan:
        children = sorted(scan, key=lambda entry: entry.name)
    for child in children:
        yield from entries_under(Path(child.path))


class CheckpointStore:
    """Contents by digest, per session, in `root` (None: nothing is kept)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def folder(self, session_id: str) -> Path | None:
        if self.root is None:
            return None
        return self.root / _safe(session_id)

    def save(self, session_id: str, data: bytes, *, durable: bool = True) -> bool:
        """Keep `data` (once per content); whether it is kept now (blocking). Not
        `durable`: without waiting for the disk (a copy a crash loses fails `load`'s
        digest check, so it reads as not kept)."""
        folder = self.folder(session_id)
        if folder is None:
            return False
        target = folder / _digest(data)
        if target.exists():
            return True
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
                if durable:
                    file.flush()
                    os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        return True

    def load(self, session_id: str, digest: str) -> bytes | None:
        """The content kept under `digest`, if it is there and intact (blocking)."""
        folder = self.folder(session_id)
        if folder is None:
            return None
        try:
            data = (folder / _safe(digest)).read_bytes()
        except OSError:
            return None
        return data if _digest(data) == digest else None

    def copy_session(self, source_id: str, target_id: str) -> None:
        """Give a fork the source's contents (hard links where the disk allows; blocking)."""
        source, target = self.folder(source_id), self.folder(target_id)
        if source is None or target is None or not source.is_dir():
            return
        target.mkdir(parents=True, exist_ok=True)
        for kept in source.iterdir():
            if kept.name.startswith(".tmp-") or (target / kept.name).exists():
                continue
            try:
                os.link(kept, target / kept.name)
            except OSError:
                shutil.copyfile(kept, target / kept.name)

    def forget(self, session_id: str) -> None:
        """Delete what was kept for a session (it was deleted; blocking)."""
        folder = self.folder(session_id)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _missing_parents(path: Path) -> list[str]:
    """The directories above `path` that do not exist yet, outermost first."""
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(str(parent))
    return missing[::-1]


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


@attrs.frozen
class CallChanges(Record):
    """A tool call's `FileChanges`: checkpoints into `store`, facts into `branch`; a
    command's changes compared by `index` (None: not tracked) under `roots`."""

    store: CheckpointStore
    branch: Branch
    call_id: str
    index: RootsIndex | None = None
    roots: tuple[Path, ...] = ()
    #: What each path the call changed held before its first change (None: nothing).
    touched: dict[Path, bytes | None] = attrs.field(factory=dict)
    #: What the call last wrote to each path (it may go through the editor, not the disk).
    written: dict[Path, bytes] = attrs.field(factory=dict)

    async def before_write(self, path: Path, data: bytes) -> None:
        await self.record([(path, _digest(data))])
        self.written[path] = data

    async def after_unconfirmed_write(self, path: Path) -> None:
        # What the editor holds is unknown: the review reads the disk, and a rewind finds
        # the file either as it was (ours) or changed outside the agent (a conflict).
        self.written.pop(path, None)
        await self.record([(path, UNKNOWN_AFTER)])

    async def before_remove(self, path: Path) -> None:
        entries = await anyio.to_thread.run_sync(lambda: list(entries_under(path)))
        for entry in entries:
            self.written.pop(entry, None)
        await self.record([(entry, None) for entry in entries])

    async def before_move(self, source: Path, destination: Path) -> None:
        def pairs() -> list[tuple[Path, str | None]]:
            found: list[tuple[Path, str | None]] = []
            for entry in entries_under(source):
                moved_to = (
                    destination / entry.relative_to(source) if entry != source else destination
                )
                found.append((entry, None))
                found.append((moved_to, entry_digest(entry)))
            return found

        await self.record(await anyio.to_thread.run_sync(pairs))

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[CommandFiles]:
        files = CommandFiles()
        index = self.index
        if index is None:
            files.untracked = "this session keeps no checkpoints"
            yield files
            return
        try:
            before = await anyio.to_thread.run_sync(index.tree, self.roots)
        except TooManyFiles as exc:
            files.untracked = str(exc)
            yield files
            return
        try:
            yield files
        finally:
            # However the command ended (a cancel too): it may have changed files.
            with anyio.CancelScope(shield=True):
                await self._record_command(index, before, files)

    async def _record_command(
        self, index: RootsIndex, before: RootsTree, files: CommandFiles
    ) -> None:
        try:
            _, facts = await anyio.to_thread.run_sync(
                index.changes, before, self.roots, self.call_id
            )
        except TooManyFiles as exc:
            files.untracked = str(exc)
            return
        if not facts:
            return
        try:
            await self.branch.append([EventDraft(fact, CHECKPOINTS_PRODUCER) for fact in facts])
        except Exception:
            logger.exception("could not record the files call %s changed", self.call_id)
            files.untracked = "they could not be recorded (see the log)"
            return
        for fact in facts:
            path = Path(fact.path)
            if fact.before is None:
                files.created.append(path)
            elif fact.after is None:
                files.removed.append(path)
            else:
                files.changed.append(path)

    async def record(self, changes: list[tuple[Path, str | None]]) -> None:
        """Keep what each path holds now and record it changing to the digest given."""
        session_id = str(self.branch.session_id)

        def checkpoint() -> list[FileChanged]:
            facts = []
            for path, after in changes:
                entry = read_entry(path)
                self.touched.setdefault(path, entry.data)
                saved = entry.data is not None and self.store.save(session_id, entry.data)
                made = _missing_parents(path) if after is not None else []
                facts.append(
                    FileChanged(
                        CallId(self.call_id),
                        str(path),
                        entry.digest,
                        after,
                        before_saved=saved,
                        before_link=entry.link,
                        before_mode=entry.mode,
                        made_dirs=made,
                    )
                )
            return facts

        facts = await anyio.to_thread.run_sync(checkpoint)
        if facts:
            await self.branch.append([EventDraft(fact, CHECKPOINTS_PRODUCER) for fact in facts])
