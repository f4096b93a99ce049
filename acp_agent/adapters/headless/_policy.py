"""What a headless run allows when the agent asks: `--approve never|edits|all`.

No one is there to answer, so the policy does, and says why. `never` refuses every
question; `edits` allows file changes (edit, write, move, delete) inside the roots;
`all` allows everything inside the roots. A call that reaches outside every root is
always refused: the agent marks such a question (`_meta["acp-agent"].outsideRoots`),
and a location outside the roots counts too, should the mark be missing.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

from acp_agent.values import Value
from protocol import types

__all__ = ("Approve", "Decision", "decide", "option_for")


class Approve(enum.StrEnum):
    """What runs without a person (`--approve`)."""

    NEVER = "never"
    EDITS = "edits"
    ALL = "all"


#: The tool kinds `edits` allows: changes to files.
_EDIT_KINDS: Final = frozenset({types.ToolKind.EDIT, types.ToolKind.DELETE, types.ToolKind.MOVE})


@attrs.frozen
class Decision(Value):
    """The policy's answer to one question, and the reason given for it."""

    allowed: bool
    reason: str


def decide(
    request: types.RequestPermissionRequest, approve: Approve, roots: Sequence[Path]
) -> Decision:
    """Allow or refuse `request` under `approve`, with the session's `roots`."""
    outside = _outside_roots(request, roots)
    if outside is not None:
        return Decision(False, f"reaches outside the workspace roots ({outside})")
    if approve is Approve.NEVER:
        return Decision(False, "--approve never")
    if approve is Approve.EDITS and request.tool_call.kind not in _EDIT_KINDS:
        kind = request.tool_call.kind.value if request.tool_call.kind else "other"
        return Decision(False, f"--approve edits allows only file changes, not {kind}")
    return Decision(True, f"--approve {approve.value}")


def option_for(request: types.RequestPermissionRequest, allowed: bool) -> str | None:
    """The id of the one-time option answering `allowed` (the always ones are never
    chosen: a policy decides each call), or None when the question offers none."""
    wanted = (
        (types.PermissionOptionKind.ALLOW_ONCE, types.PermissionOptionKind.ALLOW_ALWAYS)
        if allowed
        else (types.PermissionOptionKind.REJECT_ONCE, types.PermissionOptionKind.REJECT_ALWAYS)
    )
    for kind in wanted:
        for option in request.options:
            if option.kind == kind:
                return str(option.option_id)
    return None


def _outside_roots(request: types.RequestPermissionRequest, roots: Sequence[Path]) -> str | None:
    """What of the call lies outside every root ("outside" when only the mark says so)."""
    for location in request.tool_call.locations or ():
        path = Path(location.path)
        if path.is_absolute() and not any(_within(path, root) for root in roots):
            return location.path
    meta = request.meta or {}
    ours = meta.get("acp-agent")
    if isinstance(ours, dict) and ours.get("outsideRoots") is True:
        return "outside"
    return None


def _within(path: Path, root: Path) -> bool:
    # Normalised, not resolved: a path that does not exist yet counts too.
    normal = Path(os.path.normpath(path))
    return normal == root or normal.is_relative_to(root)
