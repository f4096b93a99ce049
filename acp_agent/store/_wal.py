"""Keeping SQLite's write-ahead log bounded, so a disk freed after it filled stays free.

Every commit lands in the log first; a checkpoint copies the log into the
database, after which the log is written again from its start, but its file
keeps its largest size unless told otherwise. So: the log file is cut back
to `WAL_LIMIT_BYTES` at each checkpoint (`journal_size_limit`); a log larger
than that when the store opens (an agent killed mid-stream) is checkpointed
and truncated then; and once a write failed for want of room, each later
call that succeeds tries a full checkpoint that truncates the log to
nothing (at most every `RETRY_S`), until one completes: the space the log
held while the disk was full goes back to the disk instead of being filled
by the log again. All of it is best effort: a checkpoint that cannot run
now is tried again later, and never fails the call it follows.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

__all__ = ("RETRY_S", "WAL_LIMIT_BYTES", "WalBound", "bound_wal", "truncate_wal")

logger = logging.getLogger(__name__)

#: The log file's size after a checkpoint (SQLite's own default leaves it as large as it got).
WAL_LIMIT_BYTES: Final = 4 * 1024 * 1024
#: How often a truncating checkpoint owed since the disk was full is tried again.
RETRY_S: Final = 1.0


def bound_wal(connection: sqlite3.Connection, path: Path) -> None:
    """Limit the log of the database at `path` (at open); truncate it now if it is over."""
    connection.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")
    wal = path.with_name(path.name + "-wal")
    with contextlib.suppress(OSError):
        if wal.stat().st_size > WAL_LIMIT_BYTES:
            truncate_wal(connection)


def truncate_wal(connection: sqlite3.Connection) -> bool:
    """Checkpoint the whole log into the database and truncate it; whether that completed."""
    try:
        busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as exc:
        logger.info("the write-ahead log could not be checkpointed yet: %s", exc)
        return False
    return bool(busy == 0)


class WalBound:
    """Owes a truncating checkpoint from a write that failed for room until one completes."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._owed = False
        self._tried_at = float("-inf")

    @property
    def owed(self) -> bool:
        return self._owed

    def out_of_room(self) -> None:
        """A write failed because the disk (or a quota) is full."""
        self._owed = True

    def after_call(self, connection: sqlite3.Connection) -> None:
        """A call succeeded: try the owed checkpoint, if one is owed and not tried just now."""
        if not self._owed or connection.in_transaction:
            return
        now = self._clock()
        if now - self._tried_at < RETRY_S:
            return
        self._tried_at = now
        if truncate_wal(connection):
            self._owed = False
            logger.info("the write-ahead log was truncated now that there is room")
