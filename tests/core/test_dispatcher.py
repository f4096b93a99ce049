"""The dispatcher delivers published events in order, per subscriber, and hands over
from rebuild to live without a gap or a duplicate."""

from __future__ import annotations

import math

import anyio
import pytest
from anyio.abc import TaskGroup
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_agent.core import (
    NO_SEQ,
    CallId,
    Dispatcher,
    Event,
    EventDraft,
    IllegalCut,
    Seq,
    Subscription,
    Timeline,
    ToolCallInterrupted,
    ToolCallRequested,
    TurnCancelRequested,
    TurnId,
)
from acp_agent.store import MemoryStore

from .support import GatedStore, new_timeline, notes, wait_until


class Recorder:
    """Records what it is handed; `latency` checkpoints per event stand for slow handling."""

    def __init__(self, name: str, *, latency: int = 0) -> None:
        self.name = name
        self.latency = latency
        self.seen: list[int] = []

    async def handle(self, event: Event) -> None:
        for _ in range(self.latency):
            await anyio.lowlevel.checkpoint()
        self.seen.append(event.seq)


class Rebuilder(Recorder):
    """Rebuilds from the published history, optionally covering less than it read."""

    def __init__(
        self, name: str, *, latency: int = 0, rebuild_latency: int = 0, cover: float = 1.0
    ) -> None:
        super().__init__(name, latency=latency)
        self.rebuild_latency = rebuild_latency
        self.cover = cover
        self.rebuilt: list[int] = []
        self.covered = NO_SEQ

    async def rebuild(self, timeline: Timeline) -> Seq:
        history = await timeline.read()
        for _ in range(self.rebuild_latency):
            await anyio.lowlevel.checkpoint()
        # Cover a prefix of what was read (e.g. a snapshot older than the end), at a batch end.
        ends = [*(e.seq - 1 for e in history if e.starts_batch and e.seq > 1), len(history)]
        self.covered = Seq(ends[math.floor(self.cover * (len(ends) - 1))] if history else 0)
        self.rebuilt = [e.seq for e in history if e.seq <= self.covered]
        return self.covered


async def delivered(subscription: Subscription, timeline: Timeline) -> None:
    """Wait until the subscription has delivered everything published."""
    await wait_until(lambda: subscription.last_delivered_seq >= timeline.last_published_seq)


@pytest.mark.anyio
async def test_each_subscriber_gets_every_event_once_in_order() -> None:
    timeline = await new_timeline(MemoryStore())
    await timeline.append(notes("a", "b"))
    first, second = Recorder("first"), Recorder("second", latency=3)
    async with anyio.create_task_group() as tg:
        dispatcher = Dispatcher(timeline, tg)
        first_subscription = dispatcher.subscribe(first, after=NO_SEQ)
        second_subscription = dispatcher.subscribe(second, after=Seq(2))
        for i in range(5):
            await timeline.append(notes(*(f"n{i}.{j}" for j in range(i + 1))))
        await delivered(first_subscription, timeline)
        await delivered(second_subscription, timeline)
        tg.cancel_scope.cancel()
    assert first.seen == list(range(1, 18))
    assert second.seen == list(range(3, 18))


@pytest.mark.anyio
async def test_a_slow_subscriber_delays_only_itself() -> None:
    timeline = await new_timeline(MemoryStore())
    stuck = anyio.Event()

    class Stuck(Recorder):
        async def handle(self, event: Event) -> None:
            await stuck.wait()
            await super().handle(event)

    slow, fast = Stuck("slow"), Recorder("fast")
    async with anyio.create_task_group() as tg:
        dispatcher = Dispatcher(timeline, tg)
        slow_subscription = dispatcher.subscribe(slow, after=NO_SEQ)
        fast_subscription = dispatcher.subscribe(fast, after=NO_SEQ)
        for text in "abc":
            await timeline.append(notes(text))
        await delivered(fast_subscription, timeline)
        assert slow.seen == []
        assert slow_subscription.last_delivered_seq == NO_SEQ
        stuck.set()
        await delivered(slow_subscription, timeline)
        tg.cancel_scope.cancel()
    assert slow.seen == fast.seen == [1, 2, 3]


class ToolRunner:
    """A component that runs tools as tasks of its own and records their outcome."""

    name = "tools"

    def __init__(self, timeline: Timeline, task_group: TaskGroup) -> None:
        self.timeline = timeline
        self.task_group = task_group
        self.running: dict[str, anyio.CancelScope] = {}
        self.handled: list[str] = []

    async def handle(self, event: Event) -> None:
        self.handled.append(event.kind)
        payload = event.payload
        if isinstance(payload, ToolCallRequested):
            scope = anyio.CancelScope()
            self.running[payload.call_id] = scope
            self.task_group.start_soon(self.run_tool, payload.call_id, scope)
        elif isinstance(payload, TurnCancelRequested):
            for scope in self.running.values():
                scope.cancel()

    async def run_tool(self, call_id: CallId, scope: anyio.CancelScope) -> None:
        with scope:
            await anyio.sleep_forever()  # a very slow tool
        interrupted = ToolCallInterrupted(call_id, "turn cancelled")
        await self.timeline.append([EventDraft(interrupted, "tools")])


@pytest.mark.anyio
async def test_slow_work_runs_in_its_components_tasks_so_a_cancel_is_not_stuck_behind_it() -> None:
    timeline = await new_timeline(MemoryStore())
    async with anyio.create_task_group() as tg, anyio.create_task_group() as tools_work:
        runner = ToolRunner(timeline, tools_work)
        subscription = Dispatcher(timeline, tg).subscribe(runner, after=NO_SEQ)
        request = ToolCallRequested("req_1", CallId("call_1"), "sleep", {"seconds": 3600})
        await timeline.append([EventDraft(request, "model")])
        await timeline.append([EventDraft(TurnCancelRequested(TurnId("turn_1")), "client")])
        await wait_until(lambda: "tool_call.interrupted" in runner.handled)
        assert subscription.last_delivered_seq == 3
        tg.cancel_scope.cancel()
    kinds = [e.kind for e in await timeline.read()]
    assert kinds == ["tool_call.requested", "turn.cancel_requested", "tool_call.interrupted"]


@pytest.mark.anyio
async def test_rebuild_then_live_delivers_no_gap_no_duplicate() -> None:
    timeline = await new_timeline(MemoryStore())
    await timeline.append(notes("a", "b"))
    await timeline.append(notes("c"))
    keep_rebuilding = anyio.Event()

    class SlowRebuilder(Rebuilder):
        async def rebuild(self, timeline: Timeline) -> Seq:
            history = await timeline.read()  # sees 1..3
            await keep_rebuilding.wait()  # meanwhile live events arrive
            self.rebuilt = [e.seq for e in history]
            return history[-1].seq

    subscriber = SlowRebuilder("context")
    async with anyio.create_task_group() as tg:
        dispatcher = Dispatcher(timeline, tg)

        subscriptions: list[Subscription] = []

        async def subscribe() -> None:
            subscriptions.append(await dispatcher.subscribe_rebuilt(subscriber))

        tg.start_soon(subscribe)
        await anyio.lowlevel.checkpoint()
        await timeline.append(notes("d", "e"))
        await timeline.append(notes("f"))
        keep_rebuilding.set()
        await wait_until(lambda: subscriptions)
        await delivered(subscriptions[0], timeline)
        tg.cancel_scope.cancel()
    assert subscriber.rebuilt == [1, 2, 3]
    assert subscriber.seen == [4, 5, 6]


@pytest.mark.anyio
async def test_a_rebuild_that_claims_a_position_inside_a_batch_is_refused() -> None:
    timeline = await new_timeline(MemoryStore())
    await timeline.append(notes("a", "b", "c"))

    class Liar(Recorder):
        async def rebuild(self, timeline: Timeline) -> Seq:
            return Seq(2)

    async with anyio.create_task_group() as tg:
        with pytest.raises(IllegalCut, match="batch end"):
            await Dispatcher(timeline, tg).subscribe_rebuilt(Liar("liar"))
        with pytest.raises(IllegalCut, match="not published"):
            Dispatcher(timeline, tg).subscribe(Recorder("early"), after=Seq(4))


@pytest.mark.anyio
async def test_disconnect_stops_delivery_but_not_the_work_the_subscriber_started() -> None:
    timeline = await new_timeline(MemoryStore())
    async with anyio.create_task_group() as tg, anyio.create_task_group() as tools_work:
        runner = ToolRunner(timeline, tools_work)
        subscription = Dispatcher(timeline, tg).subscribe(runner, after=NO_SEQ)
        request = ToolCallRequested("req_1", CallId("call_1"), "sleep", {})
        await timeline.append([EventDraft(request, "model")])
        await wait_until(lambda: runner.running)
        await subscription.disconnect()
        assert not subscription.active
        await timeline.append([EventDraft(TurnCancelRequested(TurnId("turn_1")), "client")])
        await anyio.sleep(0.01)
        assert runner.handled == ["tool_call.requested"]
        assert not runner.running["call_1"].cancel_called  # the tool still runs
        tools_work.cancel_scope.cancel()
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_failing_subscriber_stops_only_its_own_delivery() -> None:
    timeline = await new_timeline(MemoryStore())

    class Broken(Recorder):
        async def handle(self, event: Event) -> None:
            raise RuntimeError("bug in a subscriber")

    healthy = Recorder("healthy")
    async with anyio.create_task_group() as tg:
        dispatcher = Dispatcher(timeline, tg)
        broken = dispatcher.subscribe(Broken("broken"), after=NO_SEQ)
        healthy_subscription = dispatcher.subscribe(healthy, after=NO_SEQ)
        await timeline.append(notes("a"))
        await timeline.append(notes("b"))
        await broken.wait_ended()
        await delivered(healthy_subscription, timeline)
        assert isinstance(broken.error, RuntimeError)
        assert [s.name for s in dispatcher.subscriptions] == ["healthy"]
        tg.cancel_scope.cancel()
    assert healthy.seen == [1, 2]


# --- interleavings --------------------------------------------------------------------

append_op = st.tuples(st.just("append"), st.integers(1, 4))
publish_op = st.tuples(st.just("publish"), st.integers(1, 3))
yield_op = st.tuples(st.just("yield"), st.integers(1, 6))
subscribe_op = st.tuples(
    st.just("subscribe"),
    st.tuples(
        st.integers(0, 4),  # handling latency, in checkpoints
        st.integers(0, 6),  # rebuild latency
        st.sampled_from([0.0, 0.5, 1.0]),  # how much of what it read the rebuild covers
        st.booleans(),  # rebuild first, or follow live from the published position
    ),
)
plans = st.lists(st.one_of(append_op, publish_op, yield_op, subscribe_op), min_size=1, max_size=25)


async def run_plan(plan: list[tuple[str, object]]) -> None:
    store = GatedStore()
    timeline = await new_timeline(store)
    await timeline.append(notes("seed", "history"))
    store.gated = True  # from here on, writes become durable only when "published"
    subscribed: list[tuple[Recorder, Subscription, Seq]] = []
    async with anyio.create_task_group() as tg:
        dispatcher = Dispatcher(timeline, tg)

        async def subscribe_rebuilt(subscriber: Rebuilder) -> None:
            subscription = await dispatcher.subscribe_rebuilt(subscriber)
            subscribed.append((subscriber, subscription, subscriber.covered))

        async with anyio.create_task_group() as work:  # appends and rebuilds
            for number, (op, arg) in enumerate(plan):
                if op == "append":
                    texts = [f"{number}.{i}" for i in range(arg)]  # type: ignore[call-overload]
                    work.start_soon(timeline.append, notes(*texts))
                elif op == "publish":
                    store.release(arg)  # type: ignore[arg-type]
                elif op == "yield":
                    for _ in range(arg):  # type: ignore[call-overload]
                        await anyio.lowlevel.checkpoint()
                else:
                    latency, rebuild_latency, cover, rebuild = arg  # type: ignore[misc]
                    if rebuild:
                        rebuilder = Rebuilder(
                            f"s{number}",
                            latency=latency,
                            rebuild_latency=rebuild_latency,
                            cover=cover,
                        )
                        work.start_soon(subscribe_rebuilt, rebuilder)
                    else:
                        live = Recorder(f"s{number}", latency=latency)
                        after = timeline.last_published_seq
                        subscribed.append((live, dispatcher.subscribe(live, after=after), after))
            store.open_gate()
        for _, subscription, _ in subscribed:
            await delivered(subscription, timeline)
        tg.cancel_scope.cancel()
    end = timeline.last_published_seq
    appended = sum(arg for op, arg in plan if op == "append")  # type: ignore[misc]
    assert end == timeline.last_assigned_seq == 2 + appended
    assert [e.seq for e in await timeline.read()] == list(range(1, end + 1))
    for subscriber, _, start in subscribed:
        # Exactly the events after the handover point, each once, in order.
        assert subscriber.seen == list(range(start + 1, end + 1)), subscriber.name
        if isinstance(subscriber, Rebuilder):
            assert subscriber.rebuilt == list(range(1, start + 1))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans)
def test_any_interleaving_of_appends_publishes_rebuilds_and_latencies_has_no_gap_or_duplicate(
    plan: list[tuple[str, object]],
) -> None:
    anyio.run(run_plan, plan, backend="asyncio")
