"""A session's updates as a transcript a person reads: messages, tool calls, plans.

`Transcript` folds `session/update`s (as the agent wrote them) into entries in the
order they began: consecutive chunks of one message become one message, a tool
call's updates amend its entry, a plan shows as it last stood at that point.
`markdown()` renders it (what `sessions show` prints and `export --format markdown`
writes); diffs are unified diffs, long outputs are truncated with a note. What the
messages, calls and plans hold is read as content parts (`acp_content`); a piece
that does not fit ACP's schema shows as its kind, or not at all.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Final

from acp_agent.adapters.acp_content import part_from_json, plan_from_json, tool_part_from_json
from acp_agent.content import (
    ContentPart,
    DiffContent,
    ImageContent,
    PlanStatus,
    ResourceLinkContent,
    TerminalContent,
    TextContent,
)

__all__ = ("Transcript",)

#: Characters of one tool output or thought shown before it is truncated.
MAX_SHOWN_CHARS: Final = 4000

_MARKS: Final = {PlanStatus.COMPLETED: "x", PlanStatus.IN_PROGRESS: "~"}

_MESSAGE_KINDS: Final = {
    "user_message_chunk": "You",
    "agent_message_chunk": "Agent",
    "agent_thought_chunk": "Thinking",
}


class Transcript:
    """The conversation of one session, built from its updates in order."""

    def __init__(self) -> None:
        self._entries: list[dict[str, Any]] = []
        self._calls: dict[str, dict[str, Any]] = {}

    def add(self, update: dict[str, Any]) -> None:
        """Fold one update in; kinds that are not conversation (commands, usage) are skipped."""
        kind = update.get("sessionUpdate")
        if kind in _MESSAGE_KINDS:
            self._chunk(str(kind), update)
        elif kind == "tool_call":
            self._tool_call(update)
        elif kind == "tool_call_update":
            call = self._calls.get(str(update.get("toolCallId")))
            if call is None:
                self._tool_call(update)
            else:
                call.update(
                    {k: v for k, v in update.items() if v is not None and k != "sessionUpdate"}
                )
        elif kind == "plan":
            last = self._entries[-1] if self._entries else None
            if last is not None and last.get("sessionUpdate") == "plan":
                last.update(update)
            else:
                self._entries.append(dict(update))

    def final_message(self) -> str:
        """The text of the agent's last message (what `exec` prints)."""
        for entry in reversed(self._entries):
            if entry.get("sessionUpdate") == "agent_message_chunk":
                return str(entry["text"])
        return ""

    def markdown(self) -> str:
        """The whole transcript as Markdown."""
        return "\n\n".join(part for part in map(_render, self._entries) if part) + "\n"

    def _chunk(self, kind: str, update: dict[str, Any]) -> None:
        content = update.get("content") or {}
        part = part_from_json(content)
        text = part.text if isinstance(part, TextContent) else _placeholder(part, content)
        message_id = update.get("messageId")
        last = self._entries[-1] if self._entries else None
        if (
            last is not None
            and last.get("sessionUpdate") == kind
            and last.get("messageId") == message_id
        ):
            last["text"] += text or ""
            return
        self._entries.append({"sessionUpdate": kind, "messageId": message_id, "text": text or ""})

    def _tool_call(self, update: dict[str, Any]) -> None:
        entry = {k: v for k, v in update.items() if v is not None}
        entry["sessionUpdate"] = "tool_call"
        self._calls[str(update.get("toolCallId"))] = entry
        self._entries.append(entry)


def _placeholder(part: ContentPart | None, content: Any) -> str:
    """What stands for a part that is not text (an image, a resource link)."""
    if part is not None:
        kind = part.KIND
    else:  # not ACP: named by the kind it claims
        kind = str(content.get("type", "content")) if isinstance(content, dict) else "content"
    name = ""
    if isinstance(part, ImageContent):
        name = part.uri or part.mime_type
    elif isinstance(part, ResourceLinkContent):
        name = part.uri
    return f"[{kind}{': ' + name if name else ''}]"


def _render(entry: dict[str, Any]) -> str:
    kind = entry.get("sessionUpdate")
    if kind in _MESSAGE_KINDS:
        text = str(entry.get("text", "")).strip()
        if not text:
            return ""
        if kind == "agent_thought_chunk":
            return "\n".join(f"> {line}" for line in _truncated(text).splitlines()) or "> "
        return f"### {_MESSAGE_KINDS[str(kind)]}\n\n{text}"
    if kind == "tool_call":
        return _render_call(entry)
    if kind == "plan":
        lines = ["**Plan**", ""]
        for step in plan_from_json(entry.get("entries") or ()).entries:
            lines.append(f"- [{_MARKS.get(step.status, ' ')}] {step.content}")
        return "\n".join(lines)
    return ""


def _render_call(call: dict[str, Any]) -> str:
    title = call.get("title") or call.get("toolCallId")
    lines = [f"**Tool call:** {title} ({call.get('status', 'pending')})"]
    for item in call.get("content") or ():
        part = tool_part_from_json(item)
        if isinstance(part, DiffContent):
            lines.append(_diff_block(part))
        elif isinstance(part, TerminalContent):
            lines.append(f"(terminal {part.terminal_id})")
        elif isinstance(item, dict) and item.get("type") == "content":
            inner = item.get("content")
            text = part.text if isinstance(part, TextContent) else _placeholder(part, inner)
            if text:
                lines.append(_fence(_truncated(text)))
    return "\n\n".join(lines)


def _diff_block(diff: DiffContent) -> str:
    path, old, new = diff.path, diff.old_text, diff.new_text
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a{path}",
        tofile="/dev/null" if not new and old else f"b{path}",
    )
    body = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return _fence(_truncated(body.rstrip("\n")), "diff")


def _truncated(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return f"{text[:MAX_SHOWN_CHARS]}\n… (cut: {len(text) - MAX_SHOWN_CHARS} more characters)"


def _fence(text: str, language: str = "") -> str:
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"
