"""Misuse of the runtime: the caller asked for something its state forbids.

    CoreMisuse (RuntimeError)
    ├── ScopeClosed            the scope was closed by us; it takes no more work
    │   ├── BranchClosed       the branch was closed or unloaded; no appends, no turns
    │   └── SessionClosed      the session was closed; no branches, no forks
    ├── AlreadyStarted         a thing that starts once was started again
    ├── IllegalCut             a read or cut point inside a batch or past what is published
    └── ServiceNotFound        no service of that name in the caller's scope chain

These are bugs in the caller, not failures of the world; storage failures
are the separate `StoreError` tree in `acp_agent.core._store`.
"""

from __future__ import annotations

__all__ = (
    "AlreadyStarted",
    "BranchClosed",
    "CoreMisuse",
    "IllegalCut",
    "ScopeClosed",
    "ServiceNotFound",
    "SessionClosed",
)


class CoreMisuse(RuntimeError):
    """The runtime was asked for something its current state forbids."""


class ScopeClosed(CoreMisuse):
    """The scope was closed (by us) and takes no more work or services."""


class BranchClosed(ScopeClosed):
    """The branch was closed or unloaded: it takes no more events or turns."""

    def __init__(self, branch_id: str) -> None:
        super().__init__(f"branch {branch_id} is closed")
        self.branch_id = branch_id


class SessionClosed(ScopeClosed):
    """The session was closed: it opens no more branches and forks nothing."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id} is closed")
        self.session_id = session_id


class AlreadyStarted(CoreMisuse):
    """Something that starts once (a turn, a close, an assembly) was started again."""


class IllegalCut(CoreMisuse, ValueError):
    """A read bound or cut point falls inside a batch or beyond the published position."""


class ServiceNotFound(CoreMisuse, LookupError):
    """No scope in the caller's chain provides a service of that name."""
