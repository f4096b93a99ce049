"""The `delete` tool: remove a file, a symlink, or (with `recursive`) a directory.

A symlink is removed itself, never what it points to. A file this branch
read must be unchanged since (`file_modified_since_read`): deleting is no
way around a conflict. A text file's removal shows as a diff from its text
to nothing; a directory's as the list of files removed. The workspace roots
themselves cannot be deleted. The permission question shows the same before
anything is removed (`preview`), and a deletion that cannot happen fails
unasked.

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

from acp_agent.toolkit import (
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
    ToolPreview,
    ToolResult,
)
from acp_agent.tools._args import optional_bool
from acp_agent.tools._common import refusal_result
from acp_agent.tools._textfile import (
    FileRefusal,
    FileSnapshot,
    load_snapshot,
    path_lock,
    require_fresh_read,
)
from acp_agent.tools._workspace import (
    WorkspacePath,
    entry_kind,
    path_need,
    present_path,
    resolve_path,
)
from acp_agent.values import Value

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
class _Deletion(Value):
    """What deleting a path removes, found (and checked) before anything is removed."""

    target: WorkspacePath
    kind: str  # "file" | "symlink" | "directory"
    #: A file's content (None for a file the tools do not read: binary, too large).
    snapshot: FileSnapshot | None = None
    #: A directory's files.
    files: tuple[str, ...] = ()
    #: Where a symlink points.
    pointed_to: str = ""

    def shown(self, *, done: bool) -> tuple[ContentPart, ...]:
        """What the person sees: in the question (what will go) and in the result (what
        went). A text file shows as its text going to nothing."""
        display = self.target.display
        if self.kind == "symlink":
            if done:
                text = f"Deleted the symlink {display} (it pointed to {self.pointed_to})."
            else:
                text = (
                    f"Deletes the symlink {display} (it points to {self.pointed_to}, which stays)."
                )
            return (TextContent(text),)
        if self.kind == "directory":
            count = len(self.files)
            if done:
                text = f"Deleted the directory {display} ({count} file(s))."
            else:
                text = f"Deletes the directory {display} and the {count} file(s) in it."
            listed = "\n".join(
                f"- {Path(f).relative_to(self.target.path)}" for f in self.files[:_LISTED_FILES]
            )
            if count > _LISTED_FILES:
                listed += f"\n- … and {count - _LISTED_FILES} more"
            return (TextContent(text + (f"\n{listed}" if self.files else "")),)
        if self.snapshot is not None and self.snapshot.text is not None:
            return (DiffContent(str(self.target.path), self.snapshot.text, ""),)
        verb = "Deleted" if done else "Deletes"
        return (TextContent(f"{verb} {display} (not a text file)."),)


@attrs.frozen
class DeleteTool(Value):
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

    async def preview(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolPreview | ToolResult:
        target = _resolve(arguments, context.roots)
        try:
            deletion = await _inspect(target, optional_bool(arguments, "recursive"), context)
        except FileRefusal as refusal:
            return refusal_result(refusal, path=str(target.path))
        return ToolPreview(deletion.shown(done=False))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        target = _resolve(arguments, context.roots)
        recursive = optional_bool(arguments, "recursive")
        try:
            async with path_lock(target.path):
                # Checked again now: what changed since the question is not deleted blind.
                deletion = await _inspect(target, recursive, context)
                await _remove(deletion, context)
        except FileRefusal as refusal:
            return refusal_result(refusal, path=str(target.path))
        return _result(deletion)


async def _inspect(target: WorkspacePath, recursive: bool, context: ToolContext) -> _Deletion:
    """What deleting `target` removes; a `FileRefusal` when it must not be deleted."""
    path = target.path
    if any(root == path or root.is_relative_to(path) for root in context.roots):
        raise FileRefusal("workspace_root", f"{target.display} is (or holds) a workspace root")
    kind = entry_kind(path)
    if kind is None:
        raise FileRefusal("not_found", f"{target.display} does not exist")
    if kind == "symlink":
        return _Deletion(target, kind, pointed_to=os.readlink(path))
    if kind == "directory":
        files = await anyio.to_thread.run_sync(_files_under, path)
        if not recursive and any(path.iterdir()):
            raise FileRefusal(
                "directory_not_empty",
                f"{target.display} is a directory with {len(files)} file(s) in it",
                "set recursive to delete it with everything in it",
            )
        return _Deletion(target, kind, files=tuple(files))
    try:
        snapshot: FileSnapshot | None = await load_snapshot(path, context.client)
    except FileRefusal as refusal:
        if refusal.code not in ("binary_file", "file_too_large"):
            raise
        snapshot = None
    if snapshot is not None:
        seen = context.read_stamps.get(str(path))
        if seen is not None:
            require_fresh_read(snapshot, seen, target.display)
    return _Deletion(target, kind, snapshot=snapshot)


async def _remove(deletion: _Deletion, context: ToolContext) -> None:
    path = deletion.target.path
    if context.changes is not None:
        await context.changes.before_remove(path)
    if deletion.kind == "directory":
        await anyio.to_thread.run_sync(shutil.rmtree, path)
        for file in deletion.files:
            context.read_stamps.forget(file)
    else:
        await anyio.to_thread.run_sync(os.unlink, path)
        context.read_stamps.forget(str(path))


def _result(deletion: _Deletion) -> ToolResult:
    target, kind = deletion.target, deletion.kind
    if kind == "symlink":
        text = f"Deleted the symlink {target.display} (it pointed to {deletion.pointed_to})."
        removed = 0
    elif kind == "directory":
        text = f"Deleted the directory {target.display} ({len(deletion.files)} file(s))."
        removed = len(deletion.files)
    else:
        text, removed = f"Deleted {target.display}.", 1
    raw = {"path": str(target.path), "type": kind, "removed_files": removed}
    return ToolResult(
        deletion.shown(done=True), text, raw_output=raw, locations=(Location(str(target.path)),)
    )
