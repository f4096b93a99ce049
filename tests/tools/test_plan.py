"""plan: the complete todo list, as PlanContent for the editor and entries for the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.toolkit import (
    PlanContent,
    PlanEntry,
    PlanPriority,
    PlanStatus,
    ToolInputError,
    ToolKind,
)
from acp_agent.tools import PlanTool
from tests.tools.support import Session

pytestmark = pytest.mark.anyio

PLAN = PlanTool()


async def test_the_plan_is_the_complete_list_as_plan_content(workspace: Path) -> None:
    arguments = {
        "entries": [
            {"content": "Read the failing test", "status": "completed", "priority": "high"},
            {"content": "Fix the parser", "status": "in_progress"},
            {"content": "Run the suite", "status": "pending", "priority": "low"},
        ]
    }
    result = await Session([workspace]).run(PLAN, arguments)
    assert result.content == (
        PlanContent(
            (
                PlanEntry("Read the failing test", PlanPriority.HIGH, PlanStatus.COMPLETED),
                PlanEntry("Fix the parser", PlanPriority.MEDIUM, PlanStatus.IN_PROGRESS),
                PlanEntry("Run the suite", PlanPriority.LOW, PlanStatus.PENDING),
            )
        ),
    )
    assert result.raw_output == {
        "entries": [
            {"content": "Read the failing test", "priority": "high", "status": "completed"},
            {"content": "Fix the parser", "priority": "medium", "status": "in_progress"},
            {"content": "Run the suite", "priority": "low", "status": "pending"},
        ]
    }
    assert result.model_text == "Plan updated: 1 of 3 done. In progress: Fix the parser."


def test_bad_entries_are_input_errors_naming_the_entry(workspace: Path) -> None:
    for entries, message in [
        (None, "`entries`"),
        ([{"content": "x", "status": "done"}], "entries[0].status"),
        (
            [{"content": "x", "status": "pending"}, {"content": " ", "status": "pending"}],
            "entries[1].content",
        ),
        ([{"content": "x", "status": "pending", "priority": "urgent"}], "entries[0].priority"),
    ]:
        with pytest.raises(ToolInputError, match=message.replace("[", r"\[")):
            PLAN.permission({"entries": entries}, [workspace])
    presentation = PLAN.present({}, [workspace])
    assert (presentation.title, presentation.kind) == ("Update plan", ToolKind.THINK)
