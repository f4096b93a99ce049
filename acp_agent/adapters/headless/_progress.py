"""A headless run's tool calls as a person follows them on stderr: by title, with reasons.

`ToolProgress.update(update)` takes each `session/update` of the session (as
JSON) and writes a progress line (`Reporter.progress`: only when stderr is a
terminal) as a call starts and as it ends:

    → Read src/app.py
    ✓ Read src/app.py
    ✗ Run `pytest -q`: exit code 1

A failed call says why in the same line: the first line of its text, else its
exit code or signal.
"""

from __future__ import annotations

from typing import Any, Final

from acp_agent.adapters.acp_content import tool_part_from_json
from acp_agent.adapters.headless._report import Reporter
from acp_agent.content import TextContent

__all__ = ("ToolProgress",)

#: The most of a reason a line shows.
_REASON_CHARS: Final = 160


class ToolProgress:
    """Writes a line as each tool call starts and ends (see the module docstring)."""

    def __init__(self, reporter: Reporter) -> None:
        self._reporter = reporter
        #: Each call's title, as last given.
        self._titles: dict[str, str] = {}

    def update(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind not in ("tool_call", "tool_call_update"):
            return
        call_id = str(update.get("toolCallId"))
        title = update.get("title")
        if isinstance(title, str) and title:
            self._titles[call_id] = title
        title = self._titles.get(call_id, call_id)
        status = update.get("status")
        if status == "completed":
            self._reporter.progress(f"✓ {title}")
        elif status == "failed":
            reason = _reason(update)
            self._reporter.progress(f"✗ {title}: {reason}" if reason else f"✗ {title}")
        elif kind == "tool_call":
            self._reporter.progress(f"→ {title}")


def _reason(update: dict[str, Any]) -> str | None:
    """Why a call failed, in a line: its text's first line, else how its command ended."""
    for item in update.get("content") or []:
        part = tool_part_from_json(item)
        if isinstance(part, TextContent):
            for line in part.text.splitlines():
                line = line.strip()
                if line and not line.startswith("```"):
                    return line if len(line) <= _REASON_CHARS else line[:_REASON_CHARS] + "…"
    raw = update.get("rawOutput")
    if isinstance(raw, dict):
        if raw.get("timed_out") is True:
            return "timed out"
        if isinstance(raw.get("signal"), str):
            return f"killed by {raw['signal']}"
        if isinstance(raw.get("exit_code"), int):
            return f"exit code {raw['exit_code']}"
    return None
