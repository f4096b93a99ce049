"""The session store: there, readable, intact, and how much it holds.

The store is the one the agent would use (`--store`, `ACP_AGENT_STORE`,
`[store] url`, else the SQLite file in the data folder). A PostgreSQL store
is connected to and read in one read-only transaction (`inspect_postgres`):
the server's version, the schema version, the sessions, and the lease table
(each holder's pid, host and heartbeat; a stale one is named, as its sessions
are taken over when next opened). An unreachable server, a refused login, a
database this role cannot create the schema in, or a newer schema is a problem.
The URL is shown without its credentials.

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
from acp_agent.core import StoreError
from acp_agent.store import (
    MIGRATIONS,
    PG_MIGRATIONS,
    StoreLocation,
    StoreUrlInvalid,
    inspect_postgres,
    schema_version,
)

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
    try:
        location = setup.store_location()
    except StoreUrlInvalid as exc:
        return _problem(str(exc), "give a postgresql:// URL or sqlite:PATH", {})
    if location.kind == "postgresql":
        return _check_postgres(location, setup)
    path = location.path
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


def _check_postgres(location: StoreLocation, setup: DoctorSetup) -> Check:
    details: dict[str, DetailValue] = {"url": location.shown, "from": location.source}
    try:
        found = inspect_postgres(location.target, timeout_s=setup.timeout_s)
    except StoreError as exc:
        return _problem(
            f"cannot be read: {exc}",
            "check the URL, that the server runs and takes connections from here, and the "
            "credentials (a password belongs in ~/.pgpass or PGPASSWORD)",
            details,
        )
    details["server"] = f"PostgreSQL {found.server_version}"
    details["schema version"] = found.schema_version
    latest = PG_MIGRATIONS[-1].version
    if found.schema_version == 0:
        if not found.can_create:
            return _problem(
                "a new database this role cannot create the tables in",
                "grant the role CREATE on the database's schema (or create the tables as "
                "their owner by starting acp-agent once with that role)",
                details,
            )
        return Check(
            NAME,
            Status.WARNING,
            f"no sessions yet on PostgreSQL {found.server_version} (the tables are created "
            "with the first start)",
            details=details,
            gates_prompt=True,
        )
    if found.schema_version > latest:
        return _problem(
            f"made by a newer acp-agent (schema {found.schema_version}, this one knows {latest})",
            "upgrade acp-agent",
            details,
        )
    details["sessions"] = found.sessions
    details["lease holders"] = [
        f"pid {h.pid} on {h.host}: {h.leases} "
        f"{'session' if h.leases == 1 else 'sessions'}, heartbeat {h.silent_s:.0f} s ago"
        + (f" (stale: older than its {h.timeout_s:.0f} s timeout)" if h.stale else "")
        for h in found.holders
    ]
    held = sum(h.leases for h in found.holders) + found.orphan_leases
    stale = [h for h in found.holders if h.stale and h.leases]
    summary = (
        f"{_sessions(found.sessions)} on PostgreSQL {found.server_version}, schema "
        f"{found.schema_version}, {held} leased"
    )
    if found.schema_version < latest:
        summary += f" (updated to schema {latest} at the next start)"
    if stale:
        names = ", ".join(f"pid {h.pid} on {h.host}" for h in stale)
        return Check(
            NAME,
            Status.WARNING,
            f"{summary}; a lease holder stopped beating: {names}",
            "nothing to do if that process is gone: its sessions are taken over when next "
            "opened; if it still runs, it is frozen or cut off from the database",
            details,
            gates_prompt=True,
        )
    return Check(NAME, Status.OK, summary, details=details, gates_prompt=True)
