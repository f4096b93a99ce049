"""The `plan` tool: the model's todo list, shown by the editor as the session's plan.

Every call carries the complete list (ACP replaces the whole plan with each
`plan` update). The result's content is one `PlanContent`, which the adapter
sends as a `plan` session update rather than as tool-call content; the same
entries are the `raw_output`: ``{"entries": [{"content", "priority":
"high"|"medium"|"low", "status": "pending"|"in_progress"|"completed"}]}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from acp_agent.records import Record
from acp_agent.toolkit import (
    Effect,
    PermissionNeed,
    PlanContent,
    PlanEntry,
    PlanPriority,
    PlanStatus,
    ToolContext,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolPresentation,
    ToolResult,
)

__all__ = ("DEFINITION", "MAX_ENTRIES", "PlanTool", "parse_entries")

MAX_ENTRIES: Final = 100

DEFINITION: Final = ToolDefinition(
    name="plan",
    description="""\
Keep a todo list for multi-step work; the person sees it as your plan. Send the \
complete list every time (entries left out disappear). Mark an entry in_progress \
when you start it (one at a time) and completed as soon as it is done; add entries \
as you discover work. Skip it for a single simple step.""",
    input_schema={
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "maxItems": MAX_ENTRIES,
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "description": "The task, briefly."},
                        "status": {
                            "type": "string",
                            "enum": [status.value for status in PlanStatus],
                        },
                        "priority": {
                            "type": "string",
                            "enum": [priority.value for priority in PlanPriority],
                            "description": "Default medium.",
                        },
                    },
                    "required": ["content", "status"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["entries"],
        "additionalProperties": False,
    },
    kind=ToolKind.THINK,
)


def parse_entries(arguments: Mapping[str, Any]) -> tuple[PlanEntry, ...]:
    """The plan's entries; raises `ToolInputError` naming the first bad one."""
    entries = arguments.get("entries")
    if not isinstance(entries, list):
        raise ToolInputError("`entries` is required and must be a list")
    if len(entries) > MAX_ENTRIES:
        raise ToolInputError(f"a plan has at most {MAX_ENTRIES} entries")
    parsed: list[PlanEntry] = []
    for index, item in enumerate(entries):
        where = f"entries[{index}]"
        if not isinstance(item, Mapping):
            raise ToolInputError(f"{where} must be an object")
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise ToolInputError(f"{where}.content must be a non-empty string")
        try:
            status = PlanStatus(str(item.get("status")))
        except ValueError:
            choices = ", ".join(s.value for s in PlanStatus)
            raise ToolInputError(f"{where}.status must be one of {choices}") from None
        try:
            priority = PlanPriority(str(item.get("priority") or "medium"))
        except ValueError:
            choices = ", ".join(p.value for p in PlanPriority)
            raise ToolInputError(f"{where}.priority must be one of {choices}") from None
        parsed.append(PlanEntry(content.strip(), priority, status))
    return tuple(parsed)


@attrs.frozen
class PlanTool(Record):
    """Replaces the session's plan with the complete list it is given."""

    @property
    def definition(self) -> ToolDefinition:
        return DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        return ToolPresentation("Update plan", ToolKind.THINK)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        parse_entries(arguments)
        return PermissionNeed(Effect.READ_ONLY, "plan")

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        entries = parse_entries(arguments)
        done = sum(entry.status is PlanStatus.COMPLETED for entry in entries)
        current = [e.content for e in entries if e.status is PlanStatus.IN_PROGRESS]
        text = f"Plan updated: {done} of {len(entries)} done."
        if current:
            text += " In progress: " + "; ".join(current) + "."
        return ToolResult(
            content=(PlanContent(entries),),
            model_text=text,
            raw_output={
                "entries": [
                    {"content": e.content, "priority": e.priority.value, "status": e.status.value}
                    for e in entries
                ]
            },
        )
