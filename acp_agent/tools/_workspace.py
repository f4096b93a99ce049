"""Where a path argument really leads, and whether that is inside the session's workspace.

The workspace is the session's roots: its cwd first, then any additional
directories, all absolute and resolved. A relative path is taken from the
cwd. Containment is decided on the *resolved* path (every symlink followed),
so a link inside the workspace that points out of it counts as outside; the
permission note then says that a symlink leads out, and where. Tools touch
the resolved path, the one the permission was asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from acp_agent.toolkit import Effect, Location, PermissionNeed, ToolInputError
from acp_agent.values import Value

__all__ = (
    "WorkspacePath",
    "display_path",
    "entry_kind",
    "outside_need",
    "path_need",
    "present_path",
    "resolve_path",
)


@attrs.frozen
class WorkspacePath(Value):
    """A path argument, resolved against the session's roots."""

    #: As the model wrote it.
    raw: str
    #: Absolute, normalised, symlinks not followed: what the model meant.
    lexical: Path
    #: Absolute with every existing symlink followed: what a call touches.
    path: Path
    #: The root that contains `path`, or None when it is outside the workspace.
    root: Path | None
    #: The path looks inside the workspace but a symlink takes it outside.
    escapes_via_symlink: bool
    #: Shown in titles: relative to the cwd when inside it, absolute otherwise.
    display: str

    @property
    def inside(self) -> bool:
        return self.root is not None

    @property
    def is_root(self) -> bool:
        """The path is one of the workspace roots itself."""
        return self.root is not None and self.path == self.root

    def outside_note(self) -> str | None:
        """Why this path needs explicit permission, or None when it is inside."""
        if self.inside:
            return None
        if self.escapes_via_symlink:
            return (
                f"{self.display} is inside the workspace but a symlink leads outside it, "
                f"to {self.path}"
            )
        return f"{self.path} is outside the workspace"


def _normalise(raw: str, cwd: Path) -> Path:
    candidate = Path(os.path.expanduser(raw)) if raw.startswith("~") else Path(raw)
    if not candidate.is_absolute():
        candidate = cwd / candidate
    return Path(os.path.normpath(candidate))


def _containing_root(path: Path, roots: Sequence[Path]) -> Path | None:
    for root in roots:
        if path == root or path.is_relative_to(root):
            return root
    return None


def _display(lexical: Path, cwd: Path) -> str:
    if lexical == cwd:
        return "."
    if lexical.is_relative_to(cwd):
        return lexical.relative_to(cwd).as_posix()
    return str(lexical)


def resolve_path(
    raw: object, roots: Sequence[Path], *, name: str = "path", follow_final_symlink: bool = True
) -> WorkspacePath:
    """Resolve the path argument `raw` (named `name` in errors) against `roots`.

    With `follow_final_symlink` false the last component is kept as it is (its
    directory is still resolved): deleting or moving a symlink acts on the link.
    """
    if not isinstance(raw, str) or not raw:
        raise ToolInputError(f"`{name}` is required and must be a non-empty string")
    if "\x00" in raw:
        raise ToolInputError(f"`{name}` must not contain NUL characters")
    if not roots:
        raise ToolInputError("the session has no working directory")
    cwd = roots[0]
    lexical = _normalise(raw, cwd)
    if follow_final_symlink or lexical.parent == lexical:
        path = Path(os.path.realpath(lexical))
    else:
        path = Path(os.path.realpath(lexical.parent)) / lexical.name
    root = _containing_root(path, roots)
    escapes = root is None and _containing_root(lexical, roots) is not None
    return WorkspacePath(
        raw=raw,
        lexical=lexical,
        path=path,
        root=root,
        escapes_via_symlink=escapes,
        display=_display(lexical, cwd),
    )


def display_path(raw: object, roots: Sequence[Path]) -> str:
    """How to name `raw` in a title; never fails (bad input is shown as it is)."""
    try:
        return resolve_path(raw, roots).display
    except (ToolInputError, OSError, ValueError):
        return str(raw) if raw else "?"


def present_path(
    raw: object,
    roots: Sequence[Path],
    *,
    line: int | None = None,
    follow_final_symlink: bool = True,
) -> tuple[str, tuple[Location, ...]]:
    """How a call on the path argument `raw` is presented: its name and its locations.

    The name is `display_path(raw, roots)`; the locations are the one place the
    call touches (at `line`, resolved with `follow_final_symlink` as the call
    resolves it), or none when `raw` does not resolve. Never fails.
    """
    name = display_path(raw, roots)
    try:
        target = resolve_path(raw, roots, follow_final_symlink=follow_final_symlink)
    except (ValueError, OSError):
        return name, ()
    return name, (Location(str(target.path), line),)


def path_need(effect: Effect, target: WorkspacePath) -> PermissionNeed:
    """What a call with `effect` on the one path `target` needs, asked about if it is outside."""
    return outside_need(PermissionNeed(effect, str(target.path)), [target])


def outside_need(effect_need: PermissionNeed, paths: Iterable[WorkspacePath]) -> PermissionNeed:
    """`effect_need` with every path of `paths` that lies outside the workspace marked."""
    outside = [p for p in paths if not p.inside]
    if not outside:
        return effect_need
    notes = [note for p in outside if (note := p.outside_note())]
    if effect_need.note:
        notes.insert(0, effect_need.note)
    return attrs.evolve(
        effect_need,
        outside_workspace=tuple(dict.fromkeys(str(p.path) for p in outside)),
        note="\n".join(notes) if notes else None,
    )


def entry_kind(path: Path) -> str | None:
    """What is at `path`: a symlink (not followed), a directory, a file, or None."""
    if path.is_symlink():
        return "symlink"
    if not path.exists():
        return None
    return "directory" if path.is_dir() else "file"
