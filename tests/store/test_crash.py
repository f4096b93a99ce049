"""A writer SIGKILLed at random moments never leaves half a batch, a gap or a stuck session.

`crash_writer.py` loads a session from a real SQLite file and appends
batches of 1-8 events as fast as it can, printing each durable position. It
is killed 50 times: half at a random moment after spawning (start-up,
migration, lease takeover, load), half a few milliseconds into appending.
After every kill the file must hold whole batches only, dense from seq 1,
every acknowledged batch must be there, and the session must load.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio

from acp_agent.core import SessionId, open_runtime
from acp_agent.store import SqliteStore

CRASH_WRITER = Path(__file__).with_name("crash_writer.py")
KILLS = 50


async def create_session(db: Path) -> SessionId:
    store = await SqliteStore.open(db)
    try:
        async with open_runtime(store) as runtime:
            return (await runtime.create_session("/work/crash")).id
    finally:
        await store.aclose()


async def load_session(db: Path, session_id: SessionId) -> int:
    """Load as a fresh process would (taking over the dead writer's lease)."""
    store = await SqliteStore.open(db)
    try:
        async with open_runtime(store) as runtime:
            session = await runtime.load_session(session_id)
            return session.main.timeline.last_published_seq
    finally:
        await store.aclose()


def check_whole_batches(db: Path, after_seq: int) -> int:
    """Check events after `after_seq` are dense and come in whole batches; returns the last seq."""
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT seq, batch_id, payload FROM events WHERE seq > ? ORDER BY seq", (after_seq,)
        ).fetchall()
    expected_seq = after_seq + 1
    batch_start, batch_size, index = 0, 0, 0
    for seq, batch_id, payload in rows:
        assert seq == expected_seq, f"gap before seq {seq}"
        name, place = json.loads(payload)["text"].split(":")
        position, size = (int(part) for part in place.split("/"))
        if position == 0:
            assert index == batch_size, f"batch {batch_start} has {index} of {batch_size} events"
            batch_start, batch_size, index = seq, size, 0
        assert (batch_id, int(name), position, size) == (
            batch_start,
            batch_start,
            index,
            batch_size,
        )
        index += 1
        expected_seq += 1
    assert index == batch_size, f"batch {batch_start} has {index} of {batch_size} events"
    return expected_seq - 1


def test_a_writer_killed_at_random_moments_leaves_whole_batches_and_a_loadable_session(
    tmp_path: Path,
) -> None:
    db = tmp_path / "crash.sqlite3"
    session_id = anyio.run(create_session, db)
    rng = random.Random(20261103)
    verified = 0
    mid_append_kills = 0
    for round_number in range(KILLS):
        writer = subprocess.Popen(
            [sys.executable, str(CRASH_WRITER), "append", str(db), session_id, str(round_number)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        if round_number % 2:
            assert writer.stdout.readline().startswith("durable ")  # it is appending now
            time.sleep(rng.uniform(0, 0.03))
        else:
            time.sleep(rng.uniform(0, 0.35))
        os.kill(writer.pid, signal.SIGKILL)
        output, _ = writer.communicate()
        assert writer.returncode == -signal.SIGKILL
        acknowledged = [int(line.split()[1]) for line in output.splitlines() if line]
        mid_append_kills += bool(acknowledged) or round_number % 2
        last_seq = check_whole_batches(db, verified)
        assert max(acknowledged, default=0) <= last_seq, "an acknowledged batch was lost"
        assert anyio.run(load_session, db, session_id) == last_seq
        verified = last_seq
    assert check_whole_batches(db, 0) == verified
    assert mid_append_kills >= KILLS // 2
    with sqlite3.connect(db) as connection:
        batches = connection.execute("SELECT count(DISTINCT batch_id) FROM events").fetchone()[0]
    assert batches > KILLS
    print(f"{KILLS} kills ({mid_append_kills} mid-append): {verified} events in {batches} batches")
