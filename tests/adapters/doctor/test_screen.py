"""The human screen's layout and colour, from a report built by hand."""

from __future__ import annotations

from acp_agent.adapters.doctor._report import Check, Report, Status
from acp_agent.adapters.doctor._screen import render_screen, wants_colour

REPORT = Report(
    (
        Check("model", Status.OK, "openai/gpt-4.1: fine", details={"key": "set (from X)"}),
        Check(
            "mcp:docs",
            Status.PROBLEM,
            "failed: exited with code 1",
            "run its command by hand to see why",
            {"stderr": "first line\nsecond line", "tools": ["a", "b"]},
        ),
    )
)


def test_rows_are_aligned_with_fix_and_details_under_the_summary() -> None:
    assert render_screen(REPORT) == (
        "ok       model     openai/gpt-4.1: fine\n"
        "                   key: set (from X)\n"
        "problem  mcp:docs  failed: exited with code 1\n"
        "                   fix: run its command by hand to see why\n"
        "                   stderr:\n"
        "                     first line\n"
        "                     second line\n"
        "                   tools: a, b\n"
        "\n"
        "A prompt would work; worth a look: 1 problem.\n"
    )


def test_status_words_are_coloured_only_when_asked() -> None:
    coloured = render_screen(REPORT, colour=True)

    assert coloured.startswith("\x1b[32mok     \x1b[0m  model")
    assert "\x1b[31mproblem\x1b[0m  mcp:docs" in coloured
    assert "\x1b[" not in render_screen(REPORT)


def test_colour_needs_a_terminal_and_no_no_color() -> None:
    assert wants_colour(True, {"TERM": "xterm"})
    assert not wants_colour(False, {"TERM": "xterm"})
    assert not wants_colour(True, {"TERM": "xterm", "NO_COLOR": "1"})
    assert not wants_colour(True, {"TERM": "dumb"})


def test_a_problem_that_gates_the_prompt_fails_the_run() -> None:
    gated = Report(
        (Check("store", Status.PROBLEM, "cannot be opened", "move it", gates_prompt=True),)
    )

    assert (gated.exit_status, REPORT.exit_status) == (1, 0)
    assert render_screen(gated).endswith(
        "A prompt would not work: fix the problems above (1 problem).\n"
    )
    assert gated.to_json() == {
        "version": 1,
        "ok": False,
        "checks": [
            {"name": "store", "status": "problem", "summary": "cannot be opened", "fix": "move it"}
        ],
    }
