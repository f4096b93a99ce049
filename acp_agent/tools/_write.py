"""The `write` tool: create a file, or replace one this branch has read.

A new file is written as UTF-8 (parent directories created). Replacing an
existing file needs a read of it in this branch, unchanged since
(`file_not_read`, `file_modified_since_read`); the file keeps its encoding,
BOM and CRLF line endings. Written through `fs/write_text_file` when the
client offers it (plain UTF-8 files), else atomically on disk. The call
shows a diff of the whole file (old text None for a new file).

`raw_output`: ``{"path", "created", "bytes", "lines", "via", "encoding"}``;
refusals ``{"error", "message", "path"}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from acp_agent.toolkit import (
    DiffContent,
    Effect,
    Location,
    PermissionNeed,
    ToolContext,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolPresentation,
    ToolPreview,
    ToolResult,
)
from acp_agent.tools._args import require_str
from acp_agent.tools._common import refusal_result
from acp_agent.tools._textfile import (
    FileRefusal,
    FileSnapshot,
    first_changed_line,
    line_ending,
    load_snapshot,
    path_lock,
    require_fresh_read,
    store_text,
)
from acp_agent.tools._workspace import WorkspacePath, path_need, present_path, resolve_path
from acp_agent.values import Value

__all__ = ("DEFINITION", "WriteTool", "match_line_endings")

_DESCRIPTION = """\
Write a whole file: create a new file (parent directories are created), or replace an \
existing one you have read in this conversation (it must not have changed since; read \
it again if it has). An existing file keeps its encoding and line endings. For changes \
to part of a file prefer `edit`."""


def match_line_endings(old_text: str, new_text: str) -> str:
    """`new_text` with CRLF line endings when `old_text` used CRLF throughout."""
    if line_ending(old_text) != "crlf":
        return new_text
    return new_text.replace("\r\n", "\n").replace("\n", "\r\n")


DEFINITION: Final = ToolDefinition(
    name="write",
    description=_DESCRIPTION,
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "The file: relative to the working directory, or absolute.",
            },
            "content": {"type": "string", "description": "The complete new content."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    kind=ToolKind.EDIT,
)


@attrs.frozen
class WriteTool(Value):
    """Creates files, or replaces files the branch has read."""

    @property
    def definition(self) -> ToolDefinition:
        return DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        name, locations = present_path(arguments.get("path"), roots)
        return ToolPresentation(f"Write {name}", ToolKind.EDIT, locations)

    def _target(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> WorkspacePath:
        target = resolve_path(arguments.get("path"), roots)
        require_str(arguments, "content", allow_empty=True)
        return target

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        target = self._target(arguments, roots)
        return path_need(Effect.EDIT, target)

    async def _change(
        self, target: WorkspacePath, content: str, context: ToolContext
    ) -> tuple[FileSnapshot, str]:
        """The file as it is and as it would be written; `FileRefusal` if it may not be."""
        snapshot = await load_snapshot(target.path, context.client)
        require_fresh_read(snapshot, context.read_stamps.get(str(target.path)), target.display)
        old_text = snapshot.text
        return snapshot, content if old_text is None else match_line_endings(old_text, content)

    async def preview(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolPreview | ToolResult:
        target = self._target(arguments, context.roots)
        content = require_str(arguments, "content", allow_empty=True)
        if target.path.is_dir():
            raise ToolInputError(f"{target.display} is a directory")
        try:
            snapshot, new_text = await self._change(target, content, context)
        except FileRefusal as refusal:
            return refusal_result(refusal, path=str(target.path))
        return ToolPreview((DiffContent(str(target.path), snapshot.text, new_text),))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        target = self._target(arguments, context.roots)
        content = require_str(arguments, "content", allow_empty=True)
        if target.path.is_dir():
            raise ToolInputError(f"{target.display} is a directory")
        path = str(target.path)
        async with path_lock(target.path):
            try:
                # Checked again now: a file changed since the question is not overwritten.
                snapshot, new_text = await self._change(target, content, context)
                old_text = snapshot.text
                via = await store_text(snapshot, new_text, context.client, context.changes)
            except FileRefusal as refusal:
                return refusal_result(refusal, path=path)
            context.read_stamps.record(path, snapshot.stamp_after_write(new_text))
        lines = new_text.count("\n") + (0 if new_text.endswith("\n") or not new_text else 1)
        verb = "Created" if old_text is None else "Replaced"
        model_text = f"{verb} {target.display} ({lines} lines)."
        line = 1 if old_text is None else first_changed_line(old_text, new_text)
        return ToolResult(
            content=(DiffContent(path, old_text, new_text),),
            model_text=model_text,
            raw_output={
                "path": path,
                "created": old_text is None,
                "bytes": len(snapshot.codec.encode(new_text)),
                "lines": lines,
                "via": via,
                "encoding": snapshot.codec.label,
            },
            locations=(Location(path, line),),
        )
