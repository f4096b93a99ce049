"""The `read` tool: a text file's lines, numbered, through the editor when it can.

Through `fs/read_text_file` when the client offers it (so unsaved buffers
are what the model sees), else from disk; see `_textfile` for which channel a
file takes. Binary files are refused. The whole file is read, so the branch
records a stamp of it (`ReadStamps`), which later edits compare against;
then `offset`/`limit` pick the lines shown, each line and the whole output
capped, and whatever is truncated is stated in the model text.

`raw_output`: ``{"path", "start_line", "end_line", "total_lines", "truncated",
"encoding", "line_ending", "via"}``; refusals ``{"error", "message"}``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from acp_agent.toolkit import (
    Effect,
    Location,
    PermissionNeed,
    TextContent,
    ToolContext,
    ToolDefinition,
    ToolKind,
    ToolPresentation,
    ToolResult,
    fenced,
)
from acp_agent.tools._args import optional_int
from acp_agent.tools._common import refusal_result
from acp_agent.tools._textfile import FileRefusal, line_ending, load_snapshot
from acp_agent.tools._workspace import WorkspacePath, path_need, present_path, resolve_path
from acp_agent.values import Value

__all__ = (
    "DEFAULT_LINE_LIMIT",
    "DEFINITION",
    "MAX_LINE_CHARS",
    "MAX_OUTPUT_CHARS",
    "ReadTool",
    "line_count",
    "lines_from",
)

DEFAULT_LINE_LIMIT: Final = 2000
#: Longer lines are truncated (the rest counted).
MAX_LINE_CHARS: Final = 2000
#: The numbered text the model gets stops before this many characters.
MAX_OUTPUT_CHARS: Final = 100_000

_DESCRIPTION = """\
Read a text file. Returns its lines numbered from 1 (`number<TAB>line`); the numbers \
are not part of the file. Sees the editor's unsaved changes when the editor offers them. \
Shows at most 2000 lines from `offset` (default 1) unless `limit` says otherwise; lines \
longer than 2000 characters and output beyond 100,000 characters are cut, and the \
result says so and where to read on. Read a file before you edit or overwrite it. \
Binary files are refused."""


def line_count(text: str) -> int:
    """How many lines the file has (a final newline does not start a new line)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def lines_from(text: str, first: int) -> Iterator[str]:
    """The file's lines from line `first` (1-based) on, without their endings, one at a
    time: a big file is never split whole (its lines as strings cost about twice it)."""
    start = 0
    for _ in range(first - 1):
        start = text.find("\n", start) + 1
        if not start:
            return
    while start < len(text):
        newline = text.find("\n", start)
        end = len(text) if newline < 0 else newline
        yield text[start:end].removesuffix("\r")
        start = end + 1


DEFINITION: Final = ToolDefinition(
    name="read",
    description=_DESCRIPTION,
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "The file: relative to the working directory, or absolute.",
            },
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to show, 1-based (default 1).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"How many lines to show (default {DEFAULT_LINE_LIMIT}).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    kind=ToolKind.READ,
)


@attrs.frozen
class ReadTool(Value):
    """Reads text files (editor buffers first), numbering lines and recording a read stamp."""

    @property
    def definition(self) -> ToolDefinition:
        return DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        offset, limit = arguments.get("offset"), arguments.get("limit")
        suffix = ""
        if isinstance(offset, int) or isinstance(limit, int):
            start = offset if isinstance(offset, int) else 1
            suffix = f":{start}-{start + limit - 1}" if isinstance(limit, int) else f":{start}"
        line = offset if isinstance(offset, int) and offset >= 1 else 1
        name, locations = present_path(arguments.get("path"), roots, line=line)
        return ToolPresentation(f"Read {name}{suffix}", ToolKind.READ, locations)

    def _target(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> WorkspacePath:
        return resolve_path(arguments.get("path"), roots)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        target = self._target(arguments, roots)
        optional_int(arguments, "offset", minimum=1)
        optional_int(arguments, "limit", minimum=1)
        return path_need(Effect.READ_ONLY, target)

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        target = self._target(arguments, context.roots)
        offset = optional_int(arguments, "offset", default=1, minimum=1)
        limit = optional_int(arguments, "limit", default=DEFAULT_LINE_LIMIT, minimum=1)
        assert offset is not None
        assert limit is not None
        try:
            snapshot = await load_snapshot(target.path, context.client)
        except FileRefusal as refusal:
            return refusal_result(refusal, path=str(target.path))
        if snapshot.text is None:
            return refusal_result(
                FileRefusal("not_found", f"{target.display} does not exist"),
                path=str(target.path),
            )
        assert snapshot.stamp is not None
        context.read_stamps.record(str(target.path), snapshot.stamp)
        total = line_count(snapshot.text)
        path = str(target.path)
        raw: dict[str, Any] = {
            "path": path,
            "total_lines": total,
            "encoding": snapshot.codec.label,
            "line_ending": line_ending(snapshot.text),
            "via": snapshot.via,
        }
        if total == 0:
            text = f"{target.display} is empty."
            raw.update(start_line=0, end_line=0, truncated=False)
            return ToolResult(
                (TextContent(text),), text, raw_output=raw, locations=(Location(path, 1),)
            )
        if offset > total:
            text = f"{target.display} has {total} lines; offset {offset} is past the end."
            raw.update(start_line=offset, end_line=offset - 1, truncated=False)
            return ToolResult(
                (TextContent(text),), text, raw_output=raw, locations=(Location(path, total),)
            )

        numbered: list[str] = []
        shown: list[str] = []
        used = 0
        truncated_lines = 0
        capped = False
        end = offset - 1
        numbers = range(offset, min(total, offset + limit - 1) + 1)
        for number, line in zip(numbers, lines_from(snapshot.text, offset), strict=False):
            if len(line) > MAX_LINE_CHARS:
                line = (
                    f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line) - MAX_LINE_CHARS} "
                    "more characters]"
                )
                truncated_lines += 1
            entry = f"{number:>6}\t{line}"
            if numbered and used + len(entry) + 1 > MAX_OUTPUT_CHARS:
                capped = True
                break
            numbered.append(entry)
            shown.append(line)
            used += len(entry) + 1
            end = number
        notes: list[str] = []
        if capped:
            notes.append(
                f"Output capped at {MAX_OUTPUT_CHARS} characters: showing lines {offset}-{end} "
                f"of {total}. Read on with offset={end + 1}."
            )
        elif end < total:
            notes.append(f"Showing lines {offset}-{end} of {total}. Read on with offset={end + 1}.")
        if truncated_lines:
            notes.append(
                f"{truncated_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut."
            )
        model_text = "\n".join(numbered)
        if notes:
            model_text += "\n\n[" + " ".join(notes) + "]"
        raw.update(start_line=offset, end_line=end, truncated=bool(notes))
        return ToolResult(
            content=(TextContent(fenced("\n".join(shown))),),
            model_text=model_text,
            raw_output=raw,
            locations=(Location(path, offset),),
        )
