"""The tool executor: bindings by request, admission, execution, and a result for every call."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_agent.capabilities.execution._executor import RESTART_NOT_STARTED, RESTART_RUNNING
from acp_agent.capabilities.permissions import PermissionChoice, PermissionMode
from acp_agent.content import TextContent
from acp_agent.core import (
    CallId,
    EventDraft,
    ModelRequestStarted,
    PermissionAnswered,
    PermissionAsked,
    SessionId,
    ToolCallAdmitted,
    ToolCallCompleted,
    ToolCallInterrupted,
    ToolCallOutputDelta,
    ToolCallProgressed,
    ToolCallRequested,
    ToolCallStarted,
    ToolOutcome,
    ToolResultRecorded,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    UserInputAdopted,
)
from acp_agent.store import MemoryDatabase, MemoryStore

from .support import (
    AnsweringPrompter,
    BlockingTool,
    CountingTool,
    ReaderTool,
    in_process_agent,
    payloads_of,
)


def one_call(name: str, arguments: dict[str, object] | None = None, call_id: str = "c1"):
    call = {"name": name, "arguments": arguments or {}, "id": call_id}
    return {"replies": [[{"tool_call": call}], [{"text": "done"}]]}


def results(history) -> list[tuple[str, ToolOutcome, bool, str | None]]:
    return [
        (r.call_id, r.outcome, r.is_error, r.model_text)
        for r in payloads_of(history, ToolResultRecorded)
    ]


async def test_a_call_goes_admitted_started_completed_and_recorded_with_its_progress(
    tmp_path: Path,
):
    counter = CountingTool(tmp_path / "counter")
    async with in_process_agent(one_call("count"), tmp_path, tools=lambda: [counter]) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        await agent.wait_turn_over(await agent.prompt())
        history = await agent.history()

    call = CallId("c1")
    kinds = (ToolCallAdmitted, ToolCallStarted, ToolCallProgressed, ToolCallCompleted)
    assert payloads_of(history, *kinds) == [
        ToolCallAdmitted(call, None),
        ToolCallStarted(call),
        ToolCallProgressed(call, [TextContent("run 1")]),
        ToolCallCompleted(call, succeeded=True),
    ]
    [result] = payloads_of(history, ToolResultRecorded)
    assert result.content == (TextContent("counted 1"),)
    assert (result.raw_output, result.is_error, result.outcome) == (1, False, ToolOutcome.FINISHED)


async def test_reads_run_without_asking_in_ask_mode_and_a_failure_is_a_result(tmp_path: Path):
    script = {
        "replies": [
            [
                {"tool_call": {"name": "look", "id": "ok"}},
                {"tool_call": {"name": "look", "arguments": {"fail": True}, "id": "bad"}},
            ],
            [{"text": "done"}],
        ]
    }
    prompter = AnsweringPrompter()
    async with in_process_agent(script, tmp_path, tools=lambda: [ReaderTool()]) as agent:
        agent.controls.prompter = prompter
        await agent.wait_turn_over(await agent.prompt())
        history = await agent.history()

    assert prompter.questions == []
    assert results(history) == [
        ("ok", ToolOutcome.FINISHED, False, "seen"),
        ("bad", ToolOutcome.FINISHED, True, "The look tool failed: RuntimeError: the lens cracked"),
    ]


@pytest.mark.parametrize(
    ("choice", "runs", "outcome"),
    [
        (PermissionChoice.ALLOW_ONCE, 1, ToolOutcome.FINISHED),
        (PermissionChoice.REJECT_ONCE, 0, ToolOutcome.NOT_EXECUTED),
    ],
)
async def test_ask_mode_asks_before_a_command_and_the_answer_decides(
    tmp_path: Path, choice: PermissionChoice, runs: int, outcome: ToolOutcome
):
    counter = CountingTool(tmp_path / "counter")
    prompter = AnsweringPrompter(choice)
    script = one_call("count", {"label": "x"})
    async with in_process_agent(script, tmp_path, tools=lambda: [counter]) as agent:
        agent.controls.prompter = prompter
        await agent.wait_turn_over(await agent.prompt())
        history = await agent.history()

    [question] = prompter.questions
    assert (question.call_id, question.title, question.target) == ("c1", "Count x", "count x")
    assert [o.option_id for o in question.options] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    [asked] = payloads_of(history, PermissionAsked)
    assert payloads_of(history, PermissionAnswered) == [
        PermissionAnswered(asked.permission_id, CallId("c1"), choice.value)
    ]
    assert counter.runs == runs
    assert [r[1] for r in results(history)] == [outcome]


async def test_allow_always_is_remembered_for_the_workspace_and_asks_no_more(tmp_path: Path):
    counter = CountingTool(tmp_path / "counter")
    prompter = AnsweringPrompter(PermissionChoice.ALLOW_ALWAYS)
    database = MemoryDatabase()
    script = one_call("count", {"label": "x"})
    async with in_process_agent(
        script, tmp_path, tools=lambda: [counter], store=MemoryStore(database)
    ) as agent:
        agent.controls.prompter = prompter
        await agent.wait_turn_over(await agent.prompt())
        await agent.wait_turn_over(await agent.prompt())  # the script repeats its last reply
        rules = await agent.store.list_permission_rules()
    # A new session in the same workspace, another process: the rule holds.
    script = one_call("count", {"label": "x"}, call_id="c9")
    async with in_process_agent(
        script, tmp_path, tools=lambda: [counter], store=MemoryStore(database)
    ) as agent:
        agent.controls.prompter = prompter
        await agent.wait_turn_over(await agent.prompt())

    assert len(prompter.questions) == 1
    assert counter.runs == 2
    assert [(r.tool, r.scope, r.pattern, r.decision) for r in rules] == [
        ("count", "command_prefix", "count x", "allow")
    ]


async def test_an_always_answer_holds_in_its_owners_sessions_only(tmp_path: Path):
    counter = CountingTool(tmp_path / "counter")
    prompter = AnsweringPrompter(PermissionChoice.ALLOW_ALWAYS, PermissionChoice.ALLOW_ALWAYS)
    database = MemoryDatabase()
    for owner, call_id in (("alice", "c1"), ("bob", "c2"), ("alice", "c3")):
        script = one_call("count", {"label": "x"}, call_id=call_id)
        async with in_process_agent(
            script, tmp_path, tools=lambda: [counter], store=MemoryStore(database), owner=owner
        ) as agent:
            agent.controls.prompter = prompter
            await agent.wait_turn_over(await agent.prompt())
            rules = await agent.store.list_permission_rules()

    # Alice is asked once; Bob, in the same workspace, is asked despite her rule; Alice's
    # next session is not asked again.
    assert [question.call_id for question in prompter.questions] == ["c1", "c2"]
    assert counter.runs == 3
    assert [(r.owner, r.pattern) for r in rules] == [("alice", "count x"), ("bob", "count x")]


async def test_reject_always_refuses_later_calls_with_an_explanation(tmp_path: Path):
    counter = CountingTool(tmp_path / "counter")
    prompter = AnsweringPrompter(PermissionChoice.REJECT_ALWAYS)
    script = {
        "replies": [
            [{"tool_call": {"name": "count", "arguments": {"label": "x"}, "id": "c1"}}],
            [{"tool_call": {"name": "count", "arguments": {"label": "x"}, "id": "c2"}}],
            [{"text": "ok"}],
        ]
    }
    async with in_process_agent(script, tmp_path, tools=lambda: [counter]) as agent:
        agent.controls.prompter = prompter
        agent.controls.mode = PermissionMode.ASK
        await agent.wait_turn_over(await agent.prompt())
        history = await agent.history()

    assert len(prompter.questions) == 1
    assert counter.runs == 0
    [first, second] = results(history)
    assert first[1] == second[1] == ToolOutcome.NOT_EXECUTED
    assert "always reject" in (second[3] or "")


async def test_plan_mode_refuses_side_effects_with_an_explanation_the_model_reads(
    tmp_path: Path,
):
    counter = CountingTool(tmp_path / "counter")
    prompter = AnsweringPrompter(PermissionChoice.ALLOW_ONCE)
    async with in_process_agent(one_call("count"), tmp_path, tools=lambda: [counter]) as agent:
        agent.controls.prompter = prompter
        agent.controls.mode = PermissionMode.PLAN
        await agent.wait_turn_over(await agent.prompt())
        history = await agent.history()

    assert prompter.questions == []
    assert counter.runs == 0
    [(_, outcome, is_error, text)] = results(history)
    assert (outcome, is_error) == (ToolOutcome.NOT_EXECUTED, True)
    assert "plan mode" in (text or "")


async def test_paths_outside_the_workspace_are_asked_even_in_bypass(tmp_path: Path):
    prompter = AnsweringPrompter(PermissionChoice.ALLOW_ONCE)
    script = one_call("look", {"outside": ["/etc/passwd"]})
    async with in_process_agent(script, tmp_path, tools=lambda: [ReaderTool()]) as agent:
        agent.controls.prompter = prompter
        agent.controls.mode = PermissionMode.BYPASS
        await agent.wait_turn_over(await agent.prompt())

    [question] = prompter.questions
    assert question.note == "Outside the workspace: /etc/passwd"
    assert PermissionChoice.ALLOW_ALWAYS not in [o.choice for o in question.options]


async def test_a_call_to_an_unknown_tool_gets_a_clear_error_result(tmp_path: Path):
    async with in_process_agent(
        one_call("teleport"), tmp_path, tools=lambda: [ReaderTool()]
    ) as agent:
        await agent.wait_turn_over(await agent.prompt())
        history = await agent.history()

    [(_, outcome, _, text)] = results(history)
    assert outcome is ToolOutcome.NOT_EXECUTED
    assert text == (
        "Not run: there is no tool named 'teleport' (available: branch, branch_close, "
        "branch_message, branch_status, branch_wait, job_output, job_stop, look, read_result)."
    )


async def test_arguments_that_are_not_json_are_not_run(tmp_path: Path):
    script = {"replies": [[{"tool_call": {"name": "look", "arguments": "{oops"}}], [{"text": "."}]]}
    async with in_process_agent(script, tmp_path, tools=lambda: [ReaderTool()]) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        await agent.wait_turn_over(await agent.prompt())
        history = await agent.history()

    [(_, outcome, _, text)] = results(history)
    assert outcome is ToolOutcome.NOT_EXECUTED
    assert text == "Not run: the arguments are not a JSON object: {oops"


async def test_a_tool_set_reloaded_mid_generation_never_runs_the_new_tool_for_an_old_request(
    tmp_path: Path,
):
    old, new = CountingTool(tmp_path / "old"), CountingTool(tmp_path / "new")
    script = {"replies": [[{"sleep_ms": 300}, {"tool_call": {"name": "count"}}], [{"text": "."}]]}
    async with in_process_agent(script, tmp_path, tools=lambda: [old]) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        turn_id = await agent.prompt()
        await agent.wait_for(ModelRequestStarted)  # made with the old generation
        await agent.toolset.reload([new])
        await agent.wait_turn_over(turn_id)
        history = await agent.history()

    assert old.runs == new.runs == 0
    [(_, outcome, _, text)] = results(history)
    assert outcome is ToolOutcome.NOT_EXECUTED
    assert "tools were reloaded" in (text or "")


async def test_reload_cancels_and_awaits_a_running_call_of_the_old_generation(tmp_path: Path):
    blocking = BlockingTool()
    async with in_process_agent(one_call("block"), tmp_path, tools=lambda: [blocking]) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        turn_id = await agent.prompt()
        with anyio.fail_after(5):
            await blocking.started.wait()
        with anyio.fail_after(2):
            await agent.toolset.reload([])
        history_after_reload = await agent.history()
        await agent.wait_turn_over(turn_id)

    [(_, outcome, _, text)] = results(history_after_reload)
    assert outcome is ToolOutcome.INTERRUPTED
    assert "reloaded while this call was running" in (text or "")
    assert payloads_of(history_after_reload, ToolCallInterrupted) == [
        ToolCallInterrupted(CallId("c1"), "reloaded")
    ]


async def test_cancel_during_a_tool_run_records_it_interrupted_before_the_turn_ends(
    tmp_path: Path,
):
    blocking = BlockingTool()
    script = {
        "replies": [
            [
                {"tool_call": {"name": "block", "id": "c1"}},
                {"tool_call": {"name": "block", "id": "c2"}},
            ]
        ]
    }
    async with in_process_agent(script, tmp_path, tools=lambda: [blocking]) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        turn_id = await agent.prompt()
        with anyio.fail_after(5):
            await blocking.started.wait()
        with anyio.fail_after(1):
            await agent.session.main.cancel_turn(turn_id)
        history = await agent.history()

    kinds = [type(e.payload).__name__ for e in history]
    assert kinds.index("TurnInterrupted") > max(
        i for i, kind in enumerate(kinds) if kind == "ToolResultRecorded"
    )
    assert payloads_of(history, ToolCallOutputDelta) == [
        ToolCallOutputDelta(CallId("c1"), "t1", "working\n")
    ]
    assert [r[:2] for r in results(history)] == [
        ("c1", ToolOutcome.INTERRUPTED),
        ("c2", ToolOutcome.NOT_EXECUTED),
    ]


async def test_cancel_during_a_permission_question_settles_it_as_cancelled(tmp_path: Path):
    counter = CountingTool(tmp_path / "counter")
    prompter = AnsweringPrompter(block=True)
    async with in_process_agent(one_call("count"), tmp_path, tools=lambda: [counter]) as agent:
        agent.controls.prompter = prompter
        turn_id = await agent.prompt()
        with anyio.fail_after(5):
            await prompter.asked.wait()
        with anyio.fail_after(1):
            await agent.session.main.cancel_turn(turn_id)
        history = await agent.history()

    [asked] = payloads_of(history, PermissionAsked)
    assert payloads_of(history, PermissionAnswered) == [
        PermissionAnswered(asked.permission_id, CallId("c1"), "cancelled")
    ]
    assert [r[1] for r in results(history)] == [ToolOutcome.NOT_EXECUTED]
    assert counter.runs == 0


async def test_a_batch_arriving_after_the_interrupt_is_not_executed(tmp_path: Path):
    counter = CountingTool(tmp_path / "counter")
    async with in_process_agent(one_call("count"), tmp_path, tools=lambda: [counter]) as agent:
        executor = agent.executor
        turn_id = TurnId("turn_late")
        executor.interrupt(turn_id)

        class _Turn:  # the turn the late batch belongs to, already interrupted
            state = None

            def __init__(self) -> None:
                self.turn_id = turn_id

        request = ToolCallRequested("req_x", CallId("late"), "count", {})
        await executor.accept(_Turn(), [request])  # type: ignore[arg-type]
        history = await agent.history()

    assert [r[:2] for r in results(history)] == [("late", ToolOutcome.NOT_EXECUTED)]
    assert counter.runs == 0


async def test_rebuild_settles_unfinished_calls_once_and_never_runs_them(tmp_path: Path):
    database = MemoryDatabase()
    counter = CountingTool(tmp_path / "counter")
    async with in_process_agent(None, tmp_path, store=MemoryStore(database)) as agent:
        session_id = agent.session.id
        main = agent.session.main
        # What a crashed process left: one call running, one only proposed, one answered.
        await main.append(
            [
                EventDraft(UserInputAdopted("turn_1", [TextContent("x")]), "t"),
                EventDraft(ModelRequestStarted("req_1", TurnId("turn_1"), "m"), "t"),
                EventDraft(ToolCallRequested("req_1", CallId("ran"), "count", {}), "t"),
                EventDraft(ToolCallRequested("req_1", CallId("waited"), "count", {}), "t"),
                EventDraft(ToolCallRequested("req_1", CallId("done"), "count", {}), "t"),
                EventDraft(PermissionAsked("perm_1", CallId("waited"), ["allow_once"]), "t"),
                EventDraft(ToolCallStarted(CallId("ran")), "t"),
                EventDraft(ToolResultRecorded(CallId("done"), "req_1", [], False), "t"),
            ]
        )
        database.leases.clear()  # the process died holding its lease
    for _ in range(2):  # a second restart finds nothing left to settle
        async with in_process_agent(
            None,
            tmp_path,
            tools=lambda: [counter],
            store=MemoryStore(database),
            session_id=SessionId(session_id),
        ) as agent:
            history = await agent.history()
            await agent.wait_turn_over(TurnId("turn_1"))

    assert counter.runs == 0
    assert results(history)[1:] == [
        ("ran", ToolOutcome.INTERRUPTED, True, RESTART_RUNNING),
        ("waited", ToolOutcome.NOT_EXECUTED, True, RESTART_NOT_STARTED),
    ]
    assert payloads_of(history, PermissionAnswered) == [
        PermissionAnswered("perm_1", CallId("waited"), "cancelled")
    ]
    assert payloads_of(history, TurnInterrupted, TurnEnded) == [TurnInterrupted(TurnId("turn_1"))]
    assert RESTART_RUNNING.startswith("Interrupted by restart; not re-run")
