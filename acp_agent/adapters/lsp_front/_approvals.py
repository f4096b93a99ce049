"""Changes and questions waiting for the person, where the editor cannot ask.

Helix (and any client with neither change annotations nor `window/showMessageRequest`)
gets the agent's proposal as code actions: "Apply acp-agent's change (N files)", which
carries the edit and runs `acp-agent.approve`, and "Reject acp-agent's change", which
runs `acp-agent.reject`. The waiting tool call resumes once one is picked; nothing is
applied before. A cancelled turn withdraws its proposals.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Sequence

import anyio
import attrs
from lsprotocol import types

__all__ = ("Approvals", "Decision", "Pending")


class Decision(enum.Enum):
    """What the person chose."""

    ALLOW_ONCE = "allow once"
    ALLOW_ALWAYS = "always for this kind"
    REJECT = "reject"


@attrs.define
class Pending:
    """One proposal waiting for the person."""

    approval_id: str
    #: The code action's title.
    title: str
    #: What the person is asked (shown with the code actions).
    question: str
    #: The workspace folder of the session that asks.
    folder: str
    #: The change, when the proposal is an edit (the code action carries it).
    edit: types.WorkspaceEdit | None = None
    files: Sequence[str] = ()
    decision: Decision | None = None
    #: The editor applied `edit` itself (it came with the code action).
    applied: bool = False
    decided: anyio.Event = attrs.field(factory=anyio.Event)


class Approvals:
    """The proposals waiting for the person, by id."""

    def __init__(self) -> None:
        self._pending: dict[str, Pending] = {}
        self._ids = itertools.count(1)

    def new_id(self) -> str:
        return f"approval-{next(self._ids)}"

    async def wait(self, pending: Pending) -> Pending:
        """Offer `pending` until the person decides (or the caller is cancelled)."""
        self._pending[pending.approval_id] = pending
        try:
            await pending.decided.wait()
        finally:
            self._pending.pop(pending.approval_id, None)
        return pending

    def decide(self, approval_id: str, decision: Decision, *, applied: bool = False) -> bool:
        """Settle one proposal; False if none waits under `approval_id`."""
        pending = self._pending.pop(approval_id, None)
        if pending is None:
            return False
        pending.decision = decision
        pending.applied = applied and pending.edit is not None
        pending.decided.set()
        return True

    def waiting(self, folder: str | None = None) -> list[Pending]:
        """The proposals waiting (of the session of `folder`, if given), oldest first."""
        return [p for p in self._pending.values() if folder is None or p.folder == folder]

    def reject_all(self, folder: str) -> int:
        """Reject every proposal of the session of `folder`; how many."""
        ids = [p.approval_id for p in self.waiting(folder)]
        for approval_id in ids:
            self.decide(approval_id, Decision.REJECT)
        return len(ids)
