"""The statements and the transaction both SQLite modules run, and their errors.

`transaction` is one `BEGIN IMMEDIATE` write; `translated` raises sqlite3's errors
as the store error tree; `insert_session` writes a new session's rows, whether the
store writes it (`_sqlite`) or the file before the store loads (`_sqlite_file`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final

from acp_agent.core import (
    StoreConflict,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreUnavailable,
)
from acp_agent.store._rows import BRANCH_COLUMNS, EVENT_COLUMNS, SESSION_COLUMNS, session_row

if TYPE_CHECKING:
    from acp_agent.core import BranchRecord, SessionRecord

__all__ = ("insert_branch", "insert_session", "transaction", "translated")

#: Below this much room, an I/O error of SQLite's is taken as a full disk.
_FULL_BELOW_BYTES: Final = 1024 * 1024


def insert_session(
    db: sqlite3.Connection,
    session: SessionRecord,
    main: BranchRecord,
    history: Sequence[tuple[object, ...]],
) -> None:
    """Insert a new session's row, its main branch's and the `history` rows of the main
    branch (`EVENT_COLUMNS` order), in `db`'s current transaction."""
    db.execute(
        f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        session_row(session),
    )
    insert_branch(db, main)
    db.executemany(f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)", history)


def insert_branch(db: sqlite3.Connection, branch: BranchRecord) -> None:
    db.execute(
        f"INSERT INTO branches ({BRANCH_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            branch.branch_id,
            branch.session_id,
            branch.parent_id,
            branch.cut_seq,
            branch.label,
            branch.created_at,
            branch.closed_at,
        ),
    )


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction that takes the write lock up front; rolled back on error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            # A rollback that fails too (the disk full again) must not hide the first error;
            # SQLite rolls the transaction back itself when the connection is next used.
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise


@contextmanager
def translated(what: str, path: Path) -> Iterator[None]:
    """Raise sqlite3's errors as the store error tree: who broke what."""
    try:
        yield
    except StoreError:
        raise
    except sqlite3.Error as exc:
        name = getattr(exc, "sqlite_errorname", "") or ""
        error: StoreError
        if name.startswith("SQLITE_CORRUPT") or name == "SQLITE_NOTADB":
            error = StoreCorrupt(f"{what}: {exc}")
        elif name.startswith("SQLITE_CONSTRAINT"):
            error = StoreConflict(f"{what}: {exc}")
        elif name == "SQLITE_FULL" or (_is_io_error(name) and _disk_full(path)):
            # SQLite names a full disk only where it writes the database or its log; its
            # other files (the shared-memory index) fail as I/O errors.
            error = StoreFull(f"{what}: {exc}", location=str(path))
        else:
            error = StoreUnavailable(f"{what}: {exc}")
        raise error from exc
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StoreFull(f"{what}: {exc}", location=str(path)) from exc
        raise StoreUnavailable(f"{what}: {exc}") from exc


def _is_io_error(name: str) -> bool:
    return name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN"))


def _disk_full(path: Path) -> bool:
    """Whether the disk holding `path` has (next to) no room left."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        stats = os.statvfs(folder)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < _FULL_BELOW_BYTES
