"""A real acp-agent process writing a session, for tests that SIGKILL it.

python tests/store/crash_writer.py append DB SESSION_ID SEED
    Load the session (taking over the lease of a killed predecessor) and
    append batches of 1-8 notes forever. Each note's text is
    "<batch id>:<index>/<size>"; after each append returns, print
    "durable <last seq>" (the batch is committed).

python tests/store/crash_writer.py hold DB SESSION_ID
    Load the session, print "held <pid>", then sleep: a live lease holder.
    Each line read from stdin then appends one note: "appended <seq>" once
    durable, or "refused <message>" when the store refuses it.

DB is an SQLite file, or a PostgreSQL URL (`postgresql://...`; the lease
timeout from `ACP_AGENT_STORE_LEASE_TIMEOUT_S`, default 30 s).
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import anyio

from acp_agent.core import (
    EventDraft,
    NotificationReceived,
    SessionId,
    Store,
    StoreError,
    open_runtime,
)
from acp_agent.store import LEASE_TIMEOUT_ENV, PostgresStore, SqliteStore


async def open_store(db: str) -> Store:
    if db.startswith("postgresql://"):
        timeout_s = float(os.environ.get(LEASE_TIMEOUT_ENV) or 30)
        return await PostgresStore.open(db, lease_timeout_s=timeout_s)
    return await SqliteStore.open(Path(db))


async def append_forever(db: str, session_id: SessionId, seed: int) -> None:
    rng = random.Random(seed)
    store = await open_store(db)
    async with open_runtime(store) as runtime:
        session = await runtime.load_session(session_id)
        main = session.main
        while True:
            size = rng.randint(1, 8)
            batch_id = main.timeline.last_published_seq + 1
            drafts = [
                EventDraft(NotificationReceived("crash", f"{batch_id}:{i}/{size}"), "crash_writer")
                for i in range(size)
            ]
            batch = await main.append(drafts)
            print(f"durable {batch.last_seq}", flush=True)


async def hold(db: str, session_id: SessionId) -> None:
    store = await open_store(db)
    async with open_runtime(store) as runtime:
        session = await runtime.load_session(session_id)
        print(f"held {os.getpid()}", flush=True)
        async with anyio.wrap_file(sys.stdin) as lines:
            async for _ in lines:
                try:
                    batch = await session.main.append(
                        [EventDraft(NotificationReceived("hold", "one more"), "crash_writer")]
                    )
                except StoreError as exc:
                    print(f"refused {exc}", flush=True)
                else:
                    print(f"appended {batch.last_seq}", flush=True)
        await anyio.sleep_forever()


def main(argv: list[str]) -> None:
    mode, db, session_id = argv[0], argv[1], SessionId(argv[2])
    if mode == "append":
        anyio.run(append_forever, db, session_id, int(argv[3]))
    elif mode == "hold":
        anyio.run(hold, db, session_id)
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
