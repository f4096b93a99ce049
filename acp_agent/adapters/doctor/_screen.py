"""The report as a person reads it: one aligned row per check, what to fix under it.

    ok       model    openai/gpt-4.1: the provider answered and knows the model
                      chosen by: OPENAI_API_KEY is set
    problem  store    /home/me/.local/share/acp-agent/sessions.sqlite3 cannot be opened: ...
                      fix: it is not an SQLite file: move it away (...)

Then one line: whether a prompt would work, and how many problems and warnings there
are (a broken MCP or language server is a problem that a prompt can do without).
The status words are coloured only when asked (a terminal, without `NO_COLOR`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Final

from acp_agent.adapters.doctor._report import Check, DetailValue, Report, Status

__all__ = ("render_screen", "wants_colour")

_COLOURS: Final = {Status.OK: "32", Status.WARNING: "33", Status.PROBLEM: "31"}
_STATUS_WIDTH: Final = max(len(status.value) for status in Status)
#: Where a list detail wraps onto its own lines.
_WRAP_AT: Final = 72


def wants_colour(is_terminal: bool, env: Mapping[str, str]) -> bool:
    """Colour for a terminal, unless `NO_COLOR` is set or the terminal is dumb."""
    return is_terminal and not env.get("NO_COLOR") and env.get("TERM") != "dumb"


def render_screen(report: Report, *, colour: bool = False) -> str:
    """The whole screen, ending with a newline."""
    width = max((len(check.name) for check in report.checks), default=0)
    indent = " " * (_STATUS_WIDTH + 2 + width + 2)
    lines: list[str] = []
    for check in report.checks:
        lines.append(f"{_status(check.status, colour)}  {check.name:<{width}}  {check.summary}")
        if check.fix is not None:
            lines.append(f"{indent}fix: {check.fix}")
        lines.extend(_details(check, indent))
    lines.append("")
    lines.append(_verdict(report))
    return "\n".join(lines) + "\n"


def _status(status: Status, colour: bool) -> str:
    word = f"{status.value:<{_STATUS_WIDTH}}"
    if not colour:
        return word
    return f"\x1b[{_COLOURS[status]}m{word}\x1b[0m"


def _details(check: Check, indent: str) -> list[str]:
    lines = []
    for key, value in check.details.items():
        shown = _lines(value)
        if len(shown) == 1:
            lines.append(f"{indent}{key}: {shown[0]}")
        else:
            lines.append(f"{indent}{key}:")
            lines.extend(f"{indent}  {line}" for line in shown)
    return lines


def _lines(value: DetailValue) -> list[str]:
    """A detail as the lines it takes: text line by line, a list's items comma-joined and
    wrapped."""
    if isinstance(value, str):
        return value.splitlines() or [""]
    if isinstance(value, Sequence):
        joined = ", ".join(value)
        if len(joined) <= _WRAP_AT:
            return [joined or "none"]
        return textwrap.wrap(joined, _WRAP_AT, break_on_hyphens=False, break_long_words=False)
    return [str(value)]


def _verdict(report: Report) -> str:
    problems, warnings = report.count(Status.PROBLEM), report.count(Status.WARNING)
    counted = ", ".join(
        f"{count} {word}{'s' if count != 1 else ''}"
        for count, word in ((problems, "problem"), (warnings, "warning"))
        if count
    )
    if not report.prompt_would_work:
        return f"A prompt would not work: fix the problems above ({counted})."
    if problems or warnings:
        return f"A prompt would work; worth a look: {counted}."
    return "A prompt would work; nothing to fix."
