"""`read_result`: the model reads back the whole of a tool result that was truncated to its budget.

A result over its budget reaches the model as its head and tail, with a note
naming its call; the whole text is in the session's store (`FullResults`),
so wherever the session is opened, `read_result` with that call id shows it
as `read` shows a file: numbered lines from `offset`, at most `limit` of them
and 100,000 characters, a line longer than 2000 characters shown as several.
It reads the agent's own record of this session: no permission is asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from acp_agent.capabilities.execution._full_results import LINE_CHARS, FullResults
from acp_agent.toolkit import (
    RuntimeTool,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolResult,
    fenced,
    object_schema,
    text_result,
)
from acp_agent.values import Value

__all__ = ("READ_RESULT", "result_tools")

READ_RESULT: Final = "read_result"
_DEFAULT_LINES: Final = 2000
#: The numbered text the model gets stops before this many characters (as `read`'s).
_MAX_CHARS: Final = 100_000


@attrs.frozen
class _SessionResults(Value):
    """The full results of one session, as its tool reads them."""

    results: FullResults
    session_id: str


def _int(arguments: Mapping[str, Any], name: str, default: int) -> int:
    value = arguments.get(name, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolInputError(f"`{name}` must be a whole number, at least 1")
    return value


async def _read(service: _SessionResults, arguments: Mapping[str, Any]) -> ToolResult:
    call_id = arguments.get("call_id")
    if not isinstance(call_id, str) or not call_id.strip():
        raise ToolInputError("`call_id` must be the id of the call whose result was truncated")
    call_id = call_id.strip()
    offset = _int(arguments, "offset", 1)
    limit = _int(arguments, "limit", _DEFAULT_LINES)
    found = await service.results.read_lines(
        service.session_id, call_id, offset, limit, max_chars=_MAX_CHARS
    )
    if found is None:
        return text_result(
            f"No whole result is kept for call {call_id} in this session: only results truncated "
            "to their budget are, under the call id their note names.",
            error=True,
            raw={"error": "not_found", "call_id": call_id},
        )
    last = offset + len(found.lines) - 1
    numbered = "\n".join(f"{offset + n}\t{line}" for n, line in enumerate(found.lines))
    if not found.lines:
        where = f"The result of {call_id} has fewer than {offset} lines."
    elif found.at_end:
        where = f"Lines {offset}-{last} of the result of {call_id}: its end."
    else:
        where = (
            f"Lines {offset}-{last} of the result of {call_id}; more follow (read on with "
            f"offset {last + 1})."
        )
    text = f"{where}\n{fenced(numbered)}" if found.lines else where
    raw = {"call_id": call_id, "start_line": offset, "end_line": last, "at_end": found.at_end}
    return text_result(text, raw=raw)


_DEFINITION: Final = ToolDefinition(
    READ_RESULT,
    "Read the whole of a tool result that was truncated to fit (its note says so and names the "
    "call). Returns its lines numbered from 1 (`number<TAB>line`), at most `limit` (default "
    f"{_DEFAULT_LINES}) from `offset` (default 1) and {_MAX_CHARS:,} characters; a line "
    f"longer than {LINE_CHARS} characters is numbered as several. Where a note names a "
    "file `tool-results/<session>/<call>.txt` instead, give that file's path as `call_id`.",
    object_schema(
        {
            "call_id": {"type": "string", "description": "The call whose result was truncated."},
            "offset": {"type": "integer", "description": "The first line to show (from 1)."},
            "limit": {"type": "integer", "description": "How many lines to show."},
        },
        ["call_id"],
    ),
    ToolKind.READ,
)


def result_tools(results: FullResults, session_id: str) -> list[RuntimeTool[_SessionResults]]:
    """`read_result`, bound to one session's results."""

    def title(arguments: Mapping[str, Any]) -> str:
        return f"Read the whole result of {arguments.get('call_id') or 'a call'}"

    return [RuntimeTool(_DEFINITION, title, _read, _SessionResults(results, session_id))]
