"""Checkpoints: what every file a tool changes held before, kept for a rewind.

`CheckpointStore` keeps file contents by SHA-256 digest, one copy per
content and session, under `DIR/data/checkpoints/<session>/`: never in the
person's repository. Those a recorded change names also go into the session's
store (`Store.put_files`, kind `checkpoint`) before the change's fact is
recorded, so they follow the session to another machine (a PostgreSQL store
shared by app servers): a content not on this disk is read from the store. A
session's folder from before this is copied into the store the first time the
session opens (`share_folder`). `CallChanges` is a tool call's `FileChanges`: before a
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
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Final

import anyio
import anyio.from_thread
import anyio.to_thread
import attrs

from acp_agent.capabilities.session._roots_index import RootsIndex, RootsTree, TooManyFiles
from acp_agent.core import Branch, CallId, EventDraft, FileChanged, SessionId, Store, StoreError
from acp_agent.toolkit import CommandFiles
from acp_agent.values import Value

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
#: The kind of a checkpoint's content among a session's files in the store.
FILE_KIND: Final = "checkpoint"
#: In a session's folder: its contents from before the store kept them are in it now.
_SHARED_MARK: Final = ".shared"
#: How many bytes of a folder's contents go into the store in one write.
_SHARE_BATCH_BYTES: Final = 16 * 1024 * 1024


@attrs.frozen
class Entry(Value):
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
    """Contents by digest, per session, in `root` (None: nothing is kept), and those a
    change names in `store` too (None: on this disk only)."""

    def __init__(self, root: Path | None, store: Store | None = None) -> None:
        self.root = root
        self.store = store

    async def share(self, session_id: str, digests: Iterable[str]) -> None:
        """Put the contents kept here under `digests` into the store, in one write (before
        the fact naming them is recorded). A store that fails is logged: the contents stay
        on this disk, and only a takeover elsewhere would miss them."""
        wanted = sorted(set(digests))
        if self.store is None or not wanted:
            return

        def read() -> list[tuple[str, bytes]]:
            found = []
            for digest in wanted:
                data = self.load(session_id, digest, fetch=False)
                if data is not None:
                    found.append((digest, data))
            return found

        files = await anyio.to_thread.run_sync(read)
        try:
            await self.store.put_files(SessionId(session_id), FILE_KIND, files)
        except StoreError as exc:
            logger.warning("checkpoints of %s not put in the store: %s", session_id, exc)

    async def share_folder(self, session_id: str) -> None:
        """Copy a session's folder from before checkpoints went into the store into it,
        once (a mark in the folder says it was)."""
        folder = self.folder(session_id)
        if self.store is None or folder is None:
            return
        mark = folder / _SHARED_MARK

        def batches() -> list[list[tuple[str, bytes]]]:
            if not folder.is_dir() or mark.exists():
                return []
            found: list[list[tuple[str, bytes]]] = [[]]
            size = 0
            for kept in sorted(folder.iterdir()):
                if kept.name.startswith("."):
                    continue
                data = self.load(session_id, kept.name, fetch=False)
                if data is None:
                    continue
                if size + len(data) > _SHARE_BATCH_BYTES and found[-1]:
                    found.append([])
                    size = 0
                found[-1].append((kept.name, data))
                size += len(data)
            return found if found[0] else [[]]

        pending = await anyio.to_thread.run_sync(batches)
        if not pending:
            return
        try:
            for batch in pending:
                await self.store.put_files(SessionId(session_id), FILE_KIND, batch)
        except StoreError as exc:
            logger.warning("checkpoints of %s not put in the store: %s", session_id, exc)
            return
        await anyio.to_thread.run_sync(mark.touch)

    async def copy_shared(self, source_id: str, target_id: str) -> None:
        """Give a fork the source's contents in the store (a failure is logged: the fork
        stands, and rewinds what this disk holds)."""
        if self.store is None:
            return
        try:
            await self.store.copy_files(SessionId(source_id), SessionId(target_id))
        except StoreError as exc:
            logger.warning("checkpoints of %s not copied to %s: %s", source_id, target_id, exc)

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

    def load(self, session_id: str, digest: str, *, fetch: bool = True) -> bytes | None:
        """The content kept under `digest`, if it is there and intact (blocking): on this
        disk, else (`fetch`, in a worker thread) in the store, then kept here too."""
        folder = self.folder(session_id)
        if folder is None:
            return None
        try:
            data: bytes | None = (folder / _safe(digest)).read_bytes()
        except OSError:
            data = None
        if data is not None and _digest(data) == digest:
            return data
        if not fetch or self.store is None:
            return None
        data = self._fetch(session_id, digest)
        if data is None or _digest(data) != digest:
            return None
        with contextlib.suppress(OSError):
            self.save(session_id, data, durable=False)
        return data

    def _fetch(self, session_id: str, digest: str) -> bytes | None:
        """The content from the store, from a worker thread (None when it is not there)."""
        store = self.store
        if store is None:
            return None
        try:
            return anyio.from_thread.run(store.get_file, SessionId(session_id), FILE_KIND, digest)
        except StoreError as exc:
            logger.warning(
                "checkpoint %s of %s not read from the store: %s", digest, session_id, exc
            )
        except RuntimeError:  # not a worker thread of the event loop
            logger.warning("checkpoint %s of %s read outside a worker thread", digest, session_id)
        return None

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


def _kept_befores(facts: Iterable[FileChanged]) -> list[str]:
    """The digests of the contents `facts` say were kept (what a rewind brings back)."""
    return [fact.before for fact in facts if fact.before_saved and fact.before is not None]


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
class CallChanges(Value):
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
        await self.store.share(str(self.branch.session_id), _kept_befores(facts))
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
            await self.store.share(session_id, _kept_befores(facts))
            await self.branch.append([EventDraft(fact, CHECKPOINTS_PRODUCER) for fact in facts])
