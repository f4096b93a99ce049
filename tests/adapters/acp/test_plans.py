"""Plans: plan operations for a client that advertised `plan`, the legacy `plan` for others.

Unit tests hold the translation of the `plan` tool's parts to each; one
end-to-end test runs the stdio agent for a client that advertised `plan: {}` (no
`--unstable`: it is negotiated; its lines are held to the unstable schema,
which alone has these shapes), and replays the session to a client that did not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_agent.adapters.acp._updates import UpdateTranslator
from acp_agent.content import PlanContent, PlanEntry, PlanKind, PlanPriority, PlanStatus
from acp_agent.core import BatchId, BranchId, Event, Seq, ToolResultRecorded
from protocol import types
from tests.support import EditorClient, running_agent, write_script
from tests.support.editor_client import allow_all

ENTRIES = [
    {"content": "Read the grammar", "priority": "high", "status": "completed"},
    {"content": "Write the lexer", "priority": "medium", "status": "in_progress"},
]


def result(call_id: str, plan: PlanContent) -> Event:
    recorded = ToolResultRecorded(
        call_id=call_id,  # type: ignore[arg-type]
        request_id="r1",
        content=(plan,),
        is_error=False,
        raw_output={},
    )
    return Event(BranchId("main"), Seq(1), BatchId("b1"), recorded, "tools", 0.0)


def plan_updates(translator: UpdateTranslator, *plans: PlanContent) -> list[Any]:
    """The plan updates (and the call's content) each plan part makes, in order."""
    shown = []
    for number, plan in enumerate(plans):
        for update in translator.translate(result(f"c{number}", plan)):
            if isinstance(update, types.ToolCallProgress):
                if update.content:
                    shown.append(("content", update.content))
            else:
                shown.append(update)
    return shown


GRAMMAR = PlanEntry("Read the grammar", PlanPriority.HIGH, PlanStatus.COMPLETED)
LEXER = PlanEntry("Write the lexer", PlanPriority.MEDIUM, PlanStatus.IN_PROGRESS)
CHECKLIST = PlanContent((GRAMMAR, LEXER))
DOCUMENT = PlanContent(
    (GRAMMAR,), "design", PlanKind.MARKDOWN, markdown="# Design\n\n- [x] Read the grammar"
)
PLAN_FILE = PlanContent((), "steps", PlanKind.FILE, uri="file:///w/PLAN.md")
REMOVED = PlanContent((), "design", PlanKind.REMOVED)


def test_a_client_with_plan_operations_gets_each_plan_by_its_id_and_its_removal() -> None:
    shown = plan_updates(
        UpdateTranslator(plan_operations=True), CHECKLIST, DOCUMENT, PLAN_FILE, REMOVED
    )

    items, markdown, file, removed = shown
    assert items == types.PlanUpdate(
        plan=types.PlanItems(
            plan_id="plan",
            entries=[
                types.PlanEntry(
                    content="Read the grammar",
                    priority=types.PlanEntryPriority.HIGH,
                    status=types.PlanEntryStatus.COMPLETED,
                ),
                types.PlanEntry(
                    content="Write the lexer",
                    priority=types.PlanEntryPriority.MEDIUM,
                    status=types.PlanEntryStatus.IN_PROGRESS,
                ),
            ],
        )
    )
    assert markdown == types.PlanUpdate(
        plan=types.PlanMarkdown(plan_id="design", content="# Design\n\n- [x] Read the grammar")
    )
    assert file == types.PlanUpdate(plan=types.PlanFile(plan_id="steps", uri="file:///w/PLAN.md"))
    assert removed == types.PlanRemoved(plan_id="design")


def test_a_client_without_them_gets_the_legacy_plan_of_the_last_checklist_set() -> None:
    shown = plan_updates(UpdateTranslator(), CHECKLIST, DOCUMENT, PLAN_FILE, REMOVED)

    checklist, document_list, document, file, removed = shown
    assert isinstance(checklist, types.Plan)
    assert [e.content for e in checklist.entries] == ["Read the grammar", "Write the lexer"]
    # A document's task list is the plan; the document shows in its call.
    assert document_list == types.Plan(entries=[checklist.entries[0]])
    assert document[0] == "content"
    assert document[1][0].content.text == "# Design\n\n- [x] Read the grammar"
    # A file with no task list shows where it is, and changes no plan shown.
    assert file[1][0].content.uri == "file:///w/PLAN.md"
    # Removing the plan shown empties it.
    assert removed == types.Plan(entries=[])


def test_a_legacy_client_keeps_its_plan_when_another_plan_is_removed() -> None:
    shown = plan_updates(UpdateTranslator(), CHECKLIST, REMOVED)
    assert [type(u).__name__ for u in shown] == ["Plan"]


# --- end to end ---------------------------------------------------------------------------


def plan_call(**arguments: Any) -> list[dict[str, Any]]:
    return [{"tool_call": {"name": "plan", "arguments": arguments}}]


@pytest.mark.e2e
async def test_plan_operations_for_a_client_that_advertised_plan_and_the_legacy_plan_on_load(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "PLAN.md").write_text("- [ ] Ship it\n")
    home = tmp_path / "home"
    script = write_script(
        tmp_path / "s.json",
        plan_call(entries=ENTRIES),
        plan_call(plan_id="design", markdown="# Design\n\n- [x] Read the grammar"),
        plan_call(plan_id="steps", file="PLAN.md"),
        plan_call(plan_id="design", remove=True),
        [{"text": "Planned."}],
    )
    client = EditorClient(decide=allow_all)
    plans = types.ClientCapabilities(plan=types.PlanCapabilities())
    async with running_agent(home, script=script, client=client, capabilities=plans):
        session_id = await client.new_session(workspace)
        await client.prompt(session_id, "Plan it")
        lines = [json.loads(line) for line in client.received]

    kinds = [
        (m["params"]["update"]["sessionUpdate"], m["params"]["update"].get("plan", {}).get("type"))
        for m in lines
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"].startswith("plan")
    ]
    assert kinds == [
        ("plan_update", "items"),
        ("plan_update", "markdown"),
        ("plan_update", "file"),
        ("plan_removed", None),
    ]
    [file] = [u.plan for u in client.updates_for(session_id) if isinstance(u, types.PlanUpdate)][2:]
    assert isinstance(file, types.PlanFile)
    assert file.uri == (workspace / "PLAN.md").resolve().as_uri()

    legacy = EditorClient(decide=allow_all)
    async with running_agent(home, script=script, client=legacy):
        await legacy.load(session_id, workspace)
        replay = legacy.updates_for(session_id)

    assert not [u for u in replay if isinstance(u, types.PlanUpdate | types.PlanRemoved)]
    assert [[e.content for e in u.entries] for u in replay if isinstance(u, types.Plan)] == [
        ["Read the grammar", "Write the lexer"],
        ["Read the grammar"],
        ["Ship it"],
    ]
