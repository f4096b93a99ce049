"""Whichever write the store fails, the turn settles, and the branch works once it heals.

`FullStore` wraps the memory store and fails every append from the n-th on
with `StoreFull`, as a disk that fills up mid-turn does, until `heal()`. For
every n a normal turn (a reply, a tool call, its result, a final reply)
would reach, the test checks: the turn settles (its work stops; it never
hangs), either its ending is on record or it says which ending it owes;
after healing, the next turn records the owed ending first and then runs
to `end_turn`; the history is dense and every prompt has exactly one ending.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Any

import anyio

from acp_agent.capabilities import BRANCHES
from acp_agent.capabilities.branches import ChildState
from acp_agent.capabilities.permissions import PermissionMode
from acp_agent.content import TextContent
from acp_agent.core import (
    Batch,
    BranchShown,
    NotificationReceived,
    StoreFull,
    Turn,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    UserInputAdopted,
    new_id,
)
from acp_agent.store import MemoryStore
from tests.capabilities.support import CountingTool, in_process_agent, payloads_of

SCRIPT = {
    "replies": [
        [{"text": "Counting."}, {"tool_call": {"name": "count", "arguments": {"label": "a"}}}],
        [{"text": "Counted."}],
        [{"text": "Healed."}],
    ]
}


class FullStore:
    """A memory store whose appends fail from the `fail_from`-th on, until healed."""

    def __init__(self, fail_from: int | None) -> None:
        self._inner = MemoryStore()
        self.fail_from = fail_from
        self.appends = 0
        self.failed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def append_batch(self, batch: Batch) -> None:
        self.appends += 1
        if self.fail_from is not None and self.appends >= self.fail_from:
            self.failed += 1
            raise StoreFull("append: database or disk is full", location="/full/disk")
        await self._inner.append_batch(batch)

    def heal(self) -> None:
        self.fail_from = None


async def appends_in_a_normal_session(tmp_path: Path) -> tuple[int, int]:
    """How many appends opening a session takes, and how many one turn then takes."""
    store = FullStore(None)
    tool = CountingTool(tmp_path / "normal-counter.txt")
    async with in_process_agent(SCRIPT, tmp_path, store=store, tools=lambda: [tool]) as agent:  # type: ignore[arg-type]
        agent.controls.mode = PermissionMode.BYPASS
        opened = store.appends
        turn_id = await agent.prompt()
        await agent.wait_turn_over(turn_id)
        return opened, store.appends - opened


async def test_a_turn_settles_whatever_write_fails_and_the_branch_goes_on_once_healed(
    tmp_path: Path,
):
    opened, per_turn = await appends_in_a_normal_session(tmp_path)
    assert per_turn > 5
    for offset in range(1, per_turn + 1):
        store = FullStore(opened + offset)
        tool = CountingTool(tmp_path / f"counter-{offset}.txt")
        async with in_process_agent(
            SCRIPT,
            tmp_path,
            store=store,
            tools=functools.partial(tuple, [tool]),  # type: ignore[arg-type]
        ) as agent:
            agent.controls.mode = PermissionMode.BYPASS
            turn: Turn | None = None
            with contextlib.suppress(StoreFull):  # else the prompt itself was not recorded
                turn = await agent.loop.start_turn(TurnId(new_id("turn")), [TextContent("Go")])
            if turn is not None:
                with anyio.fail_after(10):
                    await turn.wait_settled()
                ending_on_record = any(
                    isinstance(p, TurnEnded | TurnInterrupted) and p.turn_id == turn.turn_id
                    for p in (e.payload for e in await agent.history())
                )
                assert ending_on_record != (turn.unrecorded_ending is not None), offset
                if not ending_on_record:
                    assert isinstance(turn.record_error, StoreFull)
            assert store.failed >= 1, offset
            store.heal()
            second = await agent.prompt("Again")
            ending = await agent.wait_turn_over(second)
            assert ending == TurnEnded(second, "end_turn"), offset
            history = await agent.history()
            # Dense, and each prompt has exactly one ending, before the next prompt.
            assert [e.seq for e in history] == list(range(1, len(history) + 1))
            open_turn = None
            for event in history:
                payload = event.payload
                if isinstance(payload, UserInputAdopted):
                    assert open_turn is None, (offset, payload)
                    open_turn = payload.input_id
                elif isinstance(payload, TurnEnded | TurnInterrupted):
                    assert payload.turn_id == open_turn, (offset, payload)
                    open_turn = None
            assert open_turn is None
            # The tool never ran twice.
            assert tool.runs <= 1


BRANCH_SCRIPT = {
    "replies": [
        [
            {"tool_call": {"name": "branch", "arguments": {"task": "Count", "title": "w"}}},
            # Far longer than the test may take: it returns because the branch ended.
            {"tool_call": {"name": "branch_wait", "arguments": {"timeout_s": 600}}},
        ],
        [{"text": "Told."}],
    ],
    "branches": [
        {
            "title": "w",
            "replies": [
                [{"tool_call": {"name": "count", "arguments": {"label": "w"}}}],
                [{"sleep_ms": 100}, {"text": "Streaming a reply the store cannot take."}],
            ],
        }
    ],
}


async def test_a_branch_whose_work_cannot_be_recorded_ends_failed_and_main_is_told_once_healed(
    tmp_path: Path,
):
    store = FullStore(None)
    tool = CountingTool(tmp_path / "counter.txt")
    async with in_process_agent(
        BRANCH_SCRIPT,
        tmp_path,
        store=store,
        tools=lambda: [tool],  # type: ignore[arg-type]
    ) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        manager = agent.session.scope.get(BRANCHES)
        first = TurnId(new_id("turn"))
        turn = await agent.loop.start_turn(first, [TextContent("Go")])
        with anyio.fail_after(10):
            while tool.runs == 0:  # noqa: ASYNC110 - the branch's side effect is a file
                await anyio.sleep(0.005)
        store.fail_from = store.appends + 1  # the disk fills
        with anyio.fail_after(10):  # `branch_wait` returned as the branch ended
            await turn.wait_settled()
        [line] = manager.children()
        assert line.state is ChildState.FAILED
        assert line.why_ended() == (
            "the disk was full, so its work could not be recorded and it stopped"
        )
        store.heal()
        again = await agent.prompt("Again")
        assert await agent.wait_turn_over(again) == TurnEnded(again, "end_turn")
        main_history = await agent.history()
        child_history = await line.branch.read(gt=line.branch.cut_seq)
        shown: dict[str, BranchShown] = {}
        for payload in payloads_of(main_history, BranchShown):
            shown[payload.display_id] = payload
    told = [
        p for p in payloads_of(main_history, NotificationReceived) if p.source.startswith("branch/")
    ]
    assert len(told) == 1
    assert "failed: the disk was full" in told[0].text
    assert shown
    assert all(p.done and p.state == "failed" for p in shown.values()), shown
    # The branch's own record: its cut-short turn ended, once, recorded once space was back.
    [ending] = payloads_of(child_history, TurnEnded, TurnInterrupted)
    [adopted] = payloads_of(child_history, UserInputAdopted)
    assert ending == TurnEnded(adopted.input_id, "error")
    assert tool.runs == 1
