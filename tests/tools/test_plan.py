"""plan: a whole plan (a checklist, a document, a file) as PlanContent for the editor."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.toolkit import (
    PlanContent,
    PlanEntry,
    PlanKind,
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


async def test_a_plan_document_keeps_its_text_and_its_task_list_is_its_checklist(
    workspace: Path,
) -> None:
    markdown = "# Design\n\nSplit the parser.\n\n- [x] Read the grammar\n- [ ] Write the lexer\n"
    result = await Session([workspace]).run(PLAN, {"markdown": markdown, "plan_id": "design"})

    [plan] = result.content
    assert plan == PlanContent(
        (
            PlanEntry("Read the grammar", PlanPriority.MEDIUM, PlanStatus.COMPLETED),
            PlanEntry("Write the lexer", PlanPriority.MEDIUM, PlanStatus.PENDING),
        ),
        "design",
        PlanKind.MARKDOWN,
        markdown=markdown.strip(),
    )
    assert result.model_text == "Plan 'design' updated (a document): 1 of 2 done."
    assert result.raw_output is not None
    assert result.raw_output["kind"] == "markdown"


async def test_a_plan_file_of_the_workspace_is_named_by_its_uri(
    workspace: Path, outside: Path
) -> None:
    (workspace / "PLAN.md").write_text("- [ ] Ship it\n")
    (outside / "PLAN.md").write_text("- [ ] Elsewhere\n")
    session = Session([workspace])

    result = await session.run(PLAN, {"file": "PLAN.md"})
    with pytest.raises(ToolInputError, match="must be a file of the workspace"):
        PLAN.permission({"file": str(outside / "PLAN.md")}, [workspace])
    with pytest.raises(ToolInputError, match="cannot be read"):
        await session.run(PLAN, {"file": "MISSING.md"})

    [plan] = result.content
    assert isinstance(plan, PlanContent)
    assert (plan.kind, plan.uri) == (PlanKind.FILE, (workspace / "PLAN.md").as_uri())
    assert [entry.content for entry in plan.entries] == ["Ship it"]
    assert result.model_text == "Plan is kept in PLAN.md: 0 of 1 done."


async def test_a_plan_is_removed_by_its_id_and_a_call_gives_exactly_one_form(
    workspace: Path,
) -> None:
    result = await Session([workspace]).run(PLAN, {"remove": True, "plan_id": "design"})

    assert result.content == (PlanContent((), "design", PlanKind.REMOVED),)
    assert result.model_text == "Plan 'design' removed."
    for arguments in [{}, {"entries": [], "markdown": "# x"}, {"remove": False}]:
        with pytest.raises(ToolInputError, match="exactly one of"):
            PLAN.permission(arguments, [workspace])
    with pytest.raises(ToolInputError, match="plan_id"):
        PLAN.permission({"entries": [], "plan_id": " "}, [workspace])
