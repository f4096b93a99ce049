"""The `delete` tool: remove a file, a symlink, or (with `recursive`) a directory.

A symlink is removed itself, never what it points to. A file this branch
read must be unchanged since (`file_modified_since_read`): deleting is no
way around a conflict. A text file's removal shows as a diff from its text
to nothing; a directory's as the list of files removed. The workspace roots
themselves cannot be deleted.

`raw_output`: ``{"path", "type": "file"|"symlink"|"directory", "removed_files"}``;
refusals ``{"error", "message", "path"}``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import attrs

from acp_agent.capabilities.tool import (
    ContentPart,
    DiffContent,
    Effect,
    Location,
    PermissionNeed,
    TextContent,
    ToolContext,
    ToolDefinition,
    ToolKind,
    ToolPresentation,
    ToolResult,
)
from acp_agent.tools._args import optional_bool
from acp_agent.tools._common import refusal_result
from acp_agent.tools._textfile import FileRefusal, load_snapshot, path_lock, require_fresh_read
from acp_agent.tools._workspace import (
    WorkspacePath,
    entry_kind,
    path_need,
    present_path,
    resolve_path,
)

__all__ = ("DEFINITION", "DeleteTool")

#: A directory's removal lists at most this many files.
_LISTED_FILES: Final = 50

DEFINITION: Final = ToolDefinition(
    name="delete",
    description="""\
Delete a file or symlink (the link itself, not its target), or a directory with \
`recursive: true` (an empty directory needs no flag). A file you read must not have \
changed since.""",
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "What to delete: relative to the working directory, or absolute.",
            },
            "recursive": {
                "type": "boolean",
                "description": "Allow deleting a non-empty directory and everything in it.",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    kind=ToolKind.DELETE,
)


def _resolve(arguments: Mapping[str, Any], roots: Sequence[Path]) -> WorkspacePath:
    return resolve_path(arguments.get("path"), roots, follow_final_symlink=False)


def _files_under(directory: Path) -> list[str]:
    found: list[str] = []
    for base, _dirs, files in os.walk(directory):
        found.extend(os.path.join(base, name) for name in files)
    return sorted(found)


@attrs.frozen
class DeleteTool:
    """Deletes files, symlinks and (explicitly) directories."""

    @property
    def definition(self) -> ToolDefinition:
        return DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        name, locations = present_path(arguments.get("path"), roots, follow_final_symlink=False)
        return ToolPresentation(f"Delete {name}", ToolKind.DELETE, locations)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        target = _resolve(arguments, roots)
        optional_bool(arguments, "recursive")
        return path_need(Effect.EDIT, target)

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        target = _resolve(arguments, context.roots)
        recursive = optional_bool(arguments, "recursive")
        path = str(target.path)
        try:
            return await self._delete(target, recursive, context)
        except FileRefusal as refusal:
            return refusal_result(refusal, path=path)

    async def _delete(
        self, target: WorkspacePath, recursive: bool, context: ToolContext
    ) -> ToolResult:
        path = target.path
        if any(root == path or root.is_relative_to(path) for root in context.roots):
            raise FileRefusal("workspace_root", f"{target.display} is (or holds) a workspace root")
        kind = entry_kind(path)
        if kind is None:
            raise FileRefusal("not_found", f"{target.display} does not exist")
        location = (Location(str(path)),)
        if kind == "symlink":
            destination = os.readlink(path)
            await anyio.to_thread.run_sync(os.unlink, path)
            context.read_stamps.forget(str(path))
            text = f"Deleted the symlink {target.display} (it pointed to {destination})."
            raw = {"path": str(path), "type": "symlink", "removed_files": 0}
            return ToolResult((TextContent(text),), text, raw_output=raw, locations=location)
        if kind == "directory":
            files = await anyio.to_thread.run_sync(_files_under, path)
            if not recursive and any(path.iterdir()):
                raise FileRefusal(
                    "directory_not_empty",
                    f"{target.display} is a directory with {len(files)} file(s) in it; "
                    "set recursive to delete it with everything in it",
                )
            await anyio.to_thread.run_sync(shutil.rmtree, path)
            for file in files:
                context.read_stamps.forget(file)
            listed = "\n".join(f"- {Path(f).relative_to(path)}" for f in files[:_LISTED_FILES])
            more = ""
            if len(files) > _LISTED_FILES:
                more = f"\n- … and {len(files) - _LISTED_FILES} more"
            text = f"Deleted the directory {target.display} ({len(files)} file(s))."
            shown = text + (f"\n{listed}{more}" if files else "")
            raw = {"path": str(path), "type": "directory", "removed_files": len(files)}
            return ToolResult((TextContent(shown),), text, raw_output=raw, locations=location)
        async with path_lock(path):
            try:
                snapshot = await load_snapshot(path, context.client)
            except FileRefusal as refusal:
                if refusal.code not in ("binary_file", "file_too_large"):
                    raise
                snapshot = None
            if snapshot is not None:
                seen = context.read_stamps.get(str(path))
                if seen is not None:
                    require_fresh_read(snapshot, seen, target.display)
            await anyio.to_thread.run_sync(os.unlink, path)
            context.read_stamps.forget(str(path))
        content: tuple[ContentPart, ...]
        if snapshot is not None and snapshot.text is not None:
            content = (DiffContent(str(path), snapshot.text, ""),)
        else:
            content = (TextContent(f"Deleted {target.display} (not a text file)."),)
        text = f"Deleted {target.display}."
        raw = {"path": str(path), "type": "file", "removed_files": 1}
        return ToolResult(content, text, raw_output=raw, locations=location)
