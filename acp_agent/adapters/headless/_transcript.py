"""A session's updates as a transcript a person reads: messages, tool calls, plans.

`Transcript` folds `session/update`s (as the agent wrote them) into entries in the
order they began: consecutive chunks of one message become one message, a tool
call's updates amend its entry, a plan shows as it last stood at that point.
`markdown()` renders it (what `sessions show` prints and `export --format markdown`
writes); diffs are unified diffs, long outputs are cut with a note.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Final

__all__ = ("Transcript",)

#: Characters of one tool output or thought shown before it is cut.
MAX_SHOWN_CHARS: Final = 4000

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
        text = content.get("text") if content.get("type") == "text" else _placeholder(content)
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


def _placeholder(content: dict[str, Any]) -> str:
    """What stands for a block that is not text (an image, a resource link)."""
    kind = content.get("type", "content")
    name = content.get("uri") or content.get("name") or content.get("mimeType") or ""
    return f"[{kind}{': ' + str(name) if name else ''}]"


def _render(entry: dict[str, Any]) -> str:
    kind = entry.get("sessionUpdate")
    if kind in _MESSAGE_KINDS:
        text = str(entry.get("text", "")).strip()
        if not text:
            return ""
        if kind == "agent_thought_chunk":
            return "\n".join(f"> {line}" for line in _cut(text).splitlines()) or "> "
        return f"### {_MESSAGE_KINDS[str(kind)]}\n\n{text}"
    if kind == "tool_call":
        return _render_call(entry)
    if kind == "plan":
        lines = ["**Plan**", ""]
        for step in entry.get("entries") or ():
            mark = {"completed": "x", "in_progress": "~"}.get(step.get("status"), " ")
            lines.append(f"- [{mark}] {step.get('content', '')}")
        return "\n".join(lines)
    return ""


def _render_call(call: dict[str, Any]) -> str:
    title = call.get("title") or call.get("toolCallId")
    lines = [f"**Tool call:** {title} ({call.get('status', 'pending')})"]
    for item in call.get("content") or ():
        if item.get("type") == "diff":
            lines.append(_diff_block(item))
        elif item.get("type") == "content":
            inner = item.get("content") or {}
            text = inner.get("text") if inner.get("type") == "text" else _placeholder(inner)
            if text:
                lines.append(_fence(_cut(str(text))))
        elif item.get("type") == "terminal":
            lines.append(f"(terminal {item.get('terminalId')})")
    return "\n\n".join(lines)


def _diff_block(item: dict[str, Any]) -> str:
    path = str(item.get("path", ""))
    old = item.get("oldText")
    new = str(item.get("newText") or "")
    diff = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a{path}",
        tofile="/dev/null" if not new and old else f"b{path}",
    )
    body = "".join(line if line.endswith("\n") else line + "\n" for line in diff)
    return _fence(_cut(body.rstrip("\n")), "diff")


def _cut(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return f"{text[:MAX_SHOWN_CHARS]}\n… (cut: {len(text) - MAX_SHOWN_CHARS} more characters)"


def _fence(text: str, language: str = "") -> str:
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"
