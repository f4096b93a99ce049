"""What the fault tests check after the worst has happened: is the store whole?"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ("store_problems",)


def store_problems(database: Path, *, ended: bool = True) -> list[str]:
    """What is torn in the store: integrity, gaps in seqs, a prompt without one ending.

    With `ended=False` the last prompt of a branch may still be open (a process
    killed mid-turn; the next load ends it).
    """
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
