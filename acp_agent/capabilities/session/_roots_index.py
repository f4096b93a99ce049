"""What a command changed under the roots: every file's content kept before, compared after.

A tool says what it is about to change; a command cannot. So before a command
confined to the roots (sandboxed) starts, `RootsIndex.tree` notes what every
file under the roots holds (a digest per path) with its content kept in the
session's checkpoints, and once it ends `RootsIndex.changes` walks again and
gives a `FileChanged` for each file it changed, made or removed: the same
facts a tool's edit records, so a rewind takes a command's changes back too.

Which files: those git would not ignore (the tools' walk: `.gitignore`d paths
and `.git` left out), and no directory made by tools rather than people (a
virtual environment, which holds `pyvenv.cfg`; a cache tagged `CACHEDIR.TAG`;
`node_modules`, `__pycache__`). Past `MAX_WATCHED_FILES` nothing is tracked
(`TooManyFiles`: the result says so). A file over `MAX_KEPT_FILE_BYTES` is
compared by digest, its content not kept (a rewind says so), and so is every
content past `MAX_KEPT_BYTES` kept for the session (a big repository's first
command would copy it all).

The index remembers each file's digest with its `stat` signature (device,
inode, size, modification and change times, mode), so a walk reads only the
files that changed since it last looked, and each content is kept once. A
file read within `RACY_WINDOW_NS` of its last modification is not trusted
(the clock's steps are coarse: a write in the same step could keep the
signature): it is read again next time.
Copies are kept without waiting for the disk: a copy a crash lost fails its
digest check, and a rewind then says the content was not kept.

Changes made by other work while the command runs (a branch, a job) show up
as the command's: the walk sees the roots, not who wrote them.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final

import attrs

from acp_agent.core import CallId, FileChanged
from acp_agent.tools import walk
from acp_agent.values import Value

__all__ = (
    "MAX_KEPT_BYTES",
    "MAX_KEPT_FILE_BYTES",
    "MAX_WATCHED_FILES",
    "RACY_WINDOW_NS",
    "RootsIndex",
    "RootsTree",
    "TooManyFiles",
)

#: The most files a walk of the roots takes before it gives up tracking.
MAX_WATCHED_FILES: Final = 50_000
#: A larger file is compared by digest; its content is not kept.
MAX_KEPT_FILE_BYTES: Final = 16 * 1024 * 1024
#: The most content one session's index keeps; past it, files are compared, not kept.
MAX_KEPT_BYTES: Final = 512 * 1024 * 1024
#: A signature this close to the file's last change is not trusted next time.
RACY_WINDOW_NS: Final = 2_000_000_000
#: Directories left out by name: made by tools, never by hand.
_PRUNED_NAMES: Final = frozenset({"node_modules", "__pycache__"})
#: A directory holding one of these is left out: a virtual environment, a cache.
_PRUNED_MARKERS: Final = ("pyvenv.cfg", "CACHEDIR.TAG")
_LINK_PREFIX: Final = b"symlink\x00"
_READ_BLOCK: Final = 1 << 20


class TooManyFiles(Exception):
    """The roots hold more files than a command's changes are tracked for."""


@attrs.frozen
class _Seen(Value):
    """What one path held when it was last read."""

    #: (device, inode, size, mtime_ns, ctime_ns, mode) of its `lstat`.
    signature: tuple[int, int, int, int, int, int]
    digest: str
    #: Its content is in the checkpoints under `digest`.
    saved: bool
    #: Where a symlink points.
    link: str | None
    #: A regular file's permission bits.
    mode: int | None
    #: When it was read (`time.time_ns`): a change within `RACY_WINDOW_NS` before is unsure.
    read_ns: int

    def trusted(self, signature: tuple[int, int, int, int, int, int]) -> bool:
        """Whether a file with `signature` still holds what was read: the same signature,
        and a content older than the clock's steps when it was read."""
        modified = self.signature[3]
        return signature == self.signature and modified < self.read_ns - RACY_WINDOW_NS


@attrs.frozen
class RootsTree(Value):
    """The roots at one moment: each file's state, and the directories there were."""

    files: dict[Path, _Seen]
    dirs: frozenset[Path]


class RootsIndex:
    """What each file under a session's roots held when last seen (blocking; thread-safe).

    `save(data)` keeps a content in the session's checkpoints and says whether it
    did (`CheckpointStore.save` without waiting for the disk).
    """

    def __init__(
        self,
        save: Callable[[bytes], bool],
        *,
        max_files: int = MAX_WATCHED_FILES,
        max_kept_bytes: int = MAX_KEPT_FILE_BYTES,
        budget_bytes: int = MAX_KEPT_BYTES,
    ) -> None:
        self._save = save
        self._max_files = max_files
        self._max_kept_bytes = max_kept_bytes
        #: What may still be kept, in bytes.
        self._budget = budget_bytes
        self._known: dict[Path, _Seen] = {}
        self._lock = threading.Lock()

    def tree(self, roots: Sequence[Path]) -> RootsTree:
        """What every file under `roots` holds now, each content kept; `TooManyFiles`."""
        with self._lock:
            files: dict[Path, _Seen] = {}
            dirs: set[Path] = set()
            for path, is_dir in self._entries(roots):
                if is_dir:
                    dirs.add(path)
                    continue
                seen = self._look(path)
                if seen is not None:
                    files[path] = seen
            for gone in self._known.keys() - files.keys():
                del self._known[gone]
            return RootsTree(files, frozenset(dirs))

    def changes(
        self, before: RootsTree, roots: Sequence[Path], call_id: str
    ) -> tuple[RootsTree, list[FileChanged]]:
        """The roots now, and a `FileChanged` for each file that differs from `before`
        (changed, made or removed), by path; `TooManyFiles`."""
        after = self.tree(roots)
        facts: list[FileChanged] = []
        for path in sorted(before.files.keys() | after.files.keys()):
            old, new = before.files.get(path), after.files.get(path)
            if old is not None and new is None:
                with self._lock:  # out of the walk now (newly ignored, say), yet still there?
                    new = self._look(path)
            if old is not None and new is not None and old.digest == new.digest:
                continue
            facts.append(
                FileChanged(
                    CallId(call_id),
                    str(path),
                    None if old is None else old.digest,
                    None if new is None else new.digest,
                    before_saved=old is not None and old.saved,
                    before_link=None if old is None else old.link,
                    before_mode=None if old is None else old.mode,
                    made_dirs=[] if old is not None else _made_dirs(path, before.dirs, roots),
                )
            )
        return after, facts

    def _entries(self, roots: Sequence[Path]) -> Iterator[tuple[Path, bool]]:
        """(path, is a directory) for everything watched under `roots`, bounded."""
        count = 0
        for root in roots:
            if not root.is_dir():
                continue
            yield root, True
            for entry in walk(root, root, prune=_pruned):
                count += 1
                if count > self._max_files:
                    raise TooManyFiles(
                        f"the roots hold more than {self._max_files} files (besides ignored "
                        "ones), too many to compare around every command"
                    )
                yield entry.path, entry.is_dir

    def _look(self, path: Path) -> _Seen | None:
        """What `path` holds: remembered when its signature says it has not changed, else
        read (its content kept); None for what is neither a file nor a link, or is gone."""
        try:
            info = path.lstat()
        except OSError:
            return None
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            return None
        signature = (
            info.st_dev,
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
            info.st_ctime_ns,
            info.st_mode,
        )
        known = self._known.get(path)
        if known is not None and known.trusted(signature):
            return known
        read_ns = time.time_ns()
        try:
            seen = self._read(path, info, signature, read_ns)
        except OSError:
            return None
        self._known[path] = seen
        return seen

    def _read(
        self,
        path: Path,
        info: os.stat_result,
        signature: tuple[int, int, int, int, int, int],
        read_ns: int,
    ) -> _Seen:
        if stat.S_ISLNK(info.st_mode):
            target = os.readlink(path)
            digest = hashlib.sha256(_LINK_PREFIX + os.fsencode(target)).hexdigest()
            return _Seen(signature, digest, False, target, None, read_ns)
        mode = stat.S_IMODE(info.st_mode)
        if info.st_size > self._max_kept_bytes:
            hasher = hashlib.sha256()
            with path.open("rb") as file:
                for block in iter(lambda: file.read(_READ_BLOCK), b""):
                    hasher.update(block)
            return _Seen(signature, hasher.hexdigest(), False, None, mode, read_ns)
        data = path.read_bytes()
        saved = False
        if len(data) <= self._budget:
            saved = self._save(data)
            self._budget -= len(data)  # a content kept before counts again: a bound, not a tally
        return _Seen(signature, hashlib.sha256(data).hexdigest(), saved, None, mode, read_ns)


def _pruned(directory: Path) -> bool:
    """Whether a directory is left out: made by tools (a venv, a cache, packages)."""
    if directory.name in _PRUNED_NAMES:
        return True
    return any((directory / marker).is_file() for marker in _PRUNED_MARKERS)


def _made_dirs(path: Path, existed: frozenset[Path], roots: Sequence[Path]) -> list[str]:
    """The directories above a new file that were not there before, outermost first (a
    rewind removes them, when empty); never a root or anything above one."""
    made = []
    for parent in path.parents:
        if (
            parent in existed
            or parent in roots
            or not any(parent.is_relative_to(root) for root in roots)
        ):
            break
        made.append(str(parent))
    return made[::-1]
