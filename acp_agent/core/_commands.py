"""Commands: what a client asks a branch to do, each answered by events.

Commands are imperative requests; the facts that answer them arrive on
the branch's timeline. Submit them with `Branch.submit`.
"""

from __future__ import annotations

from typing import Any

import attrs

from acp_agent.core._ids import CallId, TurnId
from acp_agent.records import Record

__all__ = ("Cancel", "CloseBranch", "Command", "Prompt", "ResolvePermission")


@attrs.frozen
class Prompt(Record):
    """Start a turn with what the person typed.

    Answered by `UserInputAdopted`, then `TurnEnded` or `TurnInterrupted`.
    Raises `AlreadyStarted` while another turn runs on the branch.
    """

    turn_id: TurnId
    #: Content blocks as JSON objects.
    content: list[dict[str, Any]]


@attrs.frozen
class Cancel(Record):
    """Cancel a running turn.

    Answered by `TurnCancelRequested`, then `TurnInterrupted` once its work settled.
    A turn that already ended is left alone.
    """

    turn_id: TurnId


@attrs.frozen
class ResolvePermission(Record):
    """Answer a permission question. Answered by `PermissionAnswered`."""

    permission_id: str
    call_id: CallId
    #: The chosen option's id, or `cancelled`.
    outcome: str


@attrs.frozen
class CloseBranch(Record):
    """End the branch's line of work. Answered by `BranchEnded`, its last event."""

    reason: str = "closed"


Command = Prompt | Cancel | ResolvePermission | CloseBranch
