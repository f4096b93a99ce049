"""How fast the timeline makes events durable, and how fast a branch is rebuilt.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/timeline.py [--rounds N] [--events N] [--synchronous FULL]

1. Durable appends per second through `Timeline.append` on the SQLite store,
   in 1-event and 100-event batches, next to the floor: raw `sqlite3`
   inserting the same rows (already encoded) into the same schema with the
   same pragmas (WAL, the same `synchronous`), one transaction per batch,
   measured in the same run. Rounds alternate ours and the floor so both see
   the same machine noise; the table shows medians. Target: 100-event
   batches within 2x of the floor.
2. Rebuild of a branch of `--events` events (default 100,000) by an
   interpreter that folds them into a small context state: a full replay
   from the events, and a restore from a snapshot at the end (and one 1,000
   events before it). Target: from a snapshot under 10% of the full replay.
   Peak memory is traced (tracemalloc) in a separate run of each, so the
   timings do not pay for the tracing.

3. Decoding a session's events when they hold content: 1,000 turns (the
   person's text; a reply proposing an edit; its result, a text and a diff;
   7,000 events), `decode_event` on every stored row next to the floor,
   `json.loads` of the same payloads, in the same run (the best of rounds).
   The same rows with the person's input as event format 1 stored it show
   what reading an older store through `core._upgrades` costs.

With `--store postgresql` the same questions go to the PostgreSQL store, on a
throwaway cluster started for the run (fsync and synchronous_commit on, a
private unix socket; `tests/support/postgres.py`) or on `--postgres-url URL`:

3. Durable appends through `Timeline.append` next to the floor: psycopg
   inserting the same rows into the same schema, one transaction per batch,
   on one connection of the same settings.
4. Load of a 1,000-turn session (6 events a turn in 3 batches: 6,000 events):
   `load_session` and reading its whole history, on both stores.
5. Appends per second with 1, 4 and 16 sessions writing at once (1-event
   batches, one store handle, its default pool of 8 connections), on both.

It is a report: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import functools
import json
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import attrs

from acp_agent.content import DiffContent, Location, TextContent
from acp_agent.core import (
    BatchId,
    BranchId,
    CallId,
    Event,
    EventDraft,
    ModelRequestFinished,
    ModelRequestStarted,
    ModelStopReason,
    ModelTextDelta,
    NotificationReceived,
    Seq,
    Timeline,
    ToolCallRequested,
    ToolResultRecorded,
    TurnEnded,
    TurnId,
    TurnStopReason,
    UserInputAdopted,
    decode_event,
    encode_event,
    new_id,
    open_runtime,
    restore_state,
    save_snapshot,
)
from acp_agent.store import SqliteStore, Synchronous, migrate

ROOT = Path(__file__).resolve().parents[1]

TEXT = "tool output line: compiled 3 files, 0 warnings, tests pending"  # ~60 characters


def drafts(size: int, batch_number: int) -> list[EventDraft]:
    return [
        EventDraft(NotificationReceived("tools/bash", f"{batch_number}.{i} {TEXT}"), "benchmark")
        for i in range(size)
    ]


# --- appends ---------------------------------------------------------------------------------


async def ours(path: Path, synchronous: Synchronous, size: int, batches: int) -> float:
    """Seconds to append `batches` batches of `size` events durably through the timeline."""
    store = await SqliteStore.open(path, synchronous=synchronous)
    try:
        async with open_runtime(store) as runtime:
            timeline = (await runtime.create_session("/bench")).main.timeline
            work = [drafts(size, n) for n in range(batches)]
            started = time.perf_counter()
            for batch in work:
                await timeline.append(batch)
            return time.perf_counter() - started
    finally:
        await store.aclose()


def floor(path: Path, synchronous: Synchronous, size: int, batches: int) -> float:
    """Seconds for raw sqlite3 to insert the same rows, one transaction per batch."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute(f"PRAGMA synchronous = {synchronous}")
    migrate(connection)
    insert = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    rows = []
    seq = 0
    branch_id = BranchId(new_id("br"))  # the same shape of id as ours
    for n in range(batches):
        batch_rows = []
        first = seq + 1
        for draft in drafts(size, n):
            seq += 1
            event = Event(
                branch_id, Seq(seq), BatchId(first), draft.payload, draft.producer, time.time()
            )
            batch_rows.append(tuple(encode_event(event)))
        rows.append(batch_rows)
    started = time.perf_counter()
    for batch_rows in rows:
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany(insert, batch_rows)
        connection.execute("COMMIT")
    elapsed = time.perf_counter() - started
    connection.close()
    return elapsed


def appends(directory: Path, synchronous: Synchronous, rounds: int) -> list[dict[str, Any]]:
    results = []
    for size, batches in ((1, 1000), (100, 200)):
        our_times, floor_times = [], []
        for r in range(rounds):
            our_times.append(
                anyio.run(ours, directory / f"ours-{size}-{r}.db", synchronous, size, batches)
            )
            floor_times.append(
                floor(directory / f"floor-{size}-{r}.db", synchronous, size, batches)
            )
        ours_s, floor_s = statistics.median(our_times), statistics.median(floor_times)
        results.append(
            {
                "batch": size,
                "events": size * batches,
                "ours_events_per_s": size * batches / ours_s,
                "floor_events_per_s": size * batches / floor_s,
                "ours_batches_per_s": batches / ours_s,
                "ratio": ours_s / floor_s,
            }
        )
    return results


# --- rebuild ----------------------------------------------------------------------------------


@attrs.define
class ContextState:
    """What a context-preparing component might derive: counts, sizes, the recent tail."""

    interpreter_name = "bench-context"

    def initial(self) -> dict[str, Any]:
        return {"kinds": {}, "chars": 0, "recent": []}

    def apply(self, state: dict[str, Any], event: Event) -> dict[str, Any]:
        kinds = state["kinds"]
        kinds[event.kind] = kinds.get(event.kind, 0) + 1
        text = getattr(event.payload, "text", "")
        state["chars"] += len(text)
        recent = state["recent"]
        recent.append(text)
        if len(recent) > 20:
            del recent[0]
        return state

    @property
    def name(self) -> str:
        return self.interpreter_name

    @property
    def version(self) -> str:
        return "1"

    def encode(self, state: dict[str, Any]) -> bytes:
        return json.dumps(state).encode()

    def decode(self, data: bytes) -> dict[str, Any]:
        decoded = json.loads(data)
        assert isinstance(decoded, dict)
        return decoded


async def build_branch(path: Path, events: int) -> str:
    store = await SqliteStore.open(path)
    try:
        async with open_runtime(store) as runtime:
            session = await runtime.create_session("/bench")
            timeline = session.main.timeline
            for n in range(events // 100):
                await timeline.append(drafts(100, n))
            interpreter = ContextState()
            full = await restore_state(timeline, store, interpreter)
            await save_snapshot(timeline, store, interpreter, full.state, full.covered_seq)
            earlier = Seq(events - 1000)
            state = (await restore_state(timeline, store, interpreter, lte=earlier)).state
            await save_snapshot(timeline, store, interpreter, state, earlier)
            return session.id
    finally:
        await store.aclose()


async def rebuild(path: Path, session_id: str, how: str) -> tuple[float, int]:
    """Seconds to restore the context state; and how many events were replayed."""
    store = await SqliteStore.open(path)
    try:
        async with open_runtime(store) as runtime:
            session = await runtime.load_session(session_id)  # type: ignore[arg-type]
            timeline: Timeline = session.main.timeline
            if how == "events":
                await store.delete_snapshots(timeline.branch_id)
            elif how == "older snapshot":
                newest = (
                    await store.get_snapshots(timeline.branch_id, ContextState.interpreter_name)
                )[0]
                await store.put_snapshot(attrs.evolve(newest, interpreter_version="stale"))
            started = time.perf_counter()
            restored = await restore_state(timeline, store, ContextState())
            elapsed = time.perf_counter() - started
            anchor = 0 if restored.snapshot is None else restored.snapshot.anchor_seq
            return elapsed, restored.covered_seq - anchor
    finally:
        await store.aclose()


def traced_peak(run: Callable[..., Awaitable[Any]], *args: Any) -> int:
    """Peak bytes allocated (tracemalloc) while `run(*args)` runs."""
    tracemalloc.start()
    try:
        anyio.run(run, *args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def rebuilds(directory: Path, events: int) -> list[dict[str, Any]]:
    results = []
    for how in ("events", "older snapshot", "snapshot"):
        path = directory / f"rebuild-{how.replace(' ', '-')}.db"
        session_id = anyio.run(build_branch, path, events)
        elapsed, replayed = anyio.run(rebuild, path, session_id, how)
        peak = traced_peak(rebuild, path, session_id, "as stored")
        results.append({"from": how, "seconds": elapsed, "replayed": replayed, "peak_bytes": peak})
    return results


# --- decoding content -----------------------------------------------------------------------

PROMPT = "Please look at the parser and fix the off-by-one in its tokenizer. " * 3
FILE_BEFORE = "def position(x):\n    return x + 1\n" * 40
FILE_AFTER = "def position(x):\n    return x + 2\n" * 40


def content_turn(turn: int) -> list[Any]:
    """One turn's payloads, as they are recorded: the person's text, a reply proposing an
    edit, the edit's result (its output and the diff), the turn's end."""
    turn_id, request_id, call_id = TurnId(f"turn_{turn}"), f"req_{turn}", CallId(f"call_{turn}")
    path = "/work/src/parser.py"
    return [
        UserInputAdopted(turn_id, (TextContent(PROMPT),)),
        ModelRequestStarted(request_id, turn_id, "model"),
        ModelTextDelta(request_id, "I will fix the tokenizer."),
        ModelRequestFinished(request_id, ModelStopReason.TOOL_USE),
        ToolCallRequested(
            request_id, call_id, "edit", {"path": path}, "Edit", "edit", (Location(path, 12),)
        ),
        ToolResultRecorded(
            call_id,
            request_id,
            (TextContent(TEXT * 16), DiffContent(path, FILE_BEFORE, FILE_AFTER)),
            False,
        ),
        TurnEnded(turn_id, TurnStopReason.END_TURN),
    ]


def content_rows(turns: int) -> list[tuple[Any, ...]]:
    branch_id = BranchId(new_id("br"))
    payloads = [payload for turn in range(turns) for payload in content_turn(turn)]
    return [
        tuple(encode_event(Event(branch_id, Seq(n), BatchId(n), payload, "benchmark", 0.0)))
        for n, payload in enumerate(payloads, 1)
    ]


def as_format_1(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """`row` as event format 1 stored it: the person's text as an ACP block, no `sent`."""
    if row[3] != UserInputAdopted.KIND:
        return row
    data = json.loads(row[4])
    data["content"] = [{"type": "text", "text": part["text"]} for part in data["content"]]
    del data["sent"]
    return (*row[:4], json.dumps(data, separators=(",", ":")), *row[5:7], 1)


def best_of(rounds: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def _decode_all(rows: list[tuple[Any, ...]]) -> list[Event]:
    return [decode_event(row) for row in rows]


def _loads_all(rows: list[tuple[Any, ...]]) -> list[Any]:
    return [json.loads(row[4]) for row in rows]


def content_decoding(turns: int, rounds: int) -> list[dict[str, Any]]:
    rows = content_rows(turns)
    old_rows = [as_format_1(row) for row in rows]
    results = []
    for name, stored in (("this format", rows), ("format 1's input", old_rows)):
        ours = best_of(rounds, functools.partial(_decode_all, stored))
        floor = best_of(rounds, functools.partial(_loads_all, stored))
        results.append({"rows": name, "events": len(stored), "ours": ours, "floor": floor})
    return results


# --- PostgreSQL ------------------------------------------------------------------------------


async def pg_ours(url: str, size: int, batches: int) -> float:
    """`ours` on the PostgreSQL store."""
    from acp_agent.store import PostgresStore

    store = await PostgresStore.open(url)
    try:
        async with open_runtime(store) as runtime:
            timeline = (await runtime.create_session("/bench")).main.timeline
            work = [drafts(size, n) for n in range(batches)]
            started = time.perf_counter()
            for batch in work:
                await timeline.append(batch)
            return time.perf_counter() - started
    finally:
        await store.aclose()


async def pg_floor(url: str, size: int, batches: int) -> float:
    """Seconds for psycopg to insert the same rows on one connection, a transaction a batch."""
    import psycopg

    from acp_agent.store import connection_settings, migrate_postgres

    rows = []
    seq = 0
    branch_id = BranchId(new_id("br"))
    for n in range(batches):
        first = seq + 1
        batch_rows = []
        for draft in drafts(size, n):
            seq += 1
            event = Event(
                branch_id, Seq(seq), BatchId(first), draft.payload, draft.producer, time.time()
            )
            batch_rows.append(encode_event(event))
        rows.append(batch_rows)
    insert = "INSERT INTO events VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
    async with await psycopg.AsyncConnection.connect(url, **connection_settings()) as db:
        await migrate_postgres(db)
        started = time.perf_counter()
        for batch_rows in rows:
            async with db.transaction(), db.cursor() as cursor:
                await cursor.executemany(insert, batch_rows)
        return time.perf_counter() - started


def pg_appends(url: str, rounds: int) -> list[dict[str, Any]]:
    results = []
    for size, batches in ((1, 1000), (100, 200)):
        our_times, floor_times = [], []
        for _ in range(rounds):  # alternating, so both see the same machine noise
            our_times.append(anyio.run(pg_ours, url, size, batches))
            floor_times.append(anyio.run(pg_floor, url, size, batches))
        ours_s, floor_s = statistics.median(our_times), statistics.median(floor_times)
        results.append(
            {
                "batch": size,
                "events": size * batches,
                "ours_events_per_s": size * batches / ours_s,
                "floor_events_per_s": size * batches / floor_s,
                "ours_batches_per_s": batches / ours_s,
                "ratio": ours_s / floor_s,
            }
        )
    return results


async def open_bench_store(where: Path | str) -> Any:
    from acp_agent.store import PostgresStore

    if isinstance(where, str):
        return await PostgresStore.open(where)
    return await SqliteStore.open(where)


async def long_session(where: Path | str, turns: int) -> str:
    """A session of `turns` turns: a prompt (1 event), a reply with a call (4), a result (1)."""
    store = await open_bench_store(where)
    try:
        async with open_runtime(store) as runtime:
            session = await runtime.create_session("/bench")
            for turn in range(turns):
                for size in (1, 4, 1):
                    await session.main.timeline.append(drafts(size, turn))
            return session.id
    finally:
        await store.aclose()


async def load(where: Path | str, session_id: str) -> tuple[float, int]:
    """Seconds to load the session and read its whole history; the events read."""
    store = await open_bench_store(where)
    try:
        async with open_runtime(store) as runtime:
            started = time.perf_counter()
            session = await runtime.load_session(session_id)  # type: ignore[arg-type]
            events = await session.main.timeline.read()
            return time.perf_counter() - started, len(events)
    finally:
        await store.aclose()


async def concurrent(where: Path | str, sessions: int, batches: int) -> float:
    """Events per second with `sessions` sessions appending 1-event batches at once."""
    store = await open_bench_store(where)
    try:
        async with open_runtime(store) as runtime:
            opened = [await runtime.create_session("/bench") for _ in range(sessions)]

            async def write(timeline: Timeline) -> None:
                for n in range(batches):
                    await timeline.append(drafts(1, n))

            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for session in opened:
                    group.start_soon(write, session.main.timeline)
            return sessions * batches / (time.perf_counter() - started)
    finally:
        await store.aclose()


def postgres_report(url: str, directory: Path, rounds: int) -> None:
    print("\nPostgreSQL: durable appends (one transaction per batch; median of rounds):\n")
    print("| batch | events | ours events/s | floor events/s | ours batches/s | ours/floor time |")
    print("|------:|-------:|--------------:|---------------:|---------------:|----------------:|")
    for row in pg_appends(url, rounds):
        print(
            f"| {row['batch']} | {row['events']} | {row['ours_events_per_s']:,.0f} "
            f"| {row['floor_events_per_s']:,.0f} | {row['ours_batches_per_s']:,.0f} "
            f"| {row['ratio']:.2f}x |"
        )
    print("\nLoad of a 1,000-turn session (6,000 events): load_session + the whole history:\n")
    print("| store | events | seconds (median) |")
    print("|-------|-------:|-----------------:|")
    for name, where in (("SQLite", directory / "long.db"), ("PostgreSQL", url)):
        session_id = anyio.run(long_session, where, 1000)
        runs = [anyio.run(load, where, session_id) for _ in range(rounds)]
        seconds = statistics.median(elapsed for elapsed, _ in runs)
        print(f"| {name} | {runs[0][1]:,} | {seconds:.3f} |")
    print("\nSessions appending at once (1-event batches, one store handle):\n")
    print("| sessions | SQLite events/s | PostgreSQL events/s |")
    print("|---------:|----------------:|--------------------:|")
    for sessions in (1, 4, 16):
        batches = max(50, 800 // sessions)
        sqlite_rates, pg_rates = [], []
        for r in range(rounds):
            sqlite_rates.append(
                anyio.run(concurrent, directory / f"c{sessions}-{r}.db", sessions, batches)
            )
            pg_rates.append(anyio.run(concurrent, url, sessions, batches))
        sqlite_rate, pg_rate = statistics.median(sqlite_rates), statistics.median(pg_rates)
        print(f"| {sessions} | {sqlite_rate:,.0f} | {pg_rate:,.0f} |")


def with_postgres(url: str | None, run: Callable[[str], None]) -> None:
    """`run(url)` on `url`, or on a throwaway cluster (fsync on) made for the run."""
    if url is not None:
        run(url)
        return
    sys.path.insert(0, str(ROOT))
    from tests.support.postgres import PostgresCluster

    cluster = PostgresCluster.start(fsync=True)
    try:
        name = cluster.create_database()
        version = cluster.execute("SHOW server_version")[0][0]
        print(f"PostgreSQL {version} (a throwaway cluster: fsync on, a unix socket)")
        run(cluster.url(name))
    finally:
        cluster.close()


# --- report --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each append run (median)")
    parser.add_argument("--events", type=int, default=100_000, help="events in the rebuilt branch")
    parser.add_argument("--synchronous", choices=["FULL", "NORMAL"], default="FULL")
    parser.add_argument("--dir", type=Path, help="where to put the databases (default: a temp dir)")
    parser.add_argument(
        "--store",
        choices=["sqlite", "postgresql"],
        default="sqlite",
        help="postgresql: measure the PostgreSQL store (and its comparisons with SQLite)",
    )
    parser.add_argument("--postgres-url", help="a database to use instead of a throwaway cluster")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=options.dir) as directory:
        where = Path(directory)
        if options.store == "postgresql":
            with_postgres(
                options.postgres_url, lambda url: postgres_report(url, where, options.rounds)
            )
            return
        print(
            f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, "
            f"synchronous={options.synchronous}, databases in {where}\n"
        )
        print("Durable appends (WAL, one transaction per batch; median of rounds):\n")
        print(
            "| batch | events | ours events/s | floor events/s | ours batches/s | ours/floor time |"
        )
        print(
            "|------:|-------:|--------------:|---------------:|---------------:|----------------:|"
        )
        for row in appends(where, options.synchronous, options.rounds):
            print(
                f"| {row['batch']} | {row['events']} | {row['ours_events_per_s']:,.0f} "
                f"| {row['floor_events_per_s']:,.0f} | {row['ours_batches_per_s']:,.0f} "
                f"| {row['ratio']:.2f}x |"
            )
        print(f"\nRebuild of a {options.events:,}-event branch (restore_state, SQLite):\n")
        print("| from | replayed events | seconds | % of full replay | peak traced memory |")
        print("|------|----------------:|--------:|-----------------:|-------------------:|")
        rows = rebuilds(where, options.events)
        full = rows[0]["seconds"]
        for row in rows:
            print(
                f"| {row['from']} | {row['replayed']:,} | {row['seconds']:.3f} "
                f"| {100 * row['seconds'] / full:.1f}% | {row['peak_bytes'] / 2**20:.1f} MiB |"
            )
        print("\nDecoding a session's events that hold content (best of 20 rounds):\n")
        print("| rows | events | decode_event ms | json.loads ms (floor) | ours/floor time |")
        print("|------|-------:|----------------:|----------------------:|----------------:|")
        for row in content_decoding(1000, 20):
            print(
                f"| {row['rows']} | {row['events']:,} | {row['ours'] * 1000:.1f} "
                f"| {row['floor'] * 1000:.1f} | {row['ours'] / row['floor']:.2f}x |"
            )


if __name__ == "__main__":
    main()
