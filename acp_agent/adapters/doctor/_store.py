"""The session store: there, readable, intact, and how much it holds.

The SQLite file is opened without creating it (`mode=rw`, so nothing is made
where none was) and only read: `PRAGMA quick_check`, the schema version and the
number of sessions. A read-write connection rather than a read-only one because
the store is in WAL mode, and a read-only connection leaves the `-wal` and `-shm`
files behind where the agent, closing last, removes them. A file the user may
only read is reported: the agent needs to write it. No file yet is a warning
(the first session creates it); a file that is not SQLite, a folder in its
place, or one that cannot be opened is a problem that stops every prompt.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from acp_agent.adapters.doctor._report import Check, DetailValue, Status
from acp_agent.adapters.doctor._setup import DoctorSetup
from acp_agent.store import MIGRATIONS, default_database_path, schema_version

__all__ = ("NAME", "check_store", "reading_store")

NAME: Final = "store"
#: How long to wait for a running agent's write to finish before reading.
_BUSY_TIMEOUT_S: Final = 2.0


@contextlib.contextmanager
def reading_store(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to the existing store at `path` that must only read; raises
    `sqlite3.Error` (or `OSError`) when it cannot be opened."""
    connection = sqlite3.connect(
        f"{path.absolute().as_uri()}?mode=rw", uri=True, timeout=_BUSY_TIMEOUT_S
    )
    try:
        yield connection
    finally:
        connection.close()


def check_store(setup: DoctorSetup) -> Check:
    """The store check; a problem here means a prompt would not work."""
    path = default_database_path(setup.paths.data_dir)
    details: dict[str, DetailValue] = {"path": str(path)}
    if not path.exists() and not path.is_symlink():
        return _absent(path, details)
    if path.is_dir():
        return _problem(
            "a folder is where the session store should be",
            "move the folder away: the next start creates a new store there",
            details,
        )
    try:
        with reading_store(path) as connection:
            check_rows = [row[0] for row in connection.execute("PRAGMA quick_check")]
            version = schema_version(connection)
            sessions = (
                connection.execute("SELECT count(*) FROM sessions").fetchone()[0]
                if version >= 1
                else 0
            )
    except (sqlite3.Error, OSError) as exc:
        return _problem(f"cannot be opened: {exc}", _fix_for(exc, path), details)
    details["size"] = _size(path)
    details["schema version"] = version
    latest = MIGRATIONS[-1].version
    if check_rows != ["ok"]:
        details["quick_check"] = [str(row) for row in check_rows[:5]]
        return _problem(
            f"damaged: {check_rows[0]}",
            "restore it from a backup, or move it away (the next start creates a new one)",
            details,
        )
    if version > latest:
        return _problem(
            f"made by a newer acp-agent (schema {version}, this one knows {latest})",
            "upgrade acp-agent",
            details,
        )
    if not os.access(path, os.R_OK | os.W_OK) or not os.access(path.parent, os.W_OK | os.X_OK):
        return _problem(
            "can be read but not written: sessions cannot be recorded",
            f"give your user write access to {path} and its folder",
            details,
        )
    summary = f"{_sessions(sessions)}, {details['size']}, quick_check ok"
    if version < latest:
        summary += f" (schema {version}: updated to {latest} at the next start)"
    return Check(NAME, Status.OK, summary, details=details, gates_prompt=True)


def _absent(path: Path, details: dict[str, DetailValue]) -> Check:
    folder = next((p for p in path.parents if p.exists()), None)
    if folder is not None and not folder.is_dir():
        return _problem(
            f"the store cannot be created: {folder} is not a folder",
            f"move {folder} away",
            details,
        )
    if folder is not None and not os.access(folder, os.W_OK | os.X_OK):
        return _problem(
            f"the store cannot be created: {folder} cannot be written",
            f"give your user write access to {folder}",
            details,
        )
    return Check(
        NAME,
        Status.WARNING,
        "no sessions yet (the store is created with the first session)",
        details=details,
        gates_prompt=True,
    )


def _fix_for(exc: BaseException, path: Path) -> str:
    if getattr(exc, "sqlite_errorname", None) == "SQLITE_NOTADB":
        return "it is not an SQLite file: move it away (the next start creates a new store)"
    if isinstance(exc, PermissionError) or "permission" in str(exc).lower():
        return f"give your user read and write access to {path}"
    return f"check {path} and its folder (permissions, the disk); or move it away"


def _size(path: Path) -> str:
    """The file's size with its write-ahead log, in a unit a person reads."""
    size = sum(
        candidate.stat().st_size
        for candidate in (path, path.with_name(path.name + "-wal"))
        if candidate.exists()
    )
    if size < 1024:
        return f"{size} bytes"
    value = float(size)
    for unit in ("KiB", "MiB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} GiB"


def _sessions(count: int) -> str:
    return "1 session" if count == 1 else f"{count} sessions"


def _problem(summary: str, fix: str, details: dict[str, DetailValue]) -> Check:
    return Check(NAME, Status.PROBLEM, summary, fix, details, gates_prompt=True)
