"""How watch shows updates: one line each (`--plain`), and the terminal view within its width."""

from __future__ import annotations

import io
import re

import pytest

from acp_agent.adapters.watch._lines import job_line, question_line, update_line
from acp_agent.adapters.watch._show import PlainShower, TerminalShower

DIFF = {"type": "diff", "path": "/w/a.py", "oldText": "a\nb\n", "newText": "a\nB\nc\n"}
WRITE = {
    "sessionUpdate": "tool_call_update",
    "toolCallId": "call_1",
    "status": "completed",
    "title": "Edit a.py " + "with a very long title " * 6,
    "content": [DIFF],
}


def test_a_line_never_holds_a_newline_and_says_what_the_update_holds() -> None:
    label, text = update_line(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a\nb"}}
    )
    assert (label, text) == ("agent", '"a\\nb"')
    label, text = update_line(WRITE)
    assert label == "tool"
    assert text.startswith('call_1 completed "Edit a.py')
    assert text.endswith("| diff /w/a.py +2 -1")
    assert "\n" not in text


def test_a_question_line_numbers_its_choices_and_shows_the_command() -> None:
    line = question_line(
        {
            "toolCall": {"toolCallId": "c", "title": "Run", "rawInput": {"command": "ls\n-la"}},
            "options": [
                {"optionId": "a", "name": "Allow", "kind": "allow_once"},
                {"optionId": "r", "name": "Reject", "kind": "reject_once"},
            ],
        }
    )
    assert line == 'c "Run" $ "ls\\n-la" ? 1=Allow (allow_once) 2=Reject (reject_once)'


def test_a_job_line_says_how_it_ended_and_its_last_output() -> None:
    params = {"jobId": "job_1", "state": "exited", "exitCode": 2, "durationS": 1.25}
    assert job_line({**params, "output": "x\nlast words\n"}) == (
        'job_1 exited code 2 after 1.2 s | "last words"'
    )


@pytest.mark.parametrize("columns", [80, 50])
def test_the_terminal_view_keeps_within_its_width_and_colours_the_diff(
    columns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    out = io.StringIO()
    shower = TerminalShower(out, color=True)
    shower.update(
        None, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}}
    )
    shower.update(None, WRITE)
    lines = out.getvalue().splitlines()
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines]
    assert plain[0] == "agent: Hi"
    assert all(len(line) <= columns for line in plain)
    assert "\x1b[32m    +B" in out.getvalue()  # an added line, green
    assert "\x1b[31m    -b" in out.getvalue()  # a removed one, red


def _chunk(text: str) -> dict[str, object]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def test_the_terminal_view_shows_each_branch_under_its_title_never_mid_line() -> None:
    out = io.StringIO()
    shower = TerminalShower(out, color=False)
    shower.update("1", {"sessionUpdate": "subagent_update", "sessionId": "br_1", "title": "lint"})
    shower.update("2", {"sessionUpdate": "subagent_update", "sessionId": "br_2", "title": "tests"})
    shower.update("3:0", _chunk("Working"))
    shower.child("br_1", _chunk("Running "))
    shower.child("br_2", _chunk("Testing."))
    shower.child("br_1", _chunk("lint."))
    shower.child("br_1", {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Run ruff"})
    shower.child("br_1", _chunk("lint clean"))
    report = {
        "sessionUpdate": "session_message",
        "senderSessionId": "br_1",
        "recipientSessionId": "sess_1",
        "content": [{"type": "text", "text": "lint clean"}],
    }
    shower.update("4", report)
    done = {"state": "idle", "stopReason": "end_turn"}
    shower.update("4", {"sessionUpdate": "subagent_update", "sessionId": "br_1", "state": done})
    stopped = {"state": "idle", "stopReason": "cancelled"}
    shower.update("5", {"sessionUpdate": "subagent_update", "sessionId": "br_2", "state": stopped})
    assert out.getvalue().splitlines() == [
        "↳ [lint] started",
        "↳ [tests] started",
        "agent: Working",
        "  [lint] Running lint.",
        "  [lint] ▸ Run ruff",
        "↳ [lint] reports: lint clean",
        "↳ [lint] done",
        "  [tests] Testing.",
        "↳ [tests] cancelled",
    ]


def test_a_branchs_question_and_its_answer_show_as_the_branchs() -> None:
    # Shown (another client answers), then answered elsewhere: in the terminal view with its
    # command and title, in --plain labelled with the branch's title.
    question = {
        "sessionId": "br_1",
        "toolCall": {"toolCallId": "c", "title": "Run ruff", "rawInput": {"command": "ruff ."}},
        "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}],
    }
    resolved = {
        "sessionId": "br_1",
        "toolCallId": "c",
        "outcome": {"outcome": "selected", "optionId": "a"},
        "resolvedBy": "client-2",
    }
    announce = {"sessionUpdate": "subagent_update", "sessionId": "br_1", "title": "lint"}
    out = io.StringIO()
    terminal = TerminalShower(out, color=False)
    terminal.update("1", announce)
    terminal.question(question, answerable=False)
    terminal.resolved(resolved)
    terminal.withdrawn("sess_1", "call_9")
    assert out.getvalue().splitlines() == [
        "↳ [lint] started",
        "? [lint] permission: Run ruff  (a controller answers it)",
        "    $ ruff .",
        "✓ [lint] Run ruff: answered a by client-2",
        "✗ call_9: answered elsewhere",
    ]
    out = io.StringIO()
    plain = PlainShower(out)
    plain.update("1", announce)
    plain.question(question, answerable=True)
    plain.resolved(resolved)
    assert out.getvalue().splitlines()[1:] == [
        '- [lint] question c "Run ruff" $ "ruff ." ? 1=Allow (allow_once)',
        "- [lint] resolved c answered a by client-2",
    ]
