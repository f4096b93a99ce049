"""Sessions and branches: create, load, branch, fork, and four different ways to stop."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
import pytest

from acp_agent.content import TextContent
from acp_agent.core import (
    BRANCH,
    DISPATCHER,
    AlreadyStarted,
    Branch,
    BranchClosed,
    BranchState,
    CallId,
    Event,
    EventDraft,
    IllegalCut,
    Runtime,
    Scope,
    ScopeKind,
    Seq,
    ServiceKey,
    ServiceRegistry,
    SessionClosed,
    SessionHeld,
    SessionState,
    StoreNotFound,
    Timeline,
    ToolResultRecorded,
    TurnId,
    TurnState,
    open_runtime,
)
from acp_agent.store import MemoryDatabase, MemoryStore

from .support import notes, texts_of, wait_until

pytestmark = pytest.mark.anyio


class Worker:
    """A branch service with background work whose cancellation takes a while to settle."""

    def __init__(self, branch: Branch) -> None:
        self.branch = branch
        self.running = False
        self.settled = False
        self.rebuilt: list[int] = []

    @property
    def name(self) -> str:
        return f"worker:{self.branch.id}"

    async def rebuild(self, timeline: Timeline) -> Seq:
        self.rebuilt = [e.seq for e in await timeline.read()]
        return timeline.last_published_seq

    async def handle(self, event: Event) -> None:
        pass

    async def work(self) -> None:
        self.running = True
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.02)  # e.g. killing a subprocess and reaping it
                self.settled = True


WORKER = ServiceKey[Worker]("worker", ScopeKind.BRANCH)


def worker_registry() -> ServiceRegistry:
    registry = ServiceRegistry()

    async def build(scope: Scope) -> Worker:
        worker = Worker(scope.get(BRANCH))
        await scope.get(DISPATCHER).subscribe_rebuilt(worker)
        scope.start_soon(worker.work)
        return worker

    registry.register(WORKER, build)
    return registry


@contextlib.asynccontextmanager
async def runtime(
    store: MemoryStore | None = None, registry: ServiceRegistry | None = None
) -> AsyncIterator[Runtime]:
    async with open_runtime(store or MemoryStore(), registry=registry) as opened:
        yield opened


def worker_of(branch: Branch) -> Worker:
    return branch.scope.get(WORKER)


# --- create, load, branch, fork ------------------------------------------------------------


async def test_a_new_session_has_a_main_branch_and_is_leased_to_this_process() -> None:
    database = MemoryDatabase()
    async with runtime(MemoryStore(database)) as rt:
        session = await rt.create_session("/work/a", title="First")
        assert session.main.state is BranchState.OPEN
        assert session.main.parent_id is None
        assert [s.session_id for s in await rt.list_sessions(cwd="/work/a")] == [session.id]
        with pytest.raises(SessionHeld):
            await MemoryStore(database).acquire_session(session.id)


async def test_loading_a_session_rebuilds_its_open_branches_from_the_store() -> None:
    store = MemoryStore()
    async with runtime(store) as rt:
        session = await rt.create_session("/work/a")
        await session.main.append(notes("a", "b"))
        child = await session.create_branch(session.main, label="tests")
        await child.append(notes("c"))
        session_id, child_id = session.id, child.id
    async with runtime(store, worker_registry()) as rt:
        loaded = await rt.load_session(session_id)
        assert set(loaded.branches) == {loaded.record.main_branch_id, child_id}
        reloaded_child = loaded.branches[child_id]
        assert reloaded_child.timeline.last_published_seq == 4
        assert [e.kind for e in await reloaded_child.read()] == [
            "notification",
            "notification",
            "branch.created",
            "notification",
        ]
        assert worker_of(reloaded_child).rebuilt == [1, 2, 3, 4]
        assert await rt.load_session(session_id) is loaded  # already open here


async def test_loading_an_unknown_session_is_not_found() -> None:
    async with runtime() as rt:
        with pytest.raises(StoreNotFound):
            await rt.load_session("sess_nobody")  # type: ignore[arg-type]


async def test_a_session_open_in_another_process_cannot_be_loaded_there() -> None:
    database = MemoryDatabase()
    async with runtime(MemoryStore(database)) as here:
        session = await here.create_session("/work/a")
        async with runtime(MemoryStore(database)) as there:
            with pytest.raises(SessionHeld, match="another acp-agent process"):
                await there.load_session(session.id)
        await session.aclose()
        async with runtime(MemoryStore(database)) as there:
            await there.load_session(session.id)  # released: now it can


async def test_a_branch_reads_its_parent_up_to_the_cut_then_its_own_events() -> None:
    async with runtime() as rt:
        session = await rt.create_session("/work/a")
        main = session.main
        await main.append(notes("m1", "m2"))
        await main.append(notes("m3"))
        early = await session.create_branch(main, at=Seq(2))
        latest = await session.create_branch(main)
        await main.append(notes("m4"))  # the children do not see it
        await early.append(notes("e1"))
        assert texts_of((await early.read())[:2]) == ["m1", "m2"]
        assert texts_of((await early.read())[3:]) == ["e1"]
        assert [e.seq for e in await latest.read()] == [1, 2, 3, 4]
        assert (early.cut_seq, latest.cut_seq) == (2, 3)
        with pytest.raises(IllegalCut):
            await session.create_branch(main, at=Seq(1))  # inside the first batch


async def test_a_branch_inherits_results_recorded_before_its_cut_only() -> None:
    async with runtime() as rt:
        session = await rt.create_session("/work/a")
        main = session.main
        result = ToolResultRecorded(CallId("call_1"), "req_1", [], False)
        await main.append([EventDraft(result, "tools")])
        child = await session.create_branch(main)
        late = ToolResultRecorded(CallId("call_2"), "req_2", [], False)
        await main.append([EventDraft(late, "tools")])
        assert await child.has_result(CallId("call_1"))
        assert not await child.has_result(CallId("call_2"))
        assert await main.has_result(CallId("call_2"))


async def test_a_fork_copies_history_up_to_a_legal_point_into_an_independent_session() -> None:
    async with runtime() as rt:
        source = await rt.create_session("/work/a", title="Parser")
        await source.main.append(notes("a", "b"))
        await source.main.append(notes("c"))
        fork = await rt.fork_session(source.main, at=Seq(2))
        assert fork.id != source.id
        assert fork.record.fork_origin is not None
        assert fork.record.fork_origin.seq == 2
        assert fork.record.title == "Parser"
        assert texts_of(await fork.main.read()) == ["a", "b"]
        await fork.main.append(notes("only in the fork"))
        await source.main.append(notes("only in the source"))
        assert texts_of(await fork.main.read()) == ["a", "b", "only in the fork"]
        assert texts_of(await source.main.read()) == ["a", "b", "c", "only in the source"]
        with pytest.raises(IllegalCut):
            await rt.fork_session(source.main, at=Seq(1))


async def test_a_session_keeps_its_additional_directories_and_a_fork_inherits_them() -> None:
    store = MemoryStore()
    async with runtime(store) as rt:
        session = await rt.create_session("/work/a", additional_directories=["/work/lib"])
        assert session.record.additional_directories == ("/work/lib",)
        inherited = await rt.fork_session(session.main)
        own = await rt.fork_session(session.main, additional_directories=["/work/docs"])
        none = await rt.fork_session(session.main, additional_directories=[])
        assert inherited.record.additional_directories == ("/work/lib",)
        assert own.record.additional_directories == ("/work/docs",)
        assert none.record.additional_directories == ()
        await session.set_additional_directories(["/work/docs", "/work/lib"])
        assert session.record.additional_directories == ("/work/docs", "/work/lib")
        stored = await store.get_session(session.id)
        assert stored.additional_directories == ("/work/docs", "/work/lib")
        # Replacing the directories writes no event: they are not part of the history.
        assert await session.main.read() == []


async def test_setting_the_title_records_it_and_updates_the_session_row() -> None:
    async with runtime() as rt:
        session = await rt.create_session("/work/a")
        await session.set_title("Fix the parser")
        assert (await rt.list_sessions())[0].title == "Fix the parser"
        assert [e.kind for e in await session.main.read()] == ["session.metadata_changed"]


# --- four ways to stop -----------------------------------------------------------------------


async def test_closing_a_branch_waits_for_its_own_work_and_leaves_siblings_running() -> None:
    async with runtime(registry=worker_registry()) as rt:
        session = await rt.create_session("/work/a")
        first = await session.create_branch(session.main)
        second = await session.create_branch(session.main)
        await wait_until(lambda: worker_of(first).running and worker_of(second).running)
        closing, sibling = worker_of(first), worker_of(second)
        await session.close_branch(first, reason="done")
        assert closing.settled  # close returned only after its work settled
        assert first.state is BranchState.CLOSED
        assert not sibling.settled
        assert second.state is BranchState.OPEN
        assert session.main.state is BranchState.OPEN
        assert set(session.branches) == {session.main.id, second.id}


async def test_a_closed_branch_records_its_end_and_is_not_reopened_on_load() -> None:
    store = MemoryStore()
    async with runtime(store) as rt:
        session = await rt.create_session("/work/a")
        child = await session.create_branch(session.main)
        await child.end("answered the question")
        await child.end()  # idempotent
        assert (await child.timeline.read())[-1].kind == "branch.closed"
        with pytest.raises(BranchClosed):
            await child.append(notes("late"))
        session_id, child_id = session.id, child.id
    async with runtime(store) as rt:
        loaded = await rt.load_session(session_id)
        assert child_id not in loaded.branches
        branches = await store.list_branches(session_id)
        assert [b.closed_at is not None for b in branches] == [False, True]


async def test_closing_a_session_waits_for_every_branch_and_keeps_it_loadable() -> None:
    database = MemoryDatabase()
    async with runtime(MemoryStore(database), worker_registry()) as rt:
        session = await rt.create_session("/work/a")
        child = await session.create_branch(session.main)
        workers = [worker_of(session.main), worker_of(child)]
        await wait_until(lambda: all(w.running for w in workers))
        await session.aclose()
        assert [w.settled for w in workers] == [True, True]
        assert session.state is SessionState.CLOSED
        assert session.id not in rt.sessions
        with pytest.raises(SessionClosed):
            await session.create_branch(child)
        # Unloaded, not ended: nothing was recorded and another process may load it.
        assert [b.closed_at for b in await rt.store.list_branches(session.id)] == [None, None]
        async with runtime(MemoryStore(database)) as other:
            reloaded = await other.load_session(session.id)
            assert set(reloaded.branches) == {session.record.main_branch_id, child.id}


async def test_a_caller_that_stops_waiting_for_a_session_close_cancels_nothing() -> None:
    async with runtime(registry=worker_registry()) as rt:
        session = await rt.create_session("/work/a")
        worker = worker_of(session.main)
        await wait_until(lambda: worker.running)
        with anyio.move_on_after(0.001):
            await session.aclose()
        await wait_until(lambda: session.state is SessionState.CLOSED)
        assert worker.settled


async def test_disconnect_end_turn_close_branch_and_close_session_are_separate() -> None:
    async with runtime(registry=worker_registry()) as rt:
        session = await rt.create_session("/work/a")
        main = session.main
        side = await session.create_branch(main)
        await wait_until(lambda: worker_of(main).running and worker_of(side).running)

        # Disconnecting a client stops its deliveries, nothing else.
        class Client:
            name = "editor"
            seen: list[str] = []

            async def handle(self, event: Event) -> None:
                self.seen.append(event.kind)

        client = main.dispatcher.subscribe(Client(), after=main.timeline.last_published_seq)
        await client.disconnect()
        turn = await main.begin_turn(TurnId("turn_1"), [TextContent("hi")])
        assert turn is not None
        assert not worker_of(main).settled

        # Ending a turn ends the turn; the branch stays open for the next prompt.
        await main.end_turn(TurnId("turn_1"), "end_turn")
        await turn.wait_settled()
        assert main.state is BranchState.OPEN
        assert main.turn is None

        # Closing a branch closes that branch only.
        await session.close_branch(side)
        assert worker_of(main).running
        assert not worker_of(main).settled
        assert session.state is SessionState.OPEN

        # Closing the session closes what is left.
        await session.aclose()
        assert worker_of(main).settled
        kinds = [e.kind for e in await main.read()]
        assert kinds == ["user_input.adopted", "turn.ended"]
        assert Client.seen == []


# --- turns ---------------------------------------------------------------------


async def test_cancel_records_the_request_then_the_interruption_once_work_settled() -> None:
    async with runtime() as rt:
        main = (await rt.create_session("/work/a")).main
        turn = await main.begin_turn(TurnId("turn_1"), [])
        assert turn is not None
        settled: list[bool] = []

        async def model_request() -> None:
            try:
                await anyio.sleep_forever()
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.sleep(0.01)
                    settled.append(True)

        turn.start_soon(model_request)
        await anyio.lowlevel.checkpoint()
        await main.cancel_turn(TurnId("turn_1"))
        assert settled == [True]
        assert turn.state is TurnState.ENDED
        kinds = [e.kind for e in await main.read()]
        assert kinds == ["user_input.adopted", "turn.cancel_requested", "turn.interrupted"]
        await main.cancel_turn(TurnId("turn_1"))  # an ended turn is left alone
        assert len(await main.read()) == 3


async def test_a_second_prompt_while_a_turn_runs_is_refused() -> None:
    async with runtime() as rt:
        main = (await rt.create_session("/work/a")).main
        await main.begin_turn(TurnId("turn_1"), [])
        with pytest.raises(AlreadyStarted, match="turn_1"):
            await main.begin_turn(TurnId("turn_2"), [])
        await main.end_turn(TurnId("turn_1"), "end_turn")
        await main.begin_turn(TurnId("turn_2"), [])


async def test_a_turn_begun_while_another_is_being_begun_is_refused_not_queued() -> None:
    async with runtime() as rt:
        main = (await rt.create_session("/work/a")).main
        refused: list[str] = []

        async def second() -> None:
            try:
                await main.begin_turn(TurnId("turn_2"), [])
            except AlreadyStarted as exc:
                refused.append(str(exc))

        async with anyio.create_task_group() as group:
            group.start_soon(main.begin_turn, TurnId("turn_1"), [])
            group.start_soon(second)
        assert len(refused) == 1
        assert main.turn is not None
        assert main.turn.turn_id == "turn_1"
        kinds = [e.kind for e in await main.read()]
        assert kinds == ["user_input.adopted"]


async def test_a_turn_whose_work_fails_ends_with_an_error() -> None:
    async with runtime() as rt:
        main = (await rt.create_session("/work/a")).main
        turn = await main.begin_turn(TurnId("turn_1"), [])
        assert turn is not None

        async def broken() -> None:
            raise RuntimeError("provider returned garbage")

        turn.start_soon(broken)
        await turn.wait_settled()
        assert isinstance(turn.failure, BaseExceptionGroup)
        last = (await main.read())[-1]
        assert (last.kind, last.payload.stop_reason) == ("turn.ended", "error")  # type: ignore[attr-defined]
        assert main.state is BranchState.OPEN


async def test_closing_a_branch_interrupts_its_running_turn() -> None:
    async with runtime() as rt:
        session = await rt.create_session("/work/a")
        child = await session.create_branch(session.main)
        turn = await child.begin_turn(TurnId("turn_1"), [])
        assert turn is not None
        turn.start_soon(anyio.sleep_forever)
        await session.close_branch(child)
        kinds = [e.kind for e in await child.timeline.read()]
        assert kinds[-3:] == ["user_input.adopted", "turn.interrupted", "branch.closed"]
