"""What a person reads of the headless commands: progress by title, and every `--help`.

Progress lines name a tool call by its title and give a failed call's reason
in the same line; every option of every command says what it is, and every
choice it takes is listed.
"""

from __future__ import annotations

import argparse
import io

import pytest

from acp_agent.adapters.check._command import parser as check_parser
from acp_agent.adapters.doctor._command import parser as doctor_parser
from acp_agent.adapters.headless._exec import APPROVALS, PERMISSION_MODES
from acp_agent.adapters.headless._exec import parser as exec_parser
from acp_agent.adapters.headless._policy import Approve
from acp_agent.adapters.headless._progress import ToolProgress
from acp_agent.adapters.headless._report import Reporter
from acp_agent.adapters.headless._sessions import parser as sessions_parser
from acp_agent.capabilities.controls import DEFAULT_MODE, MODES
from acp_agent.capabilities.permissions import PermissionMode
from acp_agent.stdio_agent import _parser as agent_parser

REJECTED = "Not run: you rejected it."


def progress_of(*updates: dict[str, object]) -> list[str]:
    stderr = io.StringIO()
    tools = ToolProgress(Reporter(json_lines=False, stderr=stderr, progress=True))
    for update in updates:
        tools.update(update)
    return stderr.getvalue().splitlines()


def test_progress_names_calls_by_title_and_says_why_one_failed():
    lines = progress_of(
        {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read a.py"},
        {"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "Run `pytest -q`"},
        {"sessionUpdate": "tool_call", "toolCallId": "c3", "title": "Write b.py"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"},
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c2",
            "status": "failed",
            "content": [{"type": "terminal", "terminalId": "t1"}],
            "rawOutput": {"exit_code": 1, "signal": None},
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c3",
            "status": "failed",
            "content": [{"type": "content", "content": {"type": "text", "text": REJECTED}}],
        },
    )

    assert lines == [
        "acp-agent: → Read a.py",
        "acp-agent: → Run `pytest -q`",
        "acp-agent: → Write b.py",
        "acp-agent: ✓ Read a.py",
        "acp-agent: ✗ Run `pytest -q`: exit code 1",
        "acp-agent: ✗ Write b.py: Not run: you rejected it.",
    ]


def test_a_row_that_arrives_done_is_one_line():
    row = {"sessionUpdate": "tool_call", "toolCallId": "j", "title": "Job `x` ended"}

    assert progress_of({**row, "status": "completed"}) == ["acp-agent: ✓ Job `x` ended"]


def commands() -> list[tuple[str, argparse.ArgumentParser]]:
    found = [
        ("acp-agent", agent_parser()),
        ("exec", exec_parser()),
        ("check", check_parser()),
        ("doctor", doctor_parser({})),
        ("sessions", sessions_parser()),
    ]
    for action in sessions_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += [(f"sessions {name}", sub) for name, sub in action.choices.items()]
    return found


@pytest.mark.parametrize(("name", "command"), commands(), ids=[n for n, _ in commands()])
def test_every_option_says_what_it_is_and_lists_its_choices(
    name: str, command: argparse.ArgumentParser
):
    shown = " ".join(command.format_help().split())
    for action in command._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        assert action.help, f"{name}: {action.option_strings or action.dest} has no help"
        for choice in action.choices or ():
            assert str(choice) in shown, f"{name}: {choice} is not listed"


def test_exec_approves_as_its_policy_knows():
    # The command line names them before the policy loads (after the agent started).
    assert tuple(choice.value for choice in Approve) == APPROVALS
    assert exec_parser().parse_args(["hi"]).approve == Approve.NEVER


def test_exec_takes_the_agents_modes_and_lists_each():
    # The same modes, in the order the agent offers them (its picker's), default first.
    assert tuple(choice.value for choice in MODES) == PERMISSION_MODES
    assert {choice.value for choice in MODES} == {mode.value for mode in PermissionMode}
    assert PERMISSION_MODES[0] == DEFAULT_MODE.value
    shown = " ".join(exec_parser().format_help().split())
    assert "sandboxed (the default: edits run, commands run in the sandbox" in shown
    assert "ask (ask before edits" in shown
    assert "accept-edits (edits run" in shown
    assert "plan (only reads run)" in shown
    assert "bypass (everything runs" in shown
