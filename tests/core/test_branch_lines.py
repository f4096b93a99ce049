"""What the core gives lines of work started mid-turn: the quiet cut, tasks, turn observers."""

from __future__ import annotations

import pytest

from acp_agent.core import (
    BranchCreated,
    CallId,
    EventDraft,
    ModelRequestFinished,
    ModelRequestStarted,
    ToolCallRequested,
    ToolResultRecorded,
    Turn,
    TurnId,
    open_runtime,
    quiet_cut,
)
from acp_agent.store import MemoryStore

from .support import notes

pytestmark = pytest.mark.anyio


def _draft(payload: object) -> list[EventDraft]:
    return [EventDraft(payload, "test")]  # type: ignore[arg-type]


def _result(call_id: str) -> ToolResultRecorded:
    return ToolResultRecorded(CallId(call_id), "req_1", [], False)


async def test_the_quiet_cut_is_the_last_batch_end_with_nothing_open() -> None:
    async with open_runtime(MemoryStore()) as rt:
        session = await rt.create_session("/work/a")
        main = session.main
        await main.append(notes("m1"))  # 1
        await main.append(_draft(ModelRequestStarted("req_1", TurnId("t"), "m")))  # 2
        assert await quiet_cut(main) == 1  # a reply is streaming
        calls = [ToolCallRequested("req_1", CallId(c), "read", {}) for c in ("call_1", "call_2")]
        await main.append(
            [EventDraft(ModelRequestFinished("req_1", "tool_use"), "test")]
            + [EventDraft(call, "test") for call in calls]
        )  # 3..5
        await main.append(_draft(_result("call_1")))  # 6
        assert await quiet_cut(main) == 1  # half of the tool batch has its results
        await main.append(_draft(_result("call_2")))  # 7
        assert await quiet_cut(main) == 7
        child = await session.create_branch(
            main, at=await quiet_cut(main), label="tests", task="Read the tests"
        )
        first = (await child.read())[7]
        assert first.payload == BranchCreated(
            child.id, main.id, main.timeline.last_published_seq, "tests", "Read the tests"
        )


class Observer:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, list[str]]] = []

    async def turn_started(self, turn: Turn) -> None:
        self.seen.append(("started", turn.turn_id, [e.kind for e in await self.main.read()]))

    async def turn_ending(self, turn: Turn) -> None:
        self.seen.append(("ending", turn.turn_id, [e.kind for e in await self.main.read()]))


async def test_turn_observers_hear_of_a_turn_after_its_input_and_before_its_ending() -> None:
    async with open_runtime(MemoryStore()) as rt:
        main = (await rt.create_session("/work/a")).main
        observer = Observer()
        observer.main = main  # type: ignore[attr-defined]
        main.observe_turns(observer)
        await main.begin_turn(TurnId("turn_1"), [])
        await main.end_turn(TurnId("turn_1"), "end_turn")
        turn = await main.begin_turn(TurnId("turn_2"), [])
        assert turn is not None
        await main.cancel_turn(TurnId("turn_2"))  # cut short: told all the same
        assert observer.seen == [
            ("started", "turn_1", ["user_input.adopted"]),
            ("ending", "turn_1", ["user_input.adopted"]),
            ("started", "turn_2", ["user_input.adopted", "turn.ended", "user_input.adopted"]),
            (
                "ending",
                "turn_2",
                ["user_input.adopted", "turn.ended", "user_input.adopted", "turn.cancel_requested"],
            ),
        ]
        kinds = [e.kind for e in await main.read()]
        assert kinds[-1] == "turn.interrupted"


class FailingObserver:
    async def turn_started(self, turn: Turn) -> None:
        raise RuntimeError("display broke")

    async def turn_ending(self, turn: Turn) -> None:
        raise RuntimeError("display broke")


async def test_a_failing_observer_never_keeps_a_turn_from_starting_or_ending() -> None:
    async with open_runtime(MemoryStore()) as rt:
        main = (await rt.create_session("/work/a")).main
        main.observe_turns(FailingObserver())
        await main.begin_turn(TurnId("turn_1"), [])
        await main.end_turn(TurnId("turn_1"), "end_turn")
        kinds = [e.kind for e in await main.read()]
        assert kinds == ["user_input.adopted", "turn.ended"]
