"""The `move` tool: rename or move a file, symlink or directory.

Both paths are resolved against the workspace (a symlink is moved itself).
An existing destination is replaced only with `overwrite`, only if it is a
file, and only if this branch read it unchanged (as `write` requires). A
moved text file shows as two diffs: its text leaving the old path and
arriving at the new one. The branch's read stamp follows the file. The
permission question shows the same before anything moves (`preview`), and a
move that cannot happen fails unasked.

`raw_output`: ``{"source", "destination", "type", "overwrote"}``; refusals
``{"error", "message", "path"}``.
"""

from __future__ import annotations

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
    outside_need,
    present_path,
    resolve_path,
)
from acp_agent.values import Value

__all__ = ("DEFINITION", "MoveTool")

DEFINITION: Final = ToolDefinition(
    name="move",
    description="""\
Move or rename a file, symlink or directory. `destination` is the full new path \
(parent directories are created). An existing destination file is replaced only with \
`overwrite: true`, and only if you read it and it has not changed since.""",
    input_schema={
        "type": "object",
        "properties": {
            "source": {"type": "string", "description": "What to move."},
            "destination": {"type": "string", "description": "Its new path."},
            "overwrite": {
                "type": "boolean",
                "description": "Replace an existing destination file (default false).",
            },
        },
        "required": ["source", "destination"],
        "additionalProperties": False,
    },
    kind=ToolKind.MOVE,
)


def _resolve(
    arguments: Mapping[str, Any], roots: Sequence[Path]
) -> tuple[WorkspacePath, WorkspacePath]:
    source = resolve_path(arguments.get("source"), roots, name="source", follow_final_symlink=False)
    destination = resolve_path(
        arguments.get("destination"), roots, name="destination", follow_final_symlink=False
    )
    return source, destination


async def _text_of(path: Path, context: ToolContext) -> FileSnapshot | None:
    """The file's snapshot, or None when it is no text file the tools read."""
    try:
        snapshot = await load_snapshot(path, context.client)
    except FileRefusal:
        return None
    return snapshot if snapshot.exists else None


def _move(source: Path, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(source, destination)


@attrs.frozen
class _Move(Value):
    """What a move does, found (and checked) before anything moves."""

    source: WorkspacePath
    destination: WorkspacePath
    kind: str  # "file" | "symlink" | "directory"
    #: Whether an existing destination file is replaced.
    overwrites: bool
    #: The moved file's text, when it is a text file.
    moved: FileSnapshot | None
    #: The replaced destination's text, when it is a text file.
    replaced: FileSnapshot | None

    def shown(self, *, done: bool) -> tuple[ContentPart, ...]:
        """What the person sees, in the question and in the result: a text file's text
        leaving the old path and arriving at the new one (over what it replaces)."""
        if self.moved is not None and self.moved.text is not None:
            old_at_destination = self.replaced.text if self.replaced is not None else None
            return (
                DiffContent(str(self.source.path), self.moved.text, ""),
                DiffContent(str(self.destination.path), old_at_destination, self.moved.text),
            )
        verb = "Moved" if done else "Moves"
        text = f"{verb} {self.source.display} to {self.destination.display}"
        if self.overwrites and not done:
            text += ", replacing the file there"
        return (TextContent(f"{text}."),)


@attrs.frozen
class MoveTool(Value):
    """Moves and renames; never silently replaces a file."""

    @property
    def definition(self) -> ToolDefinition:
        return DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        source, at_source = present_path(arguments.get("source"), roots, follow_final_symlink=False)
        destination, at_destination = present_path(
            arguments.get("destination"), roots, follow_final_symlink=False
        )
        # The destination is shown only when the source resolves too, as the call needs.
        locations = at_destination if at_source else ()
        return ToolPresentation(f"Move {source} → {destination}", ToolKind.MOVE, locations)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        source, destination = _resolve(arguments, roots)
        optional_bool(arguments, "overwrite")
        paths = (str(source.path), str(destination.path))
        need = PermissionNeed(Effect.EDIT, f"{source.path} → {destination.path}", paths=paths)
        return outside_need(need, [source, destination])

    async def preview(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolPreview | ToolResult:
        source, destination = _resolve(arguments, context.roots)
        overwrite = optional_bool(arguments, "overwrite")
        try:
            move = await _inspect(source, destination, overwrite, context)
        except FileRefusal as refusal:
            return refusal_result(refusal, path=str(source.path))
        return ToolPreview(move.shown(done=False))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        source, destination = _resolve(arguments, context.roots)
        overwrite = optional_bool(arguments, "overwrite")
        src, dst = source.path, destination.path
        try:
            async with path_lock(dst):
                # Checked again now: what changed since the question is not replaced blind.
                move = await _inspect(source, destination, overwrite, context)
                if context.changes is not None:
                    await context.changes.before_move(src, dst)
                await anyio.to_thread.run_sync(_move, src, dst)
        except FileRefusal as refusal:
            return refusal_result(refusal, path=str(src))
        stamp = context.read_stamps.get(str(src))
        context.read_stamps.forget(str(src))
        context.read_stamps.forget(str(dst))
        if stamp is not None and move.kind == "file":
            context.read_stamps.record(str(dst), stamp)
        return ToolResult(
            move.shown(done=True),
            f"Moved {source.display} to {destination.display}.",
            raw_output={
                "source": str(src),
                "destination": str(dst),
                "type": move.kind,
                "overwrote": move.overwrites,
            },
            locations=(Location(str(dst)),),
        )


async def _inspect(
    source: WorkspacePath, destination: WorkspacePath, overwrite: bool, context: ToolContext
) -> _Move:
    """What moving `source` to `destination` does; a `FileRefusal` when it must not."""
    src, dst = source.path, destination.path
    if any(root == src or root.is_relative_to(src) for root in context.roots):
        raise FileRefusal("workspace_root", f"{source.display} is (or holds) a workspace root")
    kind = entry_kind(src)
    if kind is None:
        raise FileRefusal("not_found", f"{source.display} does not exist")
    if src == dst:
        raise FileRefusal("same_path", "source and destination are the same path")
    if dst.is_relative_to(src):
        raise FileRefusal("into_itself", f"cannot move {source.display} into itself")
    replaced: FileSnapshot | None = None
    existing = entry_kind(dst)
    if existing is not None:
        if not overwrite:
            raise FileRefusal(
                "destination_exists",
                f"{destination.display} already exists",
                "set overwrite to replace it",
            )
        if existing == "directory":
            raise FileRefusal("destination_exists", f"{destination.display} is a directory")
        replaced = await _text_of(dst, context)
        if replaced is not None:
            require_fresh_read(replaced, context.read_stamps.get(str(dst)), destination.display)
    moved = await _text_of(src, context) if kind == "file" else None
    return _Move(source, destination, kind, existing is not None, moved, replaced)
