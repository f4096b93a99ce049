"""One line for each event of a watched session: `watch --plain`, and the terminal view's summaries.

Everything comes from the session's messages as any ACP client gets them
(`session/update`, the server's `_acp-agent/*` notifications, a permission
request), as JSON: `update_line` makes one line of an update, `job_line`,
`resolved_line` and `left_line` of the server's notices, `question_line` of a
question; `branch_state` says where a branch (a child session) is. A line never
holds a newline (text is shown as a JSON string), so `--plain` output is one
line per event for logs, pipes and `grep`.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = (
    "branch_state",
    "content_summary",
    "diff_counts",
    "job_line",
    "left_line",
    "option_keys",
    "question_line",
    "quoted",
    "resolved_line",
    "update_line",
)

#: The label of each kind of update (the rest show their own kind).
_LABELS: Final = {
    "user_message_chunk": "you",
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
    "tool_call": "tool",
    "tool_call_update": "tool",
    "plan": "plan",
    "plan_update": "plan",
    "plan_removed": "plan",
    "available_commands_update": "commands",
    "current_mode_update": "mode",
    "config_option_update": "options",
    "session_info_update": "title",
    "usage_update": "usage",
    "notice": "notice",
    "compaction_update": "compaction",
    "subagent_update": "branch",
    "session_message": "message",
}


def quoted(text: str) -> str:
    """`text` as one line (a JSON string: newlines and quotes escaped)."""
    return json.dumps(text, ensure_ascii=False)


def update_line(update: dict[str, Any]) -> tuple[str, str]:
    """(label, text) of one `session/update`'s `update`."""
    kind = str(update.get("sessionUpdate"))
    label = _LABELS.get(kind, kind)
    if kind in ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk"):
        return label, _block(update.get("content"))
    if kind in ("tool_call", "tool_call_update"):
        return label, _tool(update)
    if kind == "plan":
        entries = update.get("entries") or []
        done = sum(1 for entry in entries if entry.get("status") == "completed")
        items = "; ".join(f"[{_mark(e.get('status'))}] {e.get('content', '')}" for e in entries)
        return label, f"{done}/{len(entries)} done: {items}" if entries else "emptied"
    if kind == "plan_update":
        count = len(update.get("items") or [])
        return label, f"{update.get('planId')} {count} item(s)"
    if kind == "available_commands_update":
        return label, f"{len(update.get('availableCommands') or [])} command(s)"
    if kind == "current_mode_update":
        return label, str(update.get("currentModeId"))
    if kind == "session_info_update":
        title = update.get("title")
        return label, quoted(title) if isinstance(title, str) else "(none)"
    if kind == "usage_update":
        return label, f"{update.get('used')}/{update.get('size')} tokens"
    if kind == "notice":
        return label, f"{update.get('severity', 'info')}: {quoted(str(update.get('title', '')))}"
    if kind == "subagent_update":
        parts = [str(update.get("sessionId"))]
        if isinstance(update.get("title"), str):
            parts.append(quoted(update["title"]))
        if isinstance(update.get("state"), dict):
            parts.append(branch_state(update["state"]))
        return label, " ".join(parts)
    if kind == "session_message":
        said = "".join(
            str(block.get("text", ""))
            for block in update.get("content") or []
            if isinstance(block, dict) and block.get("type") == "text"
        )
        sender, recipient = update.get("senderSessionId"), update.get("recipientSessionId")
        return label, f"{sender} -> {recipient} {quoted(said)}"
    rest = {k: v for k, v in update.items() if k not in ("sessionUpdate", "_meta")}
    return label, json.dumps(rest, ensure_ascii=False, separators=(",", ":"))[:400]


def branch_state(state: dict[str, Any]) -> str:
    """A child session's state in a word or two: `working`, `waiting for an answer`,
    `done`, or how its turn stopped."""
    name = state.get("state")
    if name == "requires_action":
        return "waiting for an answer"
    if name == "idle":
        stop = state.get("stopReason")
        return "done" if stop in ("end_turn", None) else str(stop).replace("_", " ")
    return "working" if name == "running" else str(name)


def _mark(status: object) -> str:
    return {"completed": "x", "in_progress": "~"}.get(str(status), " ")


def _block(block: object) -> str:
    if not isinstance(block, dict):
        return "(nothing)"
    if block.get("type") == "text":
        return quoted(str(block.get("text", "")))
    if block.get("type") == "resource_link":
        return f"link {block.get('uri')}"
    return f"({block.get('type')})"


def _tool(update: dict[str, Any]) -> str:
    """`<id> <status> [kind] "title" $ command | what its content holds`."""
    parts = [str(update.get("toolCallId"))]
    if update.get("status"):
        parts.append(str(update["status"]))
    if update.get("kind"):
        parts.append(f"[{update['kind']}]")
    if update.get("title"):
        parts.append(quoted(str(update["title"])))
    command = _command(update.get("rawInput"))
    if command is not None:
        parts.append(f"$ {command}")
    summary = content_summary(update.get("content"))
    if summary:
        parts.append(f"| {summary}")
    return " ".join(parts)


def _command(raw: object) -> str | None:
    if isinstance(raw, dict) and isinstance(raw.get("command"), str):
        return quoted(raw["command"])
    return None


def diff_counts(diff: dict[str, Any]) -> tuple[int, int]:
    """Lines added and removed by an ACP diff (whole-text old and new)."""
    import difflib

    old = (diff.get("oldText") or "").splitlines()
    new = (diff.get("newText") or "").splitlines()
    added = removed = 0
    for line in difflib.unified_diff(old, new, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def content_summary(content: object) -> str:
    """A tool call's content in a line: each diff's path and counts, terminals, the last
    line of its text that is not a code fence's (a command's last output line)."""
    if not isinstance(content, list):
        return ""
    said: list[str] = []
    for item in content:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "diff":
            added, removed = diff_counts(item)
            said.append(f"diff {item.get('path')} +{added} -{removed}")
        elif item.get("type") == "terminal":
            said.append(f"terminal {item.get('terminalId')}")
        elif item.get("type") == "content":
            block = item.get("content") or {}
            text = str(block.get("text", "")) if isinstance(block, dict) else ""
            # Not a code fence's closing line: the last line that says something.
            lines = [line for line in text.splitlines() if line.strip().strip("`")]
            if lines:
                said.append(quoted(lines[-1][:200]))
    return "; ".join(said)


def option_keys(options: list[dict[str, Any]]) -> str:
    """`1=Allow (allow_once) 2=...`: what the person types to choose."""
    return " ".join(
        f"{i}={option.get('name')} ({option.get('kind')})" for i, option in enumerate(options, 1)
    )


def question_line(request: dict[str, Any]) -> str:
    """A permission question in a line: the call, its command or diff, the choices."""
    call = request.get("toolCall") or {}
    return f"{_tool(call)} ? {option_keys(request.get('options') or [])}"


def resolved_line(params: dict[str, Any]) -> str:
    outcome = params.get("outcome") or {}
    chosen = outcome.get("optionId") or outcome.get("outcome")
    return f"{params.get('toolCallId')} answered {chosen} by {params.get('resolvedBy')}"


def left_line(params: dict[str, Any]) -> str:
    return f"{params.get('clientId')} ({params.get('role')}) left: {params.get('reason')}"


def job_line(params: dict[str, Any]) -> str:
    """`<job id> <state> "command"`, how it ended and its last output line."""
    parts = [str(params.get("jobId")), str(params.get("state")), quoted(str(params.get("command")))]
    if params.get("state") != "running":
        parts = parts[:2]
        if params.get("exitCode") is not None:
            parts.append(f"code {params['exitCode']}")
        if params.get("signal"):
            parts.append(f"signal {params['signal']}")
        if params.get("durationS") is not None:
            parts.append(f"after {float(params['durationS']):.1f} s")
        tail = [line for line in str(params.get("output") or "").splitlines() if line.strip()]
        if tail:
            parts.append(f"| {quoted(tail[-1][:200])}")
    return " ".join(parts)
