"""The session handle, driven in-process over a real SQLite store and the scripted model.

Several subscribers from their own positions, a subscriber that stalls, and the
session operations a front end calls (prompt, cancel, set an option, fork,
rewind, delete), with the front end's side given when the session opens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.agent import (
    Agent,
    BranchId,
    ConversationRewound,
    Event,
    FrontEnd,
    IllegalCut,
    ModelTextDelta,
    PermissionChoice,
    Seq,
    SessionBusy,
    Store,
    StoreNotFound,
    TurnEnded,
    TurnInterrupted,
    open_agent,
)
from acp_agent.capabilities import CapabilitySettings, register_capabilities
from acp_agent.content import TextContent
from acp_agent.core import NO_SEQ, ServiceRegistry, SessionClosed, TurnCancelRequested
from acp_agent.models import ConfiguredModels, load_models_config, parse_script
from acp_agent.store import SqliteStore
from acp_agent.toolkit import NO_CLIENT, ClientBridge, TerminalsWithheld
from tests.capabilities.support import ENVIRONMENT, AnsweringPrompter, BlockingTool, CountingTool


def text(words: str) -> list[TextContent]:
    return [TextContent(words)]


class Recorder:
    """A subscriber that keeps what it is delivered; `gate` (when set) holds it at its
    first event until the gate opens: a client that stopped reading."""

    def __init__(self, name: str, *, gate: anyio.Event | None = None) -> None:
        self.name = name
        self.events: list[Event] = []
        self.gate = gate
        self.held = anyio.Event()

    async def handle(self, event: Event) -> None:
        if self.gate is not None and not self.gate.is_set():
            self.held.set()
            await self.gate.wait()
        self.events.append(event)

    @property
    def seqs(self) -> list[int]:
        return [int(event.seq) for event in self.events]


class CountingStore:
    """A real store whose event reads are counted (what a subscriber behind reads)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.reads = 0

    async def read(self, *args: Any, **kwargs: Any) -> Any:
        self.reads += 1
        return await self._store.read(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@asynccontextmanager
async def running(
    tmp_path: Path,
    replies: list[Any],
    *,
    tools: Callable[[], Sequence[Any]] = tuple,
    tail_events: int = 4096,
) -> AsyncIterator[tuple[Agent, CountingStore]]:
    """The runtime's handle over a SQLite file in `tmp_path`, playing `replies`."""
    models = ConfiguredModels(
        load_models_config(None, {}), {}, script=parse_script({"replies": replies}, name="t")
    )
    registry = ServiceRegistry()
    register_capabilities(
        registry, CapabilitySettings(models=models, tools=tools, environment=ENVIRONMENT)
    )
    sqlite = await SqliteStore.open(tmp_path / "store" / "sessions.sqlite3")
    store = CountingStore(sqlite)
    try:
        async with open_agent(
            store,  # type: ignore[arg-type]
            registry=registry,
            models=models,
            tail_events=tail_events,
        ) as agent:
            yield agent, store
    finally:
        await sqlite.aclose()


async def delivered_through(recorder: Recorder, seq: int) -> None:
    with anyio.fail_after(10):
        while not recorder.events or recorder.events[-1].seq < seq:  # noqa: ASYNC110
            await anyio.sleep(0.001)


async def test_two_subscribers_from_different_positions_see_the_same_suffix_mid_turn(
    tmp_path: Path,
) -> None:
    blocking = BlockingTool()
    replies = [
        [{"text": "first"}],
        [{"text": "a"}, {"text": "b"}, {"tool_call": {"name": "block"}}],
    ]
    async with running(tmp_path, replies, tools=lambda: [blocking]) as (agent, _):
        session = await agent.new_session(str(tmp_path))
        await session.set_option("mode", "bypass")  # the tool runs without asking
        first = await session.prompt(text("one"))
        assert first.ended is not None
        assert isinstance(first.ended.ending, TurnEnded)
        after_first = session.position

        whole = Recorder("from the start")
        await session.subscribe(whole, after=None)  # now: nothing replayed
        from_start = Recorder("replayed")
        replayed = await session.subscribe(from_start, after=NO_SEQ)
        assert replayed.ready_at == after_first
        await replayed.wait_ready()
        assert from_start.seqs == list(range(1, after_first + 1))

        async with session.turn_slot() as slot:
            turn = await slot.start(text("two"))
            with anyio.fail_after(10):
                await blocking.started.wait()  # mid-turn: streamed, a tool running
            late = Recorder("joined mid-turn")
            joined = await session.subscribe(late, after=after_first)
            mid = joined.ready_at
            assert mid > after_first
            assert await session.cancel() == 1
            outcome = await turn.outcome(seen_by=joined)
        assert isinstance(outcome.ending, TurnInterrupted)
        end = session.position
        await delivered_through(whole, end)
        await delivered_through(from_start, end)

    # Each saw every event after its own position exactly once, in order, and the
    # same events where they overlap; the late one's replay ran into live with no seam.
    assert from_start.seqs == list(range(1, end + 1))
    assert late.seqs == list(range(after_first + 1, end + 1))
    assert whole.seqs == list(range(after_first + 1, end + 1))
    tail = from_start.events[after_first:]
    assert [(e.seq, e.payload) for e in late.events] == [(e.seq, e.payload) for e in tail]
    assert any(isinstance(e.payload, TurnCancelRequested) for e in late.events)


async def test_a_stalled_subscriber_holds_back_no_one_and_catches_up_from_the_store(
    tmp_path: Path,
) -> None:
    # A pause between the pieces, so each is an event of its own (not one group commit).
    replies = [[step for i in range(24) for step in ({"text": f"w{i} "}, {"sleep_ms": 1})]]
    async with running(tmp_path, replies, tail_events=8) as (agent, store):
        session = await agent.new_session(str(tmp_path))
        start = session.position
        gate = anyio.Event()
        stalled = Recorder("stopped reading", gate=gate)
        await session.subscribe(stalled, after=None)
        reading = Recorder("reading")
        await session.subscribe(reading, after=None)

        turn = await session.prompt(text("go"))  # returns once the turn is over
        end = session.position
        await delivered_through(reading, end)
        assert stalled.held.is_set()
        # The turn and the other subscriber went to the end; the stalled one has none.
        assert turn.ended is not None
        assert isinstance(turn.ended.ending, TurnEnded)
        assert reading.seqs == list(range(start + 1, end + 1))
        assert stalled.events == []
        assert end - start > 2 * 8  # more than the timeline keeps in memory

        reads_before = store.reads
        gate.set()
        await delivered_through(stalled, end)
        assert stalled.seqs == list(range(start + 1, end + 1))
        assert store.reads > reads_before  # what memory no longer held came from the store


class Failing(Recorder):
    """A subscriber that raises at its `at`-th event: a client whose writer broke."""

    def __init__(self, name: str, *, at: int) -> None:
        super().__init__(name)
        self.at = at

    async def handle(self, event: Event) -> None:
        if len(self.events) + 1 == self.at:
            raise RuntimeError("the client went away")
        await super().handle(event)


class Trigger(Recorder):
    """A subscriber that says when it has seen `count` pieces of the model's text."""

    def __init__(self, name: str, *, count: int) -> None:
        super().__init__(name)
        self.count = count
        self.reached = anyio.Event()

    async def handle(self, event: Event) -> None:
        await super().handle(event)
        deltas = sum(isinstance(e.payload, ModelTextDelta) for e in self.events)
        if deltas >= self.count:
            self.reached.set()


async def test_subscribers_joining_while_the_model_streams_each_get_their_suffix_once(
    tmp_path: Path,
) -> None:
    # Two turns of single-event pieces (a pause between them: no group commit), far more
    # than the timeline keeps in memory, so a cursor in the first turn is read back from
    # the store while the second turn is being published. The second turn slows down
    # after its tenth piece, where the subscribers join, so that they join mid-turn even
    # on a busy machine (their replays read the store).
    pieces = [
        [
            step
            for i in range(n)
            for step in ({"text": f"w{i} "}, {"sleep_ms": 2 if n == 24 or i < 10 else 25})
        ]
        for n in (24, 40)
    ]
    async with running(tmp_path, pieces, tail_events=8) as (agent, store):
        session = await agent.new_session(str(tmp_path))
        await session.prompt(text("one"))
        after_first = session.position
        history = (await session.history())[1]
        # A batch end in the middle of the first turn: the seq before an event that
        # starts a batch.
        ends = [Seq(e.seq - 1) for e in history if e.starts_batch and e.seq > 1]
        mid_first = ends[len(ends) // 2]
        assert after_first - mid_first > 8  # out of memory by now

        trigger = Trigger("joins at the tenth piece", count=10)
        await session.subscribe(trigger, after=after_first)
        gate = anyio.Event()
        async with session.turn_slot() as slot:
            turn = await slot.start(text("two"))
            with anyio.fail_after(10):
                await trigger.reached.wait()
            # They join while the model streams, each from its own cursor.
            reads_before = store.reads
            joined = {
                NO_SEQ: Recorder("from the start"),
                mid_first: Recorder("from inside the first turn"),
                after_first: Recorder("from the first turn's end"),
            }
            for cursor, recorder in joined.items():
                await session.subscribe(recorder, after=cursor)
            now = Recorder("from now")
            from_now = await session.subscribe(now, after=None)
            stalled = Recorder("stopped reading", gate=gate)
            await session.subscribe(stalled, after=mid_first)
            failing = Failing("breaks", at=3)
            broken = await session.subscribe(failing, after=after_first)
            outcome = await turn.outcome(seen_by=from_now)
        assert isinstance(outcome.ending, TurnEnded)
        end = session.position
        assert from_now.ready_at < end  # it joined mid-turn
        for recorder in (*joined.values(), trigger):
            await delivered_through(recorder, end)
        # The stalled one held back neither the turn nor the others; the broken one
        # ended only its own delivery.
        with anyio.fail_after(10):
            await stalled.held.wait()
        assert stalled.events == []
        with anyio.fail_after(10):  # its replay may still be on its way on a busy machine
            while broken.active:  # noqa: ASYNC110 - its delivery task, not ours, ends it
                await anyio.sleep(0.01)
        assert isinstance(broken.error, RuntimeError)
        assert failing.seqs == [after_first + 1, after_first + 2]
        assert store.reads > reads_before  # the cursors memory no longer held were read

        gate.set()
        await delivered_through(stalled, end)
        stored = {int(e.seq): e.payload for e in (await session.history())[1]}

    # Every subscriber: each event after its own cursor exactly once, in order, and the
    # events as stored (no gap where replay turned live, no duplicate).
    for cursor, recorder in [*joined.items(), (mid_first, stalled), (after_first, trigger)]:
        assert recorder.seqs == list(range(cursor + 1, end + 1)), recorder.name
        assert all(e.payload == stored[int(e.seq)] for e in recorder.events), recorder.name
    assert now.seqs == list(range(from_now.ready_at + 1, end + 1))


async def test_a_cursor_inside_a_batch_is_refused(tmp_path: Path) -> None:
    async with running(tmp_path, [[{"text": "hi"}]]) as (agent, _):
        session = await agent.new_session(str(tmp_path))
        await session.prompt(text("go"))
        events = (await session.history())[1]
        inside = Seq(next(e.seq for e in events[1:] if not e.starts_batch) - 1)
        with pytest.raises(IllegalCut):
            await session.subscribe(Recorder("x"), after=inside)


async def test_the_front_end_given_at_open_answers_the_sessions_questions(
    tmp_path: Path,
) -> None:
    counting = CountingTool(tmp_path / "runs")
    replies = [[{"tool_call": {"name": "count", "arguments": {"label": "x"}}}], [{"text": "ok"}]]
    person = AnsweringPrompter(PermissionChoice.ALLOW_ONCE)
    async with running(tmp_path, replies, tools=lambda: [counting]) as (agent, _):
        session = await agent.new_session(str(tmp_path), FrontEnd(prompter=person))
        turn = await session.prompt(text("count once"))
    assert turn.ended is not None
    assert isinstance(turn.ended.ending, TurnEnded)
    assert [question.tool for question in person.questions] == ["count"]
    assert counting.runs == 1


class SessionsSide:
    """A front end's side showing each branch as a session of its own (what it is asked
    and which editor a branch uses are its own)."""

    def __init__(self, prompter: AnsweringPrompter) -> None:
        self.prompter = prompter

    def prompter_of(self, branch_id: BranchId) -> AnsweringPrompter:
        return self.prompter

    def client_of(self, branch_id: BranchId) -> ClientBridge:
        return NO_CLIENT

    async def child_attached(self, line: Any) -> None:
        return None

    async def child_changed(self, line: Any) -> None:
        return None

    async def main_turn_started(self) -> None:
        return None


async def test_branches_shown_as_sessions_until_the_front_ends_side_stops_showing_them(
    tmp_path: Path,
) -> None:
    side = SessionsSide(AnsweringPrompter(PermissionChoice.ALLOW_ONCE))
    async with running(tmp_path, [[{"text": "hi"}]]) as (agent, _):
        session = await agent.new_session(str(tmp_path), FrontEnd(branches=lambda _: side))
        branches, child = session.branches, BranchId("branch_x")
        # Given at open: a branch's questions and editor are its own session's.
        assert branches.ask_directly is not None
        assert branches.ask_directly(child) is side.prompter
        assert branches.client_of(child, NO_CLIENT) is NO_CLIENT
        branches.stop_showing_as_sessions(side)
        # Stopped: the questions wait for main's turn, commands run without terminals.
        assert branches.ask_directly is None
        assert isinstance(branches.client_of(child, NO_CLIENT), TerminalsWithheld)


async def test_cancel_fork_rewind_and_delete_through_the_handle(tmp_path: Path) -> None:
    blocking = BlockingTool()
    replies = [
        [{"text": "one"}],
        [{"text": "two"}],
        [{"tool_call": {"name": "block"}}],
    ]
    async with running(tmp_path, replies, tools=lambda: [blocking]) as (agent, _):
        session = await agent.new_session(str(tmp_path))
        await session.set_option("mode", "bypass")
        await session.set_title("Work")
        first = await session.prompt(text("first"))
        second = await session.prompt(text("second"))

        # Cancel: the running turn is interrupted, after its cancel is on record.
        watcher = await session.subscribe(Recorder("w"), after=None)
        async with session.turn_slot() as slot:
            turn = await slot.start(text("third"))
            with anyio.fail_after(10):
                await blocking.started.wait()
            with pytest.raises(SessionBusy):  # no rewind while a prompt holds the turn
                await session.rewind(first.turn_id)
            assert await session.cancel() == 1
            outcome = await turn.outcome(seen_by=watcher)
        assert isinstance(outcome.ending, TurnInterrupted)

        # Fork: the history up to the last turn that ended, the settings, the title.
        fork = await session.fork()
        assert fork.id != session.id
        assert fork.title == "Work (fork)"
        assert fork.controls.mode == session.controls.mode
        forked = [e.payload for e in (await fork.history())[1]]
        assert [p.turn_id for p in forked if isinstance(p, TurnEnded)] == [
            first.turn_id,
            second.turn_id,
        ]
        assert agent.session(fork.id) is fork

        # Rewind: back to before the second message.
        rewound = await session.rewind(second.turn_id)
        assert rewound.message_id == second.turn_id
        events = (await session.history())[1]
        assert isinstance(events[-1].payload, ConversationRewound)

        # Delete: closed, gone from the store, its handle forgotten.
        await session.delete()
        assert agent.session(session.id) is None
        with pytest.raises(StoreNotFound):
            await agent.store.get_session(session.id)
        assert (await agent.load(fork.id)) is fork  # the fork lives on


async def test_the_sessions_own_work_outlives_its_caller_and_ends_with_the_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`start_work`: what the work reports started with is the caller's answer, an error
    before that the caller's error; one after it ends the work alone (the session goes
    on); the work outlives its caller, and the session's close cancels it."""
    async with running(tmp_path, [[{"text": "still here"}]]) as (agent, _):
        session = await agent.new_session(str(tmp_path))

        async def refused(*, task_status: Any) -> None:
            raise ValueError("refused")

        with pytest.raises(ValueError, match="refused"):
            await session.start_work(refused, name="refused work")

        async def fails_later(*, task_status: Any) -> None:
            task_status.started("accepted")
            raise ValueError("later")

        assert await session.start_work(fails_later, name="failing work") == "accepted"
        with anyio.fail_after(10):
            while "failing work of session" not in caplog.text:  # noqa: ASYNC110
                await anyio.sleep(0.001)
        turn = await session.prompt(text("go on"))  # the session took no harm
        assert turn.ended is not None
        assert isinstance(turn.ended.ending, TurnEnded)

        stopped = anyio.Event()

        async def long(*, task_status: Any) -> None:
            task_status.started("running")
            try:
                await anyio.sleep_forever()
            finally:
                stopped.set()

        assert await session.start_work(long, name="long work") == "running"
        assert not stopped.is_set()  # its caller is done; it runs on
        await session.close()
        assert stopped.is_set()
        with pytest.raises(SessionClosed):
            await session.start_work(long, name="too late")


class SlowOutputs(CountingStore):
    """A real store whose output writes take a while (a loaded disk)."""

    async def put_output(self, *args: Any, **kwargs: Any) -> Any:
        await anyio.sleep(0.2)
        return await self._store.put_output(*args, **kwargs)


async def test_replay_lines_asked_to_be_kept_are_written_though_the_session_closes(
    tmp_path: Path,
) -> None:
    """A script leaves as soon as its load is answered: the session closes while the
    lines that load asked to keep are written, and the write finishes first."""
    async with running(tmp_path, [[{"text": "hi"}]]) as (agent, store):
        session = await agent.new_session(str(tmp_path))
        session._store = SlowOutputs(store)  # type: ignore[assignment]
        session.keep_replay("key", 0, [b"kept lines"])
        await session.close()
        assert await store.read_output(session.id, "replay/key") == [b"kept lines"]
        assert await session.kept_replay("key") == [b"kept lines"]


async def test_lines_kept_under_a_new_key_replace_those_under_older_keys(tmp_path: Path) -> None:
    """A key names the code and the client: lines under another key (an older version's,
    a fork's parent's) are never sent again, so keeping afresh forgets them; the session's
    other outputs stay."""
    async with running(tmp_path, [[{"text": "hi"}]]) as (agent, store):
        session = await agent.new_session(str(tmp_path))
        await store.put_output(session.id, "results/call_1", [b"a tool's whole output"])
        session.keep_replay("old", 0, [b"old 1", b"old 2"])
        session.keep_replay("old", 2, [b"old 3"])  # goes on: the older chunks stay
        await session.close()  # writes what it was asked to keep
        assert await store.read_output(session.id, "replay/old") == [b"old 1", b"old 2", b"old 3"]

        session = await agent.load(session.id)
        session.keep_replay("new", 0, [b"new 1"])
        await session.close()
        assert await store.read_output(session.id, "replay/old") == []
        assert await store.read_output(session.id, "replay/new") == [b"new 1"]
        assert await store.read_output(session.id, "results/call_1") == [b"a tool's whole output"]
