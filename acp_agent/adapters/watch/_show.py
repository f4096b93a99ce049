"""How `acp-agent watch` shows a session: one line per event (`--plain`), or a terminal view.

Both take the same calls (`Shower`): an update with its cursor, an update of
a branch (a child session: watch takes subagents), a job's start or end, a
question (asked of this client, or shown to it: another client answers), its
resolution, a client leaving, and watch's own notes. A question, its answer or
its withdrawal on a branch's session is shown as that branch's.

- `PlainShower`: `<cursor> <label> <text>`, one line per event (`_lines`),
  nothing but text: for logs, pipes and tests. A branch's own updates carry
  no cursor of the session's and are labelled with its title:
  `- [lint] tool ...`, `- [lint] question ...`.
- `TerminalShower`: for a person: replies and thoughts stream as they come,
  tool calls a line each with their state, each branch's steps, words and
  report a line each under its title (a branch's words are shown once its
  message ends, so two branches never interleave mid-line), diffs shown with
  colour (those of questions in full), every line cut to the terminal's width
  (80 columns when it cannot tell); not the commands, nor the context's usage
  counted after every reply; a question shown to an observer without its
  choices. Plain ANSI escapes, no terminal library:
  it scrolls like a log, works over SSH and in any terminal, and starts in
  the time Python does.
"""

from __future__ import annotations

import difflib
import shutil
import sys
from typing import Any, Final, Protocol, TextIO

from acp_agent.adapters.watch._lines import (
    branch_state,
    content_summary,
    job_line,
    left_line,
    option_keys,
    question_line,
    resolved_line,
    update_line,
)

__all__ = ("PlainShower", "Shower", "TerminalShower")

#: The most lines of a diff the terminal view shows (a question's: twice as many).
_DIFF_LINES: Final = 20


class Shower(Protocol):
    """Where a watched session's events go."""

    def update(self, cursor: str | None, update: dict[str, Any]) -> None: ...

    def child(self, child_id: str, update: dict[str, Any]) -> None:
        """An update of a branch's own session (announced on the parent before)."""
        ...

    def job(self, cursor: str | None, params: dict[str, Any]) -> None: ...

    def question(self, request: dict[str, Any], *, answerable: bool) -> None:
        """A permission question (the request's params): asked of this client
        (`answerable`), or shown to it while another client answers it."""
        ...

    def resolved(self, params: dict[str, Any]) -> None: ...

    def withdrawn(self, session_id: str, call_id: str) -> None: ...

    def left(self, params: dict[str, Any]) -> None: ...

    def note(self, text: str) -> None: ...


class PlainShower:
    """One line per event (see the module docstring)."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self._out = out
        self._branches = _Branches()

    def _line(self, cursor: str | None, label: str, text: str) -> None:
        self._out.write(f"{cursor or '-'} {label} {text}\n")
        self._out.flush()

    def update(self, cursor: str | None, update: dict[str, Any]) -> None:
        self._branches.note(update)
        self._line(cursor, *update_line(update))

    def child(self, child_id: str, update: dict[str, Any]) -> None:
        label, text = update_line(update)
        name = self._branches.name(child_id).replace(" ", "_")
        self._line(None, f"[{name}]", f"{label} {text}")

    def job(self, cursor: str | None, params: dict[str, Any]) -> None:
        self._line(cursor, "job", job_line(params))

    def _label(self, session_id: object, label: str) -> str:
        """`label`, as a branch's when `session_id` is a branch's."""
        if session_id not in self._branches:
            return label
        return f"[{self._branches.name(session_id).replace(' ', '_')}] {label}"

    def question(self, request: dict[str, Any], *, answerable: bool) -> None:
        self._line(None, self._label(request.get("sessionId"), "question"), question_line(request))

    def resolved(self, params: dict[str, Any]) -> None:
        label = self._label(params.get("sessionId"), "resolved")
        self._line(None, label, resolved_line(params))

    def withdrawn(self, session_id: str, call_id: str) -> None:
        self._line(None, self._label(session_id, "withdrawn"), call_id)

    def left(self, params: dict[str, Any]) -> None:
        self._line(None, "left", left_line(params))

    def note(self, text: str) -> None:
        self._line(None, "#", text)


_RESET: Final = "\x1b[0m"
_DIM: Final = "\x1b[2m"
_BOLD: Final = "\x1b[1m"
_RED: Final = "\x1b[31m"
_GREEN: Final = "\x1b[32m"
_YELLOW: Final = "\x1b[33m"
_CYAN: Final = "\x1b[36m"
_STATUS: Final = {"completed": _GREEN, "failed": _RED, "in_progress": _YELLOW}


class _Branches:
    """The branches announced on the watched session (`subagent_update`): their titles."""

    def __init__(self) -> None:
        self._titles: dict[str, str] = {}

    def note(self, update: dict[str, Any]) -> None:
        if update.get("sessionUpdate") == "subagent_update":
            child_id = str(update.get("sessionId"))
            title = update.get("title")
            if isinstance(title, str) and title:
                self._titles[child_id] = title
            else:
                self._titles.setdefault(child_id, child_id)

    def name(self, session_id: object) -> str:
        return self._titles.get(str(session_id), str(session_id))

    def __contains__(self, session_id: object) -> bool:
        return str(session_id) in self._titles


class TerminalShower:
    """The terminal view (see the module docstring)."""

    def __init__(self, out: TextIO = sys.stdout, *, color: bool = True) -> None:
        self._out = out
        self._color = color
        self._streaming: str | None = None
        self._titles: dict[str, str] = {}
        self._branches = _Branches()
        #: Each branch's words not shown yet (its message goes on).
        self._said: dict[str, str] = {}
        #: The title of each question shown, by its session and tool call id.
        self._asked: dict[tuple[str, str], str] = {}

    def _paint(self, code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if self._color else text

    def _width(self) -> int:
        return max(40, shutil.get_terminal_size((80, 24)).columns)

    def _end_stream(self) -> None:
        if self._streaming is not None:
            self._out.write("\n")
            self._streaming = None

    def _line(self, text: str, code: str = "") -> None:
        self._end_stream()
        width = self._width()
        shown = text if len(text) <= width else text[: width - 1] + "…"
        self._out.write((self._paint(code, shown) if code else shown) + "\n")
        self._out.flush()

    def _stream(self, kind: str, text: str) -> None:
        if self._streaming != kind:
            self._end_stream()
            label = {"agent_message_chunk": "agent", "agent_thought_chunk": "thinking"}.get(
                kind, "you"
            )
            self._out.write(self._paint(_BOLD, f"{label}: "))
            self._streaming = kind
        self._out.write(self._paint(_DIM, text) if kind == "agent_thought_chunk" else text)
        self._out.flush()

    def update(self, cursor: str | None, update: dict[str, Any]) -> None:
        kind = str(update.get("sessionUpdate"))
        content = update.get("content")
        if kind.endswith("_chunk") and isinstance(content, dict) and content.get("type") == "text":
            self._stream(kind, str(content.get("text", "")))
            return
        if kind in ("tool_call", "tool_call_update"):
            self._tool(update)
            return
        if kind in ("available_commands_update", "usage_update"):
            return  # the editor's business, and a count after every reply: not for reading
        if kind == "subagent_update":
            self._branch(update)
            return
        if kind == "session_message":
            self._message(update)
            return
        label, text = update_line(update)
        self._line(f"{label}: {text}", _DIM)

    def _branch(self, update: dict[str, Any]) -> None:
        child_id = str(update.get("sessionId"))
        new = child_id not in self._branches
        self._branches.note(update)
        name = self._branches.name(child_id)
        state = update.get("state")
        if isinstance(state, dict):
            said = branch_state(state)
            if said != "working":
                self._flush(child_id)
            code = {"done": _GREEN, "working": _YELLOW}.get(said, _RED)
            if state.get("state") == "requires_action":
                code = _BOLD + _YELLOW
            self._line(f"↳ [{name}] {said}", code)
        elif new:
            self._line(f"↳ [{name}] started", _YELLOW)

    def _message(self, update: dict[str, Any]) -> None:
        """A message between the main line and a branch: its task, a report."""
        text = " ".join(
            str(block.get("text", "")).strip()
            for block in update.get("content") or []
            if isinstance(block, dict) and block.get("type") == "text"
        )
        sender, recipient = update.get("senderSessionId"), update.get("recipientSessionId")
        if sender in self._branches:
            self._said.pop(str(sender), None)  # its last words are the report
            self._line(f"↳ [{self._branches.name(sender)}] reports: {text}", _BOLD)
        else:
            self._line(f"↳ [{self._branches.name(recipient)}] task: {text}", _DIM)

    def child(self, child_id: str, update: dict[str, Any]) -> None:
        kind = str(update.get("sessionUpdate"))
        content = update.get("content")
        if kind == "agent_message_chunk" and isinstance(content, dict):
            if content.get("type") == "text":
                self._said[child_id] = self._said.get(child_id, "") + str(content.get("text", ""))
            return
        if kind in ("tool_call", "tool_call_update"):
            self._flush(child_id)
            self._tool(update, branch=self._branches.name(child_id))
        # Its thoughts, and its task and reports (shown on the main line), are not repeated.

    def _flush(self, child_id: str) -> None:
        """The branch's words so far, as a line of their own."""
        said = " ".join(self._said.pop(child_id, "").split())
        if said:
            self._line(f"  [{self._branches.name(child_id)}] {said}")

    def _tool(self, update: dict[str, Any], *, branch: str | None = None) -> None:
        call_id = str(update.get("toolCallId"))
        if branch is not None:
            call_id = f"{branch}/{call_id}"
        if update.get("title"):
            self._titles[call_id] = str(update["title"])
        status = str(update.get("status") or "")
        title = self._titles.get(call_id, call_id)
        raw = update.get("rawInput")
        command = raw.get("command") if isinstance(raw, dict) else None
        head = "▸ " if branch is None else f"  [{branch}] ▸ "
        head += title + (f"  $ {command}" if isinstance(command, str) else "")
        summary = content_summary(update.get("content"))
        self._line(
            head + (f"  {status}" if status else "") + (f"  {summary}" if summary else ""),
            _STATUS.get(status, _CYAN),
        )
        if status == "completed":
            self._diffs(update.get("content"), _DIFF_LINES)

    def _diffs(self, content: object, most: int) -> None:
        if not isinstance(content, list):
            return
        for item in content:
            if isinstance(item, dict) and item.get("type") == "diff":
                old = (item.get("oldText") or "").splitlines()
                new = (item.get("newText") or "").splitlines()
                path = str(item.get("path"))
                lines = list(difflib.unified_diff(old, new, path, path, lineterm=""))
                for line in lines[:most]:
                    code = _GREEN if line.startswith("+") else _RED if line.startswith("-") else ""
                    self._line("    " + line, code)
                if len(lines) > most:
                    self._line(f"    … {len(lines) - most} more line(s)", _DIM)

    def job(self, cursor: str | None, params: dict[str, Any]) -> None:
        self._line(f"⚙ job {job_line(params)}", _CYAN)

    def _whose(self, session_id: object) -> str:
        """`[title] ` for a branch's session, nothing for the watched session's."""
        return f"[{self._branches.name(session_id)}] " if session_id in self._branches else ""

    def _question_title(self, session_id: object, call_id: object) -> str:
        branch = self._branches.name(session_id) if session_id in self._branches else None
        known = self._titles.get(str(call_id) if branch is None else f"{branch}/{call_id}")
        return self._asked.get((str(session_id), str(call_id))) or known or str(call_id)

    def question(self, request: dict[str, Any], *, answerable: bool) -> None:
        call = request.get("toolCall") or {}
        session_id, call_id = request.get("sessionId"), call.get("toolCallId")
        title = call.get("title") or self._question_title(session_id, call_id)
        self._asked[(str(session_id), str(call_id))] = title
        whose = self._whose(session_id)
        # Shown, not asked: what it is about, not the choices.
        tail = "" if answerable else "  (a controller answers it)"
        self._line(f"? {whose}permission: {title}{tail}", _BOLD + _YELLOW)
        raw = call.get("rawInput")
        if isinstance(raw, dict) and isinstance(raw.get("command"), str):
            self._line(f"    $ {raw['command']}")
        self._diffs(call.get("content"), 2 * _DIFF_LINES if answerable else _DIFF_LINES)
        if answerable:
            self._line(f"    {option_keys(request.get('options') or [])}")
            self._line("    answer with its number, y (allow) or n (reject)", _DIM)

    def resolved(self, params: dict[str, Any]) -> None:
        session_id = params.get("sessionId")
        title = self._question_title(session_id, params.get("toolCallId"))
        outcome = params.get("outcome") or {}
        chosen = outcome.get("optionId") or outcome.get("outcome")
        by = params.get("resolvedBy")
        self._line(f"✓ {self._whose(session_id)}{title}: answered {chosen} by {by}", _DIM)

    def withdrawn(self, session_id: str, call_id: str) -> None:
        title = self._question_title(session_id, call_id)
        self._line(f"✗ {self._whose(session_id)}{title}: answered elsewhere", _DIM)

    def left(self, params: dict[str, Any]) -> None:
        self._line(f"… {left_line(params)}", _DIM)

    def note(self, text: str) -> None:
        self._line(f"# {text}", _DIM)
