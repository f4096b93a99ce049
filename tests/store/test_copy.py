"""Copying sessions between stores: everything arrives, a second run copies nothing, a cut-short
copy carries on, and the check finds what differs.

From a real SQLite file to a real PostgreSQL database (the migration people run), and between
two SQLite files (which needs no server).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_agent.core import (
    Batch,
    BranchCreated,
    BranchEnded,
    BranchId,
    Seq,
    SessionMetadataChanged,
    Store,
    new_id,
)
from acp_agent.store import PostgresStore, SqliteStore, copy_sessions, verify_copy
from tests.core.support import new_session
from tests.support.postgres import fresh_database, skip_without_postgres

from .contract import batch_of, note, result, rule

pytestmark = pytest.mark.anyio

Opener = Callable[[], Awaitable[Store]]


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: Any) -> Iterator[Opener]:
    if request.param == "sqlite":
        yield lambda: SqliteStore.open(tmp_path / "target.sqlite3")
        return
    if anyio_backend == "trio":
        pytest.skip("psycopg's async connections run on asyncio only (so does the agent)")
    with fresh_database(skip_without_postgres(pytest.skip)) as url:
        yield lambda: PostgresStore.open(url)


@contextlib.asynccontextmanager
async def opened(open_store: Opener) -> AsyncIterator[Store]:
    store = await open_store()
    try:
        yield store
    finally:
        await store.aclose()


#: A file's content with every byte value.
BYTES = bytes(range(256)) * 64


async def fill(store: Store) -> None:
    """Two sessions: one with a title, a result, a child branch that ended, and rules."""
    first = await new_session(store, cwd="/work/a", at=1.0)
    await store.append_batch(
        batch_of(first, 1, note("a"), result("call_1"), SessionMetadataChanged("Fix it"))
    )
    child = BranchId(new_id("br"))
    created = BranchCreated(child, first.main_branch_id, Seq(3), "child")
    await store.append_batch(batch_of(first, 4, created, note("in the child"), branch=child))
    await store.append_batch(batch_of(first, 6, BranchEnded(child, "done"), branch=child))
    second = await new_session(store, cwd="/work/b", at=2.0)
    await store.append_batch(batch_of(second, 1, *(note(str(i)) for i in range(30))))
    await store.put_files(first.session_id, "checkpoint", [("d1", b"one"), ("d2", BYTES)])
    await store.put_output(first.session_id, "result/call_1", [b"whole ", BYTES, b" result"])
    await store.add_permission_rule(rule("rule_1", "/work/a"))
    await store.add_permission_rule(rule("rule_2", "/work/a", decision="deny"))
    await store.revoke_permission_rule("rule_2", revoked_at=50.0)
    await store.release_sessions([first.session_id, second.session_id])


async def test_a_copy_holds_everything_and_a_second_run_copies_nothing(
    tmp_path: Path, target: Opener
) -> None:
    async with opened(lambda: SqliteStore.open(tmp_path / "source.sqlite3")) as source:
        await fill(source)
        async with opened(target) as into:
            report = await copy_sessions(source, into, chunk_events=7)
            verified = await verify_copy(source, into)
            again = await copy_sessions(source, into)
            assert await into.list_permission_rules() == [rule("rule_1", "/work/a")]
            first = (await source.list_sessions(cwd="/work/a"))[0].session_id
            assert await into.get_file(first, "checkpoint", "d2") == BYTES
            assert await into.list_files(first) == [("checkpoint", "d1"), ("checkpoint", "d2")]
            outputs = [await into.get_output(first, "result/call_1", i) for i in range(4)]
            await source.put_files(first, "checkpoint", [("d3", b"later")])
            await source.put_output(first, "job/job_1", [b"output so far"])
            grown = await verify_copy(source, into)
            again_with_output = await copy_sessions(source, into)
            regrown = await verify_copy(source, into)
            copied_job_output = await into.get_output(first, "job/job_1", 0)
    assert (len(report.copied), report.events, report.rules_copied) == (2, 36, 2)
    assert (verified.sessions, verified.branches, verified.events, verified.rules) == (2, 3, 36, 2)
    assert verified.differences == ()
    assert (again.copied, len(again.present), again.events, again.rules_present) == ((), 2, 0, 2)
    assert [d for d in grown.differences if "files differ" in d] == [
        f"session {first}: its files differ"
    ]
    assert outputs == [b"whole ", BYTES, b" result", None]
    assert f"session {first}: its outputs differ" in grown.differences
    assert again_with_output.events == 0
    assert regrown.differences == ()
    assert copied_job_output == b"output so far"


async def test_a_copy_cut_short_carries_on_and_the_check_sees_the_gap_first(
    tmp_path: Path, target: Opener
) -> None:
    async with opened(lambda: SqliteStore.open(tmp_path / "source.sqlite3")) as source:
        await fill(source)
        [newest, oldest] = await source.list_sessions()
        async with opened(target) as into:
            # As a run stopped part way: the session there, only some of its events.
            await into.create_session(oldest, (await source.list_branches(oldest.session_id))[0])
            prefix = (await source.read(oldest.main_branch_id))[:2]
            await into.append_batch(Batch(oldest.session_id, oldest.main_branch_id, tuple(prefix)))
            cut = await verify_copy(source, into)
            report = await copy_sessions(source, into)
            whole = await verify_copy(source, into)
    assert any("not in the target" in d for d in cut.differences)
    assert any("branches differ" in d or "events" in d for d in cut.differences)
    assert report.copied == (newest.session_id, oldest.session_id)
    assert whole.differences == ()


async def test_a_session_in_use_is_skipped_and_named(tmp_path: Path, target: Opener) -> None:
    path = tmp_path / "source.sqlite3"
    async with opened(lambda: SqliteStore.open(path)) as source:
        await fill(source)
        [busy, _] = await source.list_sessions()
        async with opened(lambda: SqliteStore.open(path)) as writer, opened(target) as into:
            await writer.acquire_session(busy.session_id)
            report = await copy_sessions(source, into)
    assert len(report.copied) == 1
    [held] = report.held
    assert busy.session_id in held
    assert "open in another acp-agent process" in held
