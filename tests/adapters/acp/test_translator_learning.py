"""A translator that learnt a history translates what follows as one that showed it.

The live stream learns a loaded session's history without making its updates
(`UpdateTranslator.learn`, which skips the calls' content that teaches nothing);
whatever it then shows must be what it would have shown had it translated every
event: the plan on show, the calls' local terminals, the replies with text.
"""

from __future__ import annotations

from typing import Any

import pytest

from acp_agent.adapters.acp._updates import UpdateTranslator
from acp_agent.content import (
    PlanContent,
    PlanEntry,
    PlanKind,
    PlanPriority,
    PlanStatus,
    TerminalContent,
    TextContent,
)
from acp_agent.core import (
    BatchId,
    BranchId,
    CallId,
    Event,
    ModelRequestFailed,
    ModelTextDelta,
    Seq,
    ToolCallProgressed,
    ToolCallRequested,
    ToolResultRecorded,
)

PLAN = PlanContent((PlanEntry("Write the lexer", PlanPriority.MEDIUM, PlanStatus.IN_PROGRESS),))
REMOVED = PlanContent((), PLAN.plan_id, PlanKind.REMOVED)
TEXT = TextContent("ok")


def _local_terminal(name: str) -> TerminalContent:
    return TerminalContent(name, local_cwd="/w")


def _payloads() -> list[Any]:
    def result(call: str, *parts: Any) -> ToolResultRecorded:
        raw = {"exit_code": 0}
        return ToolResultRecorded(CallId(call), "r1", parts, False, raw_output=raw)

    return [
        ModelTextDelta("r1", "Looking. "),
        ToolCallRequested("r1", CallId("c1"), "shell", {"command": "make"}, "make", "execute"),
        ToolCallProgressed(CallId("c1"), (_local_terminal("t1"),)),
        ToolCallProgressed(CallId("c1"), (TEXT,)),
        result("c1", TEXT),
        ToolCallRequested("r1", CallId("c2"), "plan", {}, "Plan", "think"),
        result("c2", PLAN),
        ToolCallRequested("r1", CallId("c3"), "read", {"path": "a"}, "Read a", "read"),
        result("c3", TEXT),
        ToolCallRequested("r1", CallId("c4"), "shell", {"command": "ls"}, "ls", "execute"),
        ToolCallProgressed(CallId("c4"), (_local_terminal("t4"), TEXT)),
        ToolCallProgressed(CallId("c4"), (TEXT,)),
        result("c4", _local_terminal("t4"), TEXT),
        ToolCallRequested("r1", CallId("c5"), "shell", {"command": "pwd"}, "pwd", "execute"),
        ToolCallProgressed(CallId("c5"), (_local_terminal("t5"),)),
        result("c6", TEXT),  # a result of a call never shown: nothing to end
        result("c5", TEXT),
        result("c7", REMOVED),
        ModelRequestFailed("r1", "server", "The model's server failed."),
    ]


EVENTS = [
    Event(BranchId("main"), Seq(n), BatchId(n), payload, "test", 0.0)
    for n, payload in enumerate(_payloads(), start=1)
]


@pytest.mark.parametrize("plan_operations", [False, True])
@pytest.mark.parametrize("cut", range(len(EVENTS) + 1))
def test_learning_a_history_then_showing_the_rest_is_showing_it_all(
    cut: int, plan_operations: bool
) -> None:
    learnt = UpdateTranslator(terminal_output=True, plan_operations=plan_operations)
    shown = UpdateTranslator(terminal_output=True, plan_operations=plan_operations)
    for event in EVENTS[:cut]:
        learnt.learn(event)
        shown.translate(event)
    for event in EVENTS[cut:]:
        assert learnt.translate(event) == shown.translate(event), event
