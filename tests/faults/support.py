"""What the fault tests check after the worst has happened: is the store whole?"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

__all__ = ("store_problems",)


def store_problems(database: Path | str, *, ended: bool = True) -> list[str]:
    """What is torn in the store: integrity, gaps in seqs, a prompt without one ending.

    `database` is an SQLite file, or a PostgreSQL URL (`postgresql://...`). With
    `ended=False` the last prompt of a branch may still be open (a process killed
    mid-turn; the next load ends it).
    """
    if isinstance(database, str) and database.startswith("postgresql://"):
        return _postgres_problems(database, ended=ended)
    problems = []
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        if db.execute("PRAGMA integrity_check").fetchone() != ("ok",):
            problems.append("integrity_check failed")
        branches = [row[0] for row in db.execute("SELECT branch_id FROM branches")]
        for branch in branches:
            rows = db.execute(
                "SELECT seq, batch_id, kind FROM events WHERE branch_id = ? ORDER BY seq",
                (branch,),
            ).fetchall()
            problems += _branch_problems(branch, rows, ended=ended)
    return problems


def _postgres_problems(url: str, *, ended: bool) -> list[str]:
    import psycopg

    problems = []
    with psycopg.connect(url) as db:
        branches = [row[0] for row in db.execute("SELECT branch_id FROM branches")]
        for branch in branches:
            rows: list[Any] = db.execute(
                "SELECT seq, batch_id, kind FROM events WHERE branch_id = %s ORDER BY seq",
                (branch,),
            ).fetchall()
            problems += _branch_problems(branch, rows, ended=ended)
        orphans = db.execute(
            "SELECT count(*) FROM events WHERE branch_id NOT IN (SELECT branch_id FROM branches)"
        ).fetchone()
        if orphans and orphans[0]:
            problems.append(f"{orphans[0]} events belong to no branch")
    return problems


def _branch_problems(branch: str, rows: list[tuple[int, int, str]], *, ended: bool) -> list[str]:
    problems = []
    seqs = [seq for seq, _, _ in rows]
    if seqs and seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        problems.append(f"{branch}: seqs are not dense")
    # A batch is named by its first seq and holds the seqs up to the next batch.
    for seq, batch_id, _ in rows:
        if batch_id > seq:
            problems.append(f"{branch}: seq {seq} in batch {batch_id}, which starts after it")
    open_turn = False
    for _, _, kind in rows:
        if kind == "user_input.adopted":
            if open_turn:
                problems.append(f"{branch}: a prompt began before the last one ended")
            open_turn = True
        elif kind in ("turn.ended", "turn.interrupted"):
            open_turn = False
    if open_turn and ended:
        problems.append(f"{branch}: the last prompt never ended")
    return problems
