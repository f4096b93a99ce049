"""The behaviour every `Store` shows; each implementation's test module subclasses it.

A subclass provides the `stores` fixture: a `StoreFactory` whose `open()`
yields a store and whose `open_other_writer()` yields another handle on the
same data, standing for a second acp-agent process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Protocol

import attrs
import pytest

from acp_agent.content import TextContent
from acp_agent.core import (
    NO_SEQ,
    Batch,
    BatchId,
    BranchCreated,
    BranchEnded,
    BranchId,
    BranchRecord,
    CallId,
    CompactionRecorded,
    Event,
    ForkOrigin,
    NotificationReceived,
    Payload,
    PermissionRule,
    Seq,
    SeqTaken,
    SessionHeld,
    SessionId,
    SessionMetadataChanged,
    SessionPosition,
    SessionRecord,
    Snapshot,
    Store,
    StoreConflict,
    StoreNotFound,
    StoreUnavailable,
    ToolResultRecorded,
    UnknownPayload,
    new_id,
)
from tests.core.support import new_session, sample_payloads

pytestmark = pytest.mark.anyio


class StoreFactory(Protocol):
    def open(self) -> contextlib.AbstractAsyncContextManager[Store]: ...

    def open_other_writer(self) -> contextlib.AbstractAsyncContextManager[Store]: ...


def events(
    branch_id: BranchId, first: int, payloads: Sequence[Payload], *, at: float = 10.0
) -> tuple[Event, ...]:
    return tuple(
        Event(branch_id, Seq(first + i), BatchId(first), p, "test", at)
        for i, p in enumerate(payloads)
    )


def batch_of(
    session: SessionRecord,
    first: int,
    *payloads: Payload,
    branch: BranchId | None = None,
    at: float = 10.0,
) -> Batch:
    branch_id = session.main_branch_id if branch is None else branch
    return Batch(session.session_id, branch_id, events(branch_id, first, payloads, at=at))


def note(text: str) -> NotificationReceived:
    return NotificationReceived("test", text)


def rule(
    rule_id: str,
    workspace: str,
    *,
    tool: str = "shell",
    scope: str = "tool",
    pattern: str = "",
    decision: str = "allow",
    revoked_at: float | None = None,
    owner: str = "",
) -> PermissionRule:
    return PermissionRule(
        rule_id,
        workspace,
        tool,
        scope,
        pattern,
        decision,
        created_at=10.0,
        session_id=SessionId("sess_1"),
        call_id=CallId("call_1"),
        revoked_at=revoked_at,
        owner=owner,
    )


def result(call: str) -> ToolResultRecorded:
    return ToolResultRecorded(CallId(call), "req_1", [TextContent("ok")], False)


def snapshot(branch_id: BranchId, anchor: int, *, interpreter: str = "context") -> Snapshot:
    return Snapshot(
        branch_id,
        interpreter,
        "1",
        Seq(anchor),
        f"digest{anchor}",
        ((branch_id, 0),),
        b"state",
        "sum",
        1.0,
    )


class StoreContract:
    """Subclass and provide a `stores` fixture returning a `StoreFactory`."""

    # --- sessions ------------------------------------------------------------------

    async def test_a_created_session_reads_back_with_its_main_branch(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            session = await new_session(store, cwd="/work/a")
            assert await store.get_session(session.session_id) == session
            assert await store.list_branches(session.session_id) == [
                BranchRecord(session.main_branch_id, session.session_id, None, NO_SEQ, "main", 1.0)
            ]
            assert await store.last_durable_seq(session.main_branch_id) == NO_SEQ
            assert await store.read(session.main_branch_id) == []

    async def test_creating_an_existing_session_conflicts(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            main = (await store.list_branches(session.session_id))[0]
            with pytest.raises(StoreConflict):
                await store.create_session(session, main)

    async def test_unknown_sessions_and_branches_are_not_found(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            nobody = SessionId("sess_nobody")
            for call in (
                store.get_session(nobody),
                store.acquire_session(nobody),
                store.list_branches(nobody),
                store.read(BranchId("br_nobody")),
                store.last_durable_seq(BranchId("br_nobody")),
            ):
                with pytest.raises(StoreNotFound):
                    await call

    async def test_sessions_list_most_recently_updated_first_and_filter_by_cwd(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            old = await new_session(store, cwd="/work/a", at=1.0)
            other = await new_session(store, cwd="/work/b", at=2.0)
            new = await new_session(store, cwd="/work/a", at=3.0)
            assert [s.session_id for s in await store.list_sessions()] == [
                new.session_id,
                other.session_id,
                old.session_id,
            ]
            # Appending makes a session the most recent.
            await store.append_batch(batch_of(old, 1, note("hi"), at=9.0))
            listed = await store.list_sessions(cwd="/work/a")
            assert [s.session_id for s in listed] == [old.session_id, new.session_id]
            assert listed[0].updated_at == 9.0
            assert len(await store.list_sessions(limit=1)) == 1

    async def test_a_session_belongs_to_its_owner_and_lists_filter_by_owner(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            alices = await new_session(store, cwd="/work/a", at=1.0, owner="alice")
            bobs = await new_session(store, cwd="/work/a", at=2.0, owner="bob")
            also_alices = await new_session(store, cwd="/work/b", at=3.0, owner="alice")
            assert (await store.get_session(bobs.session_id)).owner == "bob"
            listed = await store.list_sessions(owner="alice")
            assert [s.session_id for s in listed] == [also_alices.session_id, alices.session_id]
            assert [s.owner for s in listed] == ["alice", "alice"]
            in_a = await store.list_sessions(cwd="/work/a", owner="bob")
            assert [s.session_id for s in in_a] == [bobs.session_id]
            assert await store.list_sessions(owner="carol") == []
            assert len(await store.list_sessions()) == 3  # no owner named: everyone's

    async def test_sessions_page_after_a_position_without_gaps_or_repeats(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            # Equal times are ordered by id, so a page boundary inside a tie loses nothing.
            created = [await new_session(store, at=float(i // 2)) for i in range(5)]
            expected = sorted(created, key=SessionPosition.of, reverse=True)
            pages: list[list[SessionRecord]] = []
            after: SessionPosition | None = None
            while page := await store.list_sessions(limit=2, after=after):
                pages.append(page)
                after = SessionPosition.of(page[-1])
            assert [len(page) for page in pages] == [2, 2, 1]
            assert [s.session_id for page in pages for s in page] == [
                s.session_id for s in expected
            ]
            listed = await store.list_sessions(cwd="/work/elsewhere", after=after)
            assert listed == []

    async def test_a_deleted_session_is_gone_with_its_history(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            kept = await new_session(store)
            gone = await new_session(store)
            await store.append_batch(batch_of(gone, 1, note("x"), result("call_1")))
            child = BranchId(new_id("br"))
            created = BranchCreated(child, gone.main_branch_id, Seq(2), "child")
            await store.append_batch(batch_of(gone, 3, created, branch=child))
            await store.put_snapshot(snapshot(gone.main_branch_id, 1))
            await store.delete_session(gone.session_id)
            assert [s.session_id for s in await store.list_sessions()] == [kept.session_id]
            with pytest.raises(StoreNotFound):
                await store.get_session(gone.session_id)
            for branch_id in (gone.main_branch_id, child):
                with pytest.raises(StoreNotFound):
                    await store.read(branch_id)
            assert not await store.has_result(gone.main_branch_id, CallId("call_1"))
            assert await store.get_snapshots(gone.main_branch_id, "context") == []
            await store.delete_session(gone.session_id)  # unknown now: nothing to do
            await store.delete_session(SessionId("sess_never"))

    async def test_a_session_another_writer_holds_is_not_deleted(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store, stores.open_other_writer() as other:
            session = await new_session(store)
            with pytest.raises(SessionHeld):
                await other.delete_session(session.session_id)
            assert await other.get_session(session.session_id) == session

    async def test_a_title_change_updates_the_session_row_in_the_same_batch(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            await store.append_batch(batch_of(session, 1, SessionMetadataChanged("Fix the parser")))
            assert (await store.get_session(session.session_id)).title == "Fix the parser"

    async def test_a_session_keeps_its_additional_directories_in_order_until_replaced(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            main_id = BranchId(new_id("br"))
            record = SessionRecord(
                SessionId(new_id("sess")),
                "/work/app",
                main_id,
                1.0,
                1.0,
                additional_directories=("/work/lib", "/work/docs"),
            )
            main = BranchRecord(main_id, record.session_id, None, NO_SEQ, "main", 1.0)
            await store.create_session(record, main)
            assert await store.get_session(record.session_id) == record
            await store.set_additional_directories(record.session_id, ["/work/docs"])
            [listed] = await store.list_sessions()
            assert listed.additional_directories == ("/work/docs",)
            await store.set_additional_directories(record.session_id, [])
            assert (await store.get_session(record.session_id)).additional_directories == ()
            # A session created without any has none.
            plain = await new_session(store)
            assert (await store.get_session(plain.session_id)).additional_directories == ()

    async def test_additional_directories_are_written_only_under_the_lease(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store, stores.open_other_writer() as other:
            session = await new_session(store)
            with pytest.raises(SessionHeld):
                await other.set_additional_directories(session.session_id, ["/elsewhere"])
            with pytest.raises(StoreNotFound):
                await store.set_additional_directories(SessionId("sess_nobody"), ["/x"])
            await store.release_session(session.session_id)
            with pytest.raises(SessionHeld):
                await store.set_additional_directories(session.session_id, ["/x"])
            assert (await other.get_session(session.session_id)).additional_directories == ()

    # --- events --------------------------------------------------------------------

    async def test_appended_events_read_back_equal_for_every_kind(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            payloads = [p for p in sample_payloads() if not isinstance(p, BranchEnded)]
            batch = batch_of(session, 1, *payloads)
            await store.append_batch(batch)
            assert await store.read(session.main_branch_id) == list(batch.events)
            assert await store.last_durable_seq(session.main_branch_id) == len(payloads)

    async def test_an_event_of_an_unknown_kind_is_stored_and_read_back(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            batch = batch_of(session, 1, UnknownPayload("plugin.weather", {"sky": "grey"}))
            await store.append_batch(batch)
            assert await store.read(session.main_branch_id) == list(batch.events)

    async def test_reads_take_the_range_after_gt_up_to_lte(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            await store.append_batch(batch_of(session, 1, *(note(str(i)) for i in range(1, 7))))
            main = session.main_branch_id
            assert [e.seq for e in await store.read(main, gt=Seq(2), lte=Seq(4))] == [3, 4]
            assert [e.seq for e in await store.read(main, gt=Seq(4))] == [5, 6]
            assert await store.read(main, gt=Seq(6)) == []

    async def test_the_events_of_a_read_share_their_branch_id_and_producer(
        self, stores: StoreFactory
    ) -> None:
        # A load reads thousands of events: one string of each, not a copy per event.
        async with stores.open() as store:
            session = await new_session(store)
            await store.append_batch(batch_of(session, 1, note("a"), note("b"), note("c")))
            first, *others = await store.read(session.main_branch_id)
            assert first.branch_id == session.main_branch_id
            assert all(event.branch_id is first.branch_id for event in others)
            assert all(event.producer is first.producer for event in others)

    async def test_a_batch_must_start_at_the_next_seq(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            await store.append_batch(batch_of(session, 1, note("a"), note("b")))
            with pytest.raises(SeqTaken, match="next free seq is 3"):
                await store.append_batch(batch_of(session, 2, note("again")))
            with pytest.raises(SeqTaken):
                await store.append_batch(batch_of(session, 4, note("gap")))
            assert [e.seq for e in await store.read(session.main_branch_id)] == [1, 2]

    async def test_a_batch_that_cannot_be_stored_leaves_nothing_behind(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            unserialisable = NotificationReceived("test", {1, 2})  # type: ignore[arg-type]
            with pytest.raises(TypeError):
                await store.append_batch(batch_of(session, 1, note("fine"), unserialisable))
            assert await store.read(session.main_branch_id) == []
            assert await store.last_durable_seq(session.main_branch_id) == NO_SEQ
            await store.append_batch(batch_of(session, 1, note("fine")))

    async def test_a_branch_is_created_by_its_first_event(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            await store.append_batch(batch_of(session, 1, note("a"), note("b")))
            child = BranchId(new_id("br"))
            opening = batch_of(
                session,
                3,
                BranchCreated(child, session.main_branch_id, Seq(2), "tests"),
                branch=child,
            )
            await store.append_batch(opening)
            assert (await store.list_branches(session.session_id))[1] == BranchRecord(
                child, session.session_id, session.main_branch_id, Seq(2), "tests", 10.0
            )
            assert await store.read(child) == list(opening.events)
            assert await store.read(session.main_branch_id, gt=Seq(2)) == []
            assert await store.last_durable_seq(child) == 3

    async def test_a_new_branch_has_its_cut_as_last_durable_seq(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            await store.append_batch(batch_of(session, 1, note("a"), note("b")))
            child = BranchId(new_id("br"))
            created = BranchCreated(child, session.main_branch_id, Seq(2), None)
            with pytest.raises(SeqTaken):  # a child's first seq is its cut + 1
                await store.append_batch(batch_of(session, 1, created, branch=child))
            await store.append_batch(batch_of(session, 3, created, branch=child))
            assert await store.last_durable_seq(child) == 3

    async def test_a_batch_for_an_unknown_branch_is_not_found(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            with pytest.raises(StoreNotFound):
                await store.append_batch(
                    batch_of(session, 1, note("x"), branch=BranchId("br_none"))
                )
            orphan = BranchId(new_id("br"))
            created = BranchCreated(orphan, BranchId("br_none"), NO_SEQ, None)
            with pytest.raises(StoreNotFound):
                await store.append_batch(batch_of(session, 1, created, branch=orphan))

    async def test_an_ended_branch_takes_no_more_events(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            main = session.main_branch_id
            await store.append_batch(
                batch_of(session, 1, note("a"), BranchEnded(main, "done"), at=5.0)
            )
            assert (await store.list_branches(session.session_id))[0].closed_at == 5.0
            with pytest.raises(StoreConflict, match="ended"):
                await store.append_batch(batch_of(session, 3, note("late")))

    async def test_results_are_tracked_in_the_batch_that_records_them(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            main = session.main_branch_id
            assert not await store.has_result(main, CallId("call_a"))
            await store.append_batch(batch_of(session, 1, note("a"), result("call_a")))
            assert await store.has_result(main, CallId("call_a"))
            assert await store.has_result(main, CallId("call_a"), lte=Seq(2))
            assert not await store.has_result(main, CallId("call_a"), lte=Seq(1))
            assert not await store.has_result(main, CallId("call_b"))

    # --- forks -----------------------------------------------------------------------

    async def test_a_fork_is_created_with_its_copied_history_in_one_step(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            source = await new_session(store)
            await store.append_batch(batch_of(source, 1, note("a"), result("call_a")))
            copied = await store.read(source.main_branch_id)
            fork_main = BranchId(new_id("br"))
            fork = SessionRecord(
                SessionId(new_id("sess")),
                source.cwd,
                fork_main,
                2.0,
                2.0,
                "fork",
                ForkOrigin(source.session_id, source.main_branch_id, Seq(2)),
            )
            history = [attrs.evolve(e, branch_id=fork_main) for e in copied]
            main = BranchRecord(fork_main, fork.session_id, None, NO_SEQ, "main", 2.0)
            await store.create_session(fork, main, history=history)
            assert await store.get_session(fork.session_id) == fork
            assert await store.read(fork_main) == history
            assert await store.has_result(fork_main, CallId("call_a"))
            await store.append_batch(batch_of(fork, 3, note("only in the fork")))
            assert await store.last_durable_seq(source.main_branch_id) == 2

    async def test_fork_history_must_be_dense_from_one(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            main_id = BranchId(new_id("br"))
            record = SessionRecord(SessionId(new_id("sess")), "/w", main_id, 1.0, 1.0)
            main = BranchRecord(main_id, record.session_id, None, NO_SEQ, "main", 1.0)
            with pytest.raises(ValueError, match="dense"):
                await store.create_session(record, main, history=events(main_id, 2, [note("x")]))

    # --- leases --------------------------------------------------------------------------

    async def test_a_second_writer_gets_session_held_and_can_still_read(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store, stores.open_other_writer() as other:
            session = await new_session(store)
            await store.append_batch(batch_of(session, 1, note("mine")))
            with pytest.raises(SessionHeld, match="open in another acp-agent process") as held:
                await other.acquire_session(session.session_id)
            assert held.value.holder is not None
            with pytest.raises(SessionHeld):
                await other.append_batch(batch_of(session, 2, note("theirs")))
            assert len(await other.read(session.main_branch_id)) == 1
            await store.release_session(session.session_id)
            await other.acquire_session(session.session_id)
            await other.append_batch(batch_of(session, 2, note("theirs now")))
            with pytest.raises(SessionHeld):
                await store.append_batch(batch_of(session, 3, note("mine again?")))

    async def test_appending_without_the_lease_is_refused(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            await store.release_session(session.session_id)
            with pytest.raises(SessionHeld, match="not open for writing"):
                await store.append_batch(batch_of(session, 1, note("x")))
            await store.acquire_session(session.session_id)
            await store.acquire_session(session.session_id)  # idempotent
            await store.append_batch(batch_of(session, 1, note("x")))

    async def test_releasing_many_sessions_at_once_frees_only_ours(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store, stores.open_other_writer() as other:
            mine = [await new_session(store) for _ in range(3)]
            theirs = await new_session(other)
            await store.release_sessions([s.session_id for s in mine] + [theirs.session_id])
            for session in mine:
                await other.acquire_session(session.session_id)  # free now
            with pytest.raises(SessionHeld):
                await store.acquire_session(theirs.session_id)  # still theirs
            await store.release_sessions([])

    async def test_closing_a_store_releases_its_leases(self, stores: StoreFactory) -> None:
        async with stores.open_other_writer() as other:
            async with stores.open() as store:
                session = await new_session(store)
            await other.acquire_session(session.session_id)

    async def test_a_closed_store_is_unavailable(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            await store.aclose()
            await store.aclose()  # idempotent
            with pytest.raises(StoreUnavailable):
                await store.read(session.main_branch_id)

    # --- permission rules ----------------------------------------------------------------

    async def test_permission_rules_list_oldest_first_and_filter_by_workspace(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            first = rule("rule_1", "/work/a", scope="command_prefix", pattern="git status")
            second = rule("rule_2", "/work/b", decision="deny")
            third = rule("rule_3", "/work/a", tool="write", scope="path_glob", pattern="src/**")
            for each in (first, second, third):
                await store.add_permission_rule(each)
            assert await store.list_permission_rules() == [first, second, third]
            assert await store.list_permission_rules(workspace="/work/a") == [first, third]

    async def test_a_rule_belongs_to_its_owner_and_is_kept_once_per_owner(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            alices = rule("rule_1", "/work/a", owner="alice")
            bobs = rule("rule_2", "/work/a", owner="bob")  # says the same, for another person
            assert await store.add_permission_rule(alices) == alices
            assert await store.add_permission_rule(bobs) == bobs
            again = rule("rule_3", "/work/a", owner="alice")
            assert await store.add_permission_rule(again) == alices
            assert await store.list_permission_rules(workspace="/work/a", owner="alice") == [alices]
            assert await store.list_permission_rules(owner="bob") == [bobs]
            assert await store.list_permission_rules(owner="carol") == []
            assert await store.list_permission_rules() == [alices, bobs]

    async def test_a_revoked_rule_is_kept_as_a_record_but_no_longer_listed(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            await store.add_permission_rule(rule("rule_1", "/work/a"))
            revoked = await store.revoke_permission_rule("rule_1", revoked_at=50.0)
            assert revoked == rule("rule_1", "/work/a", revoked_at=50.0)
            again = await store.revoke_permission_rule("rule_1", revoked_at=60.0)
            assert again == revoked
            assert await store.list_permission_rules(workspace="/work/a") == []
            assert await store.list_permission_rules(include_revoked=True) == [revoked]

    async def test_revoking_an_unknown_rule_is_not_found(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            with pytest.raises(StoreNotFound):
                await store.revoke_permission_rule("rule_nope", revoked_at=1.0)

    async def test_a_rule_id_is_taken_once(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            await store.add_permission_rule(rule("rule_1", "/work/a"))
            with pytest.raises(StoreConflict):
                await store.add_permission_rule(rule("rule_1", "/work/b"))

    async def test_a_rule_that_says_what_one_in_force_says_is_kept_once(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            first = rule("rule_1", "/work/a", scope="exact_command", pattern="a; b")
            assert await store.add_permission_rule(first) == first
            assert (
                await store.add_permission_rule(
                    rule("rule_2", "/work/a", scope="exact_command", pattern="a; b")
                )
                == first
            )
            # Saying something else (another decision, workspace or pattern) is another rule.
            others = [
                rule("rule_3", "/work/a", scope="exact_command", pattern="a; b", decision="deny"),
                rule("rule_4", "/work/b", scope="exact_command", pattern="a; b"),
                rule("rule_5", "/work/a", scope="exact_command", pattern="a; c"),
            ]
            assert [await store.add_permission_rule(each) for each in others] == others
            await store.revoke_permission_rule("rule_1", revoked_at=50.0)
            again = rule("rule_6", "/work/a", scope="exact_command", pattern="a; b")
            assert await store.add_permission_rule(again) == again  # the kept one was revoked
            assert await store.list_permission_rules() == [*others, again]

    async def test_rules_outlive_the_handle_that_added_them(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            await store.add_permission_rule(rule("rule_1", "/work/a"))
        async with stores.open_other_writer() as other:
            assert await other.list_permission_rules() == [rule("rule_1", "/work/a")]

    # --- session files ----------------------------------------------------------------

    async def test_files_follow_their_session_kept_once_per_key(self, stores: StoreFactory) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            other = await new_session(store)
            await store.put_files(session.session_id, "checkpoint", [("d1", b"one"), ("d2", b"")])
            await store.put_files(session.session_id, "checkpoint", [("d1", b"ignored")])
            await store.put_files(session.session_id, "checkpoint", [])
            assert await store.get_file(session.session_id, "checkpoint", "d1") == b"one"
            assert await store.get_file(session.session_id, "checkpoint", "d2") == b""
            assert await store.get_file(session.session_id, "other", "d1") is None
            assert await store.get_file(other.session_id, "checkpoint", "d1") is None
            await store.put_files(session.session_id, "a_kind", [("z", b"z")])
            assert await store.list_files(session.session_id) == [
                ("a_kind", "z"),
                ("checkpoint", "d1"),
                ("checkpoint", "d2"),
            ]
            assert await store.list_files(other.session_id) == []
        async with stores.open_other_writer() as elsewhere:  # another process, no lease
            got = await elsewhere.get_file(session.session_id, "checkpoint", "d1")
            assert got == b"one"

    async def test_a_fork_gets_its_sources_files_and_deleting_a_session_drops_them(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            source = await new_session(store)
            fork = await new_session(store)
            big = bytes(range(256)) * 4096  # 1 MiB, every byte value
            await store.put_files(source.session_id, "checkpoint", [("big", big)])
            await store.put_files(fork.session_id, "checkpoint", [("own", b"mine")])
            await store.copy_files(source.session_id, fork.session_id)
            await store.copy_files(source.session_id, fork.session_id)  # again: no conflict
            assert await store.get_file(fork.session_id, "checkpoint", "big") == big
            await store.delete_session(source.session_id)
            assert await store.get_file(source.session_id, "checkpoint", "big") is None
            assert await store.get_file(fork.session_id, "checkpoint", "big") == big
            assert await store.get_file(fork.session_id, "checkpoint", "own") == b"mine"

    # --- session outputs --------------------------------------------------------------

    async def test_an_output_is_kept_in_chunks_read_back_one_at_a_time_and_replaced_whole(
        self, stores: StoreFactory
    ) -> None:
        every_byte = bytes(range(256)) * 4096  # 1 MiB, every byte value
        async with stores.open() as store:
            session = await new_session(store)
            other = await new_session(store)
            sid = session.session_id
            await store.put_output(sid, "result/c1", [b"first ", every_byte, b"last"])
            assert await store.get_output(sid, "result/c1", 0) == b"first "
            assert await store.get_output(sid, "result/c1", 1) == every_byte
            assert await store.get_output(sid, "result/c1", 2) == b"last"
            assert await store.get_output(sid, "result/c1", 3) is None
            assert await store.get_output(sid, "result/other", 0) is None
            assert await store.get_output(other.session_id, "result/c1", 0) is None
            await store.put_output(sid, "job/j1", [b"so far"])
            await store.put_output(sid, "job/j1", [b"later"])  # replaced whole
            assert await store.get_output(sid, "job/j1", 0) == b"later"
            assert await store.list_outputs(sid) == [
                ("job/j1", 5),
                ("result/c1", 6 + len(every_byte) + 4),
            ]
            await store.put_output(sid, "job/j1", [])  # no chunks: nothing kept
            assert await store.list_outputs(sid) == [("result/c1", 6 + len(every_byte) + 4)]
            assert await store.list_outputs(other.session_id) == []
        async with stores.open_other_writer() as elsewhere:  # another process, no lease
            assert await elsewhere.get_output(sid, "result/c1", 2) == b"last"

    async def test_an_output_grows_from_a_chunk_on_and_is_read_whole_in_one_read(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            sid = session.session_id
            assert await store.read_output(sid, "replay/k") == []
            await store.put_output(sid, "replay/k", [b"a", b"b"])
            await store.put_output(sid, "replay/k", [b"c"], start=2)  # appended
            assert await store.read_output(sid, "replay/k") == [b"a", b"b", b"c"]
            await store.put_output(sid, "replay/k", [b"B", b"C", b"D"], start=1)  # the rest
            assert await store.read_output(sid, "replay/k") == [b"a", b"B", b"C", b"D"]
            await store.put_output(sid, "replay/k", [], start=2)  # cut after chunk 1
            assert await store.read_output(sid, "replay/k") == [b"a", b"B"]
            assert await store.get_output(sid, "replay/k", 1) == b"B"
            assert await store.read_output(sid, "replay/other") == []
        async with stores.open_other_writer() as elsewhere:
            assert await elsewhere.read_output(sid, "replay/k") == [b"a", b"B"]

    async def test_an_output_whose_chunks_fail_midway_leaves_the_one_before(
        self, stores: StoreFactory
    ) -> None:
        class Broken(Exception):
            pass

        def failing() -> Iterator[bytes]:
            yield b"new "
            raise Broken

        class FailsMidway:
            def __iter__(self) -> Iterator[bytes]:
                return failing()

        async with stores.open() as store:
            session = await new_session(store)
            await store.put_output(session.session_id, "result/c", [b"old", b" kept"])
            with pytest.raises(Broken):
                await store.put_output(session.session_id, "result/c", FailsMidway())
            assert await store.get_output(session.session_id, "result/c", 0) == b"old"
            assert await store.get_output(session.session_id, "result/c", 1) == b" kept"

    async def test_a_fork_gets_its_sources_outputs_and_deleting_a_session_drops_them(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            source = await new_session(store)
            fork = await new_session(store)
            await store.put_output(source.session_id, "result/c", [b"a", b"b"])
            await store.copy_files(source.session_id, fork.session_id)
            await store.delete_session(source.session_id)
            assert await store.list_outputs(source.session_id) == []
            assert await store.get_output(fork.session_id, "result/c", 1) == b"b"

    # --- snapshots ------------------------------------------------------------------------

    async def test_snapshots_come_newest_first_and_only_the_newest_are_kept(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            main = session.main_branch_id
            for anchor in (3, 9, 6):
                await store.put_snapshot(snapshot(main, anchor), keep=2)
            await store.put_snapshot(snapshot(main, 1, interpreter="other"))
            assert await store.get_snapshots(main, "context") == [
                snapshot(main, 9),
                snapshot(main, 6),
            ]
            assert await store.get_snapshots(main, "other") == [
                snapshot(main, 1, interpreter="other")
            ]

    async def test_deleting_snapshots_never_touches_compaction_records(
        self, stores: StoreFactory
    ) -> None:
        async with stores.open() as store:
            session = await new_session(store)
            main = session.main_branch_id
            batch = batch_of(session, 1, note("a"), CompactionRecorded("cmp_1", Seq(1), "summary"))
            await store.append_batch(batch)
            await store.put_snapshot(snapshot(main, 2))
            await store.delete_snapshots(main)
            assert await store.get_snapshots(main, "context") == []
            assert await store.read(main) == list(batch.events)
