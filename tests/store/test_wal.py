"""The write-ahead log stays bounded: cut back at open when it is over its limit, and
truncated once a write that failed for room is followed by one that succeeds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from acp_agent.store._wal import RETRY_S, WAL_LIMIT_BYTES, WalBound, bound_wal


def _database(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA wal_autocheckpoint = 0")  # the log only grows, as on a full disk
    connection.execute("CREATE TABLE t (x BLOB)")
    return connection


def _grow(connection: sqlite3.Connection, size: int) -> None:
    for _ in range(size // 65536):
        connection.execute("INSERT INTO t VALUES (?)", (b"\0" * 65536,))


def test_a_log_owed_a_checkpoint_is_truncated_after_the_next_call_and_not_tried_too_often(
    tmp_path: Path,
):
    path = tmp_path / "db.sqlite3"
    wal = tmp_path / "db.sqlite3-wal"
    connection = _database(path)
    _grow(connection, 1024 * 1024)
    now = [100.0]
    bound = WalBound(clock=lambda: now[0])
    bound.after_call(connection)
    assert wal.stat().st_size > 1024 * 1024  # nothing owed: left to SQLite
    bound.out_of_room()
    bound.after_call(connection)
    assert wal.stat().st_size == 0
    assert not bound.owed
    reader = sqlite3.connect(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM t").fetchone()  # a reader pins the log
    _grow(connection, 256 * 1024)
    bound.out_of_room()
    bound.after_call(connection)
    assert bound.owed  # could not complete: owed still
    reader.rollback()
    now[0] += RETRY_S / 2
    bound.after_call(connection)
    assert bound.owed  # not tried again so soon
    now[0] += RETRY_S
    bound.after_call(connection)
    assert not bound.owed
    assert wal.stat().st_size == 0
    reader.close()
    connection.close()


def test_a_log_over_its_limit_is_truncated_when_the_store_opens(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    wal = tmp_path / "db.sqlite3-wal"
    writer = _database(path)
    _grow(writer, WAL_LIMIT_BYTES + 65536)
    opened = sqlite3.connect(path, isolation_level=None)  # the writer still runs: kept
    assert wal.stat().st_size > WAL_LIMIT_BYTES
    bound_wal(opened, path)
    assert wal.stat().st_size == 0
    assert opened.execute("PRAGMA journal_size_limit").fetchone() == (WAL_LIMIT_BYTES,)
    assert opened.execute("SELECT count(*) FROM t").fetchone()[0] > 0
    opened.close()
    writer.close()
