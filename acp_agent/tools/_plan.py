"""The `plan` tool: the model's plans, shown by the editor as the session's plans.

A plan is a checklist (`entries`), a Markdown document (`markdown`) or a file
of the workspace that holds it (`file`), named by `plan_id` (default `plan`:
most work needs one); `remove` takes one away. Every call carries the whole
plan (the editor replaces the plan of that id with each). The result's content
is one `PlanContent`, which the adapter sends as a plan update rather than as
tool-call content (`plan_update` / `plan_removed` to a client that advertised
plan operations, the legacy `plan` checklist to others: a document's or a
file's task list, `- [ ]` and `- [x]` lines, is its checklist there). The
`raw_output` is the checklist's entries, ``{"entries": [{"content",
"priority": "high"|"medium"|"low", "status":
"pending"|"in_progress"|"completed"}]}``, with `plan_id`, `kind`, `markdown`
or `path` when the plan is not the default checklist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import attrs

from acp_agent.toolkit import (
    DEFAULT_PLAN_ID,
    Effect,
    PermissionNeed,
    PlanContent,
    PlanEntry,
    PlanKind,
    PlanPriority,
    PlanStatus,
    ToolContext,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolPresentation,
    ToolResult,
)
from acp_agent.tools._workspace import resolve_path
from acp_agent.values import Value

__all__ = ("DEFINITION", "MAX_ENTRIES", "PlanTool", "parse_entries", "task_list")

MAX_ENTRIES: Final = 100
#: The most of a plan document (or a plan file) kept, in characters.
MAX_PLAN_CHARS: Final = 100_000
#: A Markdown task-list item: `- [ ] text`, `* [x] text`.
_TASK: Final = re.compile(r"^\s*[-*+]\s+\[([ xX])\]\s+(.+?)\s*$")

DEFINITION: Final = ToolDefinition(
    name="plan",
    description="""\
Keep your plan for multi-step work; the person sees it. A plan is a todo list \
(`entries`), a Markdown document (`markdown`), or a file of the workspace you keep it \
in (`file`, written with your edit tools first); give exactly one. Send the whole plan \
every time (entries left out disappear). Mark an entry in_progress when you start it \
(one at a time) and completed as soon as it is done; add entries as you discover work. \
Name a second plan with `plan_id` (the default is "plan"); `remove: true` takes one \
away. Skip it for a single simple step.""",
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
            },
            "markdown": {"type": "string", "description": "The plan as a Markdown document."},
            "file": {
                "type": "string",
                "description": "A file of the workspace that holds the plan (Markdown).",
            },
            "plan_id": {"type": "string", "description": 'Which plan; default "plan".'},
            "remove": {"type": "boolean", "description": "Take the plan `plan_id` away."},
        },
        "additionalProperties": False,
    },
    kind=ToolKind.THINK,
)

#: The arguments that say what the plan is; a call gives exactly one.
_FORMS: Final = ("entries", "markdown", "file", "remove")


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


def task_list(markdown: str) -> tuple[PlanEntry, ...]:
    """The task-list items of a Markdown plan (`- [ ]` pending, `- [x]` completed), as the
    checklist an editor that shows only checklists gets."""
    entries = []
    for line in markdown.splitlines():
        match = _TASK.match(line)
        if match is not None:
            status = PlanStatus.PENDING if match[1] == " " else PlanStatus.COMPLETED
            entries.append(PlanEntry(match[2], PlanPriority.MEDIUM, status))
    return tuple(entries[:MAX_ENTRIES])


def _form(arguments: Mapping[str, Any]) -> str:
    """Which form of plan a call gives; `ToolInputError` unless exactly one."""
    given = [name for name in _FORMS if arguments.get(name) not in (None, False)]
    if len(given) != 1:
        raise ToolInputError(
            "give exactly one of `entries`, `markdown`, `file` or `remove: true`"
            + (f" (got {', '.join(given)})" if given else "")
        )
    return given[0]


def _plan_id(arguments: Mapping[str, Any]) -> str:
    plan_id = arguments.get("plan_id", DEFAULT_PLAN_ID)
    if not isinstance(plan_id, str) or not plan_id.strip():
        raise ToolInputError("`plan_id` must be a non-empty string")
    return plan_id.strip()


def _check(arguments: Mapping[str, Any], roots: Sequence[Path]) -> str:
    """The call's form, its arguments checked; `ToolInputError` naming the first bad one."""
    form = _form(arguments)
    _plan_id(arguments)
    if form == "entries":
        parse_entries(arguments)
    elif form == "markdown":
        markdown = arguments["markdown"]
        if not isinstance(markdown, str) or not markdown.strip():
            raise ToolInputError("`markdown` must be a non-empty string")
    elif form == "file":
        target = resolve_path(arguments["file"], roots, name="file")
        if not target.inside:
            raise ToolInputError(f"`file` must be a file of the workspace: {target.outside_note()}")
    elif arguments["remove"] is not True:
        raise ToolInputError("`remove` takes true")
    return form


@attrs.frozen
class PlanTool(Value):
    """Sets (or removes) one of the session's plans, whole."""

    @property
    def definition(self) -> ToolDefinition:
        return DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        return ToolPresentation("Update plan", ToolKind.THINK)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        _check(arguments, roots)
        return PermissionNeed(Effect.READ_ONLY, "plan")

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        form = _check(arguments, context.roots)
        plan_id = _plan_id(arguments)
        named = "" if plan_id == DEFAULT_PLAN_ID else f" {plan_id!r}"
        raw: dict[str, Any] = {} if plan_id == DEFAULT_PLAN_ID else {"plan_id": plan_id}
        if form == "entries":
            entries = parse_entries(arguments)
            plan = PlanContent(entries, plan_id)
            text = _progress(f"Plan{named} updated", entries)
        elif form == "markdown":
            markdown = str(arguments["markdown"]).strip()[:MAX_PLAN_CHARS]
            entries = task_list(markdown)
            plan = PlanContent(entries, plan_id, PlanKind.MARKDOWN, markdown=markdown)
            text = _progress(f"Plan{named} updated (a document)", entries)
            raw |= {"kind": "markdown", "markdown": markdown}
        elif form == "file":
            target = resolve_path(arguments["file"], context.roots, name="file")
            try:
                held = await anyio.Path(target.path).read_text(errors="replace")
            except OSError as exc:
                raise ToolInputError(f"{target.display} cannot be read: {exc.strerror}") from exc
            entries = task_list(held[:MAX_PLAN_CHARS])
            plan = PlanContent(entries, plan_id, PlanKind.FILE, uri=target.path.as_uri())
            text = _progress(f"Plan{named} is kept in {target.display}", entries)
            raw |= {"kind": "file", "path": str(target.path)}
        else:
            entries = ()
            plan = PlanContent((), plan_id, PlanKind.REMOVED)
            text = f"Plan{named} removed."
            raw |= {"kind": "removed"}
        return ToolResult(
            content=(plan,),
            model_text=text,
            raw_output={
                "entries": [
                    {"content": e.content, "priority": e.priority.value, "status": e.status.value}
                    for e in entries
                ],
                **raw,
            },
        )


def _progress(said: str, entries: Sequence[PlanEntry]) -> str:
    """What the model reads back: how far the checklist is, and what is in progress."""
    if not entries:
        return f"{said}."
    done = sum(entry.status is PlanStatus.COMPLETED for entry in entries)
    current = [e.content for e in entries if e.status is PlanStatus.IN_PROGRESS]
    text = f"{said}: {done} of {len(entries)} done."
    if current:
        text += " In progress: " + "; ".join(current) + "."
    return text
