"""The `edit` tool: exact-text replacements in one file, all or nothing.

Each edit names `old_text`, which must occur exactly once in the file as it
stands after the edits before it (or any number of times with
`replace_all`), and its `new_text`. The file must have been read in this
branch and be unchanged since (`file_not_read`, `file_modified_since_read`:
a fresh read lets the retry succeed). The model writes `\\n`; in a CRLF file
its texts are matched and written with CRLF, so the file stays CRLF. The
encoding, a BOM and a missing final newline are kept. Written through
`fs/write_text_file` when offered (plain UTF-8), else atomically on disk.
The call shows a diff of the whole file and the first changed line.

`raw_output`: ``{"path", "replacements", "first_changed_line", "via",
"encoding", "line_ending"}``; refusals ``{"error", "message", "path"}``
(`not_found`, `no_match`, `ambiguous_match`, `no_change`, ...).
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
    restore_runtime_tags,
)
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

__all__ = (
    "DEFINITION",
    "EditTool",
    "Replacement",
    "apply_replacements",
    "parse_replacements",
)

_EDIT_PROPERTIES: Final = {
    "old_text": {
        "type": "string",
        "description": "Text to replace, exactly as in the file (without read's line numbers).",
    },
    "new_text": {"type": "string", "description": "The replacement text."},
    "replace_all": {
        "type": "boolean",
        "description": "Replace every occurrence instead of requiring exactly one.",
    },
}

DEFINITION: Final = ToolDefinition(
    name="edit",
    description="""\
Change part of a file by exact text replacement. Give `old_text` and `new_text`, or \
several changes as `edits` (applied in order, each to the result of the ones before; \
all succeed or none is applied). Each `old_text` must match exactly once (include \
enough surrounding lines to make it unique) unless `replace_all` is true; copy it \
from `read` output without the line numbers and keep the indentation. Read the file \
first in this conversation; if it changed since, read it again and redo the edit.""",
    input_schema={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "The file: relative to the working directory, or absolute.",
            },
            **_EDIT_PROPERTIES,
            "edits": {
                "type": "array",
                "description": "Several changes, instead of a single old_text/new_text.",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": _EDIT_PROPERTIES,
                    "required": ["old_text", "new_text"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    kind=ToolKind.EDIT,
)


@attrs.frozen
class Replacement(Value):
    """One requested change."""

    old_text: str
    new_text: str
    replace_all: bool = False


def _replacement(item: object, where: str) -> Replacement:
    if not isinstance(item, Mapping):
        raise ToolInputError(f"{where} must be an object with old_text and new_text")
    old, new, every = item.get("old_text"), item.get("new_text"), item.get("replace_all", False)
    if not isinstance(old, str) or not isinstance(new, str):
        raise ToolInputError(f"{where}: old_text and new_text are required strings")
    if not old:
        raise ToolInputError(f"{where}: old_text must not be empty (use `write` for new files)")
    if old == new:
        raise ToolInputError(f"{where}: old_text and new_text are the same")
    if not isinstance(every, bool):
        raise ToolInputError(f"{where}: replace_all must be true or false")
    return Replacement(old, new, every)


def parse_replacements(arguments: Mapping[str, Any]) -> tuple[Replacement, ...]:
    """The changes the arguments ask for: `edits`, or one top-level old/new pair."""
    edits = arguments.get("edits")
    single = "old_text" in arguments or "new_text" in arguments
    if edits is not None:
        if single:
            raise ToolInputError("give either `edits` or old_text/new_text, not both")
        if not isinstance(edits, list) or not edits:
            raise ToolInputError("`edits` must be a non-empty list")
        return tuple(_replacement(item, f"edits[{i}]") for i, item in enumerate(edits))
    if not single:
        raise ToolInputError("give old_text and new_text (or `edits`)")
    return (_replacement(arguments, "the edit"),)


def _to_lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def apply_replacements(
    text: str, replacements: Sequence[Replacement], display: str
) -> tuple[str, int]:
    """`text` with every replacement applied in order, and how many places changed.

    In a CRLF file the model's `\\n` texts are matched against the file with
    its CRLFs read as `\\n`, and the result is written back with CRLF. Raises
    `FileRefusal` (`no_match`, `ambiguous_match`) naming the edit that failed.
    """
    crlf = line_ending(text) == "crlf"
    work = _to_lf(text) if crlf else text
    count = 0
    for index, change in enumerate(replacements):
        label = "old_text" if len(replacements) == 1 else f"edits[{index}].old_text"
        old, new = change.old_text, change.new_text
        if crlf:
            old, new = _to_lf(old), _to_lf(new)
        found = work.count(old)
        if not found and not crlf and "\r\n" in work and "\r\n" not in old:
            # A file with mixed endings: try the model's lines with CRLF.
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            found = work.count(old)
        if not found and restore_runtime_tags(old) != old:
            # Copied from a result, where `<state` reads `&lt;state` (see capabilities.tags).
            old, new = restore_runtime_tags(old), restore_runtime_tags(new)
            found = work.count(old)
        if not found:
            hint = ""
            if old.strip() and old.strip() in work:
                hint = " (it matches when leading/trailing whitespace is ignored: check it)"
            raise FileRefusal(
                "no_match",
                f"{label} was not found in {display}{hint}; no change was made",
                "copy it exactly from the file as it is now (read it again if unsure)",
            )
        if found > 1 and not change.replace_all:
            raise FileRefusal(
                "ambiguous_match",
                f"{label} matches {found} places in {display}; no change was made",
                "include more surrounding text to make it unique, or set replace_all",
            )
        work = work.replace(old, new)
        count += found
    return (work.replace("\n", "\r\n") if crlf else work), count


@attrs.frozen
class EditTool(Value):
    """Replaces exact text in a file the branch has read, showing the whole-file diff."""

    @property
    def definition(self) -> ToolDefinition:
        return DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        name, locations = present_path(arguments.get("path"), roots)
        return ToolPresentation(f"Edit {name}", ToolKind.EDIT, locations)

    def _target(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> WorkspacePath:
        target = resolve_path(arguments.get("path"), roots)
        parse_replacements(arguments)
        return target

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        target = self._target(arguments, roots)
        return path_need(Effect.EDIT, target)

    async def _change(
        self, target: WorkspacePath, arguments: Mapping[str, Any], context: ToolContext
    ) -> tuple[FileSnapshot, str, int]:
        """The file as it is and as the edits leave it; `FileRefusal` if they cannot apply."""
        snapshot = await load_snapshot(target.path, context.client)
        if snapshot.text is None:
            raise FileRefusal(
                "not_found", f"{target.display} does not exist", "use `write` to create it"
            )
        require_fresh_read(snapshot, context.read_stamps.get(str(target.path)), target.display)
        replacements = parse_replacements(arguments)
        new_text, count = apply_replacements(snapshot.text, replacements, target.display)
        if new_text == snapshot.text:
            raise FileRefusal("no_change", "the edits leave the file as it was")
        return snapshot, new_text, count

    async def preview(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolPreview | ToolResult:
        target = self._target(arguments, context.roots)
        try:
            snapshot, new_text, _ = await self._change(target, arguments, context)
        except FileRefusal as refusal:
            return refusal_result(refusal, path=str(target.path))
        return ToolPreview((DiffContent(str(target.path), snapshot.text, new_text),))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        target = self._target(arguments, context.roots)
        path = str(target.path)
        async with path_lock(target.path):
            try:
                # Checked again against the file now: changed since the question, it fails
                # (`file_modified_since_read`) instead of writing what was not approved.
                snapshot, new_text, count = await self._change(target, arguments, context)
                via = await store_text(snapshot, new_text, context.client, context.changes)
            except FileRefusal as refusal:
                return refusal_result(refusal, path=path)
            context.read_stamps.record(path, snapshot.stamp_after_write(new_text))
        old_text = snapshot.text
        assert old_text is not None
        line = first_changed_line(old_text, new_text)
        places = "1 place" if count == 1 else f"{count} places"
        return ToolResult(
            content=(DiffContent(path, old_text, new_text),),
            model_text=f"Edited {target.display}: replaced {places}; first change at line {line}.",
            raw_output={
                "path": path,
                "replacements": count,
                "first_changed_line": line,
                "via": via,
                "encoding": snapshot.codec.label,
                "line_ending": line_ending(new_text),
            },
            locations=(Location(path, line),),
        )
