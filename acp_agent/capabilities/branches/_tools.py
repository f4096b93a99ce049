"""The main line's tools for its branches, and the person's `/branches` and `/branch`.

They live with the capabilities, not in `acp_agent.tools`, since they work
the runtime (`BranchManager`). Only the main line is offered the tools, and
each refuses to run on a branch: a branch never starts a branch.

=================  ===========================================================
`branch`           `task` (and `title`): start a child now; returns its id
`branch_status`    `branch_id` (optional): state, steps, report of one or all
`branch_message`   `branch_id`, `text`: a `<branch-message>` to the child
`branch_wait`      `branch_ids`, `all`, `timeout_s`: until one (or all) stops
`branch_close`     `branch_id`: end the child's line of work
=================  ===========================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from acp_agent.capabilities.branches._children import ChildBranch, ChildState
from acp_agent.capabilities.branches._manager import BranchLimitReached, BranchManager, NotABranch
from acp_agent.toolkit import (
    CommandSpec,
    ExtraCommand,
    RuntimeTool,
    ToolContext,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolResult,
    object_schema,
    text_result,
)

__all__ = ("BRANCH_TOOL_NAMES", "branch_commands", "branch_tools")

#: The most a `branch_wait` waits, whatever it asks for.
_MAX_WAIT_S: Final = 600.0
_DEFAULT_WAIT_S: Final = 60.0


def _describe(child: ChildBranch) -> dict[str, Any]:
    return {
        "branch_id": child.branch_id,
        "title": child.title,
        "state": child.state.value,
        "why": child.why_ended(),
        "steps": list(child.steps),
        "report": child.report,
    }


def _render(children: Sequence[ChildBranch]) -> str:
    if not children:
        return "No branches in this session."
    blocks = []
    for child in children:
        block = [child.summary()]
        block += [f"  {step}" for step in child.steps[-8:]]
        if child.report and not child.state.working:
            block.append(f"  Report: {child.report}")
        blocks.append("\n".join(block))
    return "\n\n".join(blocks)


def _str(arguments: Mapping[str, Any], name: str, *, required: bool = True) -> str | None:
    value = arguments.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"`{name}` must be a non-empty string")
    return value


def _not_on_a_branch(manager: BranchManager, context: ToolContext) -> str | None:
    if context.branch_id != manager.main.id:
        return "a branch cannot start or steer branches"
    return None


async def _start(manager: BranchManager, arguments: Mapping[str, Any]) -> ToolResult:
    task = _str(arguments, "task")
    assert task is not None
    child = await manager.start(task, _str(arguments, "title", required=False))
    text = (
        f"Started branch {child.branch_id} ({child.title!r}). It works on its own, alongside "
        "you; its report arrives as a notification when it is done (or use branch_wait)."
    )
    shown = (
        f"Started the branch {child.title!r} ({child.branch_id}). It works alongside the main "
        "line; what it does shows as it works."
    )
    return text_result(text, raw={"branch_id": child.branch_id, "title": child.title}, shown=shown)


async def _status(manager: BranchManager, arguments: Mapping[str, Any]) -> ToolResult:
    branch_id = _str(arguments, "branch_id", required=False)
    children = [manager.child(branch_id)] if branch_id else manager.children()
    return text_result(
        _render(children), raw={"branches": [_describe(child) for child in children]}
    )


async def _message(manager: BranchManager, arguments: Mapping[str, Any]) -> ToolResult:
    branch_id, text = _str(arguments, "branch_id"), _str(arguments, "text")
    assert branch_id is not None
    assert text is not None
    child = await manager.message(branch_id, text)
    return text_result(f"Sent to branch {child.branch_id} ({child.title!r}).")


async def _wait(manager: BranchManager, arguments: Mapping[str, Any]) -> ToolResult:
    ids = arguments.get("branch_ids") or []
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ToolInputError("`branch_ids` must be a list of branch ids")
    timeout = arguments.get("timeout_s", _DEFAULT_WAIT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
        raise ToolInputError("`timeout_s` must be a number of seconds")
    every = arguments.get("all", False) is True
    children = await manager.wait(ids, every=every, timeout_s=min(float(timeout), _MAX_WAIT_S))
    return text_result(
        _render(children), raw={"branches": [_describe(child) for child in children]}
    )


async def _close(manager: BranchManager, arguments: Mapping[str, Any]) -> ToolResult:
    branch_id = _str(arguments, "branch_id")
    assert branch_id is not None
    child = await manager.close(branch_id)
    return text_result(f"Closed branch {child.branch_id} ({child.title!r}).")


_ID: Final = {
    "type": "string",
    "description": "The branch's id, as `branch` returned it (or its title, if unique).",
}

_DEFINITIONS: Final = (
    (
        ToolDefinition(
            "branch",
            "Start a branch: another line of work in this session that works on `task` "
            "concurrently with you, with its own tools, from the conversation so far. "
            "Returns its id at once; its report arrives as a notification when it is done.",
            object_schema(
                {
                    "task": {"type": "string", "description": "What the branch is to do."},
                    "title": {"type": "string", "description": "A short name for it."},
                },
                ["task"],
            ),
            ToolKind.OTHER,
        ),
        lambda a: f"Start a branch: {a.get('title') or a.get('task') or ''}".strip(),
        _start,
    ),
    (
        ToolDefinition(
            "branch_status",
            "The state, steps and report of one branch, or of all of them.",
            object_schema({"branch_id": _ID}),
            ToolKind.OTHER,
        ),
        lambda a: f"Branch status {a.get('branch_id') or ''}".strip(),
        _status,
    ),
    (
        ToolDefinition(
            "branch_message",
            "Send a branch a message; an idle branch starts working on it.",
            object_schema({"branch_id": _ID, "text": {"type": "string"}}, ["branch_id", "text"]),
            ToolKind.OTHER,
        ),
        lambda a: f"Message branch {a.get('branch_id') or ''}".strip(),
        _message,
    ),
    (
        ToolDefinition(
            "branch_wait",
            "Wait until one (or, with `all`, every) of the branches named (default: all) "
            f"stops working, at most `timeout_s` seconds (default {_DEFAULT_WAIT_S:g}, "
            f"at most {_MAX_WAIT_S:g}); returns their states and reports.",
            object_schema(
                {
                    "branch_ids": {"type": "array", "items": {"type": "string"}},
                    "all": {"type": "boolean"},
                    "timeout_s": {"type": "number"},
                }
            ),
            ToolKind.OTHER,
        ),
        lambda a: "Wait for branches",
        _wait,
    ),
    (
        ToolDefinition(
            "branch_close",
            "End a branch's line of work (its current step is stopped); others go on.",
            object_schema({"branch_id": _ID}, ["branch_id"]),
            ToolKind.OTHER,
        ),
        lambda a: f"Close branch {a.get('branch_id') or ''}".strip(),
        _close,
    ),
)

#: The tools only the main line is offered.
BRANCH_TOOL_NAMES: Final = frozenset(definition.name for definition, _, _ in _DEFINITIONS)


def branch_tools(manager: BranchManager) -> list[RuntimeTool[BranchManager]]:
    """The tools, bound to a session's manager."""
    return [
        RuntimeTool(
            definition, title, act, manager, _not_on_a_branch, (BranchLimitReached, NotABranch)
        )
        for definition, title, act in _DEFINITIONS
    ]


def branch_commands(manager: BranchManager) -> dict[str, ExtraCommand]:
    """`/branches` (list them: state, title, last activity) and `/branch <task>` (start one)."""

    async def list_branches(arguments: str) -> str:
        children = manager.children()
        if not children:
            return "No branches in this session. Start one with `/branch <task>`."
        rows = ["Branches:", ""]
        for child in children:  # a list, not a table: it fits a narrow client
            state = child.state.value
            if child.state is ChildState.WAITING:
                state = "waiting for your approval (asked in your next prompt)"
            elif child.why_ended():
                state = f"{state}: {child.why_ended()}"
            rows.append(f"- {child.title}: {state}, last activity {child.last_active()}")
        return "\n".join(rows)

    async def start_branch(arguments: str) -> str:
        task = arguments.strip()
        if not task:
            return "Usage: `/branch <task>`: starts a branch working on the task."
        try:
            child = await manager.start(task)
        except BranchLimitReached as exc:
            return f"Not started: {exc}."
        return (
            f"Started branch `{child.branch_id}` ({child.title}). It works alongside the "
            "main line; its report reaches the main line when it is done (`/branches` "
            "shows where it is)."
        )

    return {
        "branches": ExtraCommand(
            CommandSpec("branches", "List the branches: state, title, last activity"),
            list_branches,
        ),
        "branch": ExtraCommand(
            CommandSpec("branch", "Start a branch: another line of work on a task", "task"),
            start_branch,
        ),
    }
