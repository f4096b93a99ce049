"""A background job's end as the person sees it: one completed tool call, "Job … ended".

`job_end_row(shown)` makes the row of a `JobEndShown` fact: titled with the
command (short enough that a narrow client keeps its status icon), saying
which job ended how, after how long, which line started it, its last lines of
output, and where the rest of its output is. Live and on replay alike.
`job_end_notice(shown)` is the live notice beside it, for a client that takes
notices: plain text, a warning unless the job ended well (code 0, or stopped).
"""

from __future__ import annotations

from typing import Final

from acp_agent.agent import JobEndShown
from acp_agent.toolkit import Notice, NoticeSeverity, fenced
from protocol import types

__all__ = ("job_end_notice", "job_end_row")

#: The most of a command a row's title shows.
_TITLE_COMMAND_CHARS: Final = 40
#: How much of a job's id the person is shown, as `/jobs` shows it (which takes it).
_SHORT_ID: Final = 12


def job_end_row(shown: JobEndShown) -> types.ToolCall:
    """The completed tool call that tells the person a job ended."""
    return types.ToolCall(
        tool_call_id=shown.display_id,
        title=f"Job `{_short(shown.command)}` ended",
        kind=types.ToolKind.OTHER,
        status=types.ToolCallStatus.COMPLETED,
        content=[types.Content(content=types.TextContent(text=_text(shown)))],
    )


def job_end_notice(shown: JobEndShown) -> Notice:
    """The notice of a job's end: how it ended in the title, where it came from after."""
    went_well = shown.state == "stopped" or (shown.state == "exited" and shown.exit_code == 0)
    took = f"It ran {_duration(shown.duration_s)}. " if shown.duration_s is not None else ""
    line = "the main line" if shown.line == "main" else f"the branch {shown.line!r}"
    return Notice(
        NoticeSeverity.INFO if went_well else NoticeSeverity.WARNING,
        f'Background job "{_short(shown.command)}" {shown.outcome}',
        f"{took}Started by {line}; /jobs {shown.job_id[:_SHORT_ID]} shows its output.",
    )


def _text(shown: JobEndShown) -> str:
    took = f" after {_duration(shown.duration_s)}" if shown.duration_s is not None else ""
    line = "the main line" if shown.line == "main" else f"the branch {shown.line!r}"
    parts = [
        f"The background job `{shown.command}` {shown.outcome}{took}.",
        f"It was started by {line} (job `{shown.job_id[:_SHORT_ID]}`).",
    ]
    if shown.tail:
        parts.append(f"Its last output:\n{fenced(shown.tail)}")
    if shown.terminal_id is not None:
        parts.append("All of its output is in its terminal, in the call that started it.")
    else:
        parts.append(f"What was kept of its output: `/jobs {shown.job_id[:_SHORT_ID]}`.")
    return "\n\n".join(parts)


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _short(command: str) -> str:
    first, _, rest = command.strip().partition("\n")
    if len(first) > _TITLE_COMMAND_CHARS:
        return first[: _TITLE_COMMAND_CHARS - 1] + "…"
    return first + ("…" if rest else "")
