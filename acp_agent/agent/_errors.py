"""The session handle's own errors (the runtime's pass through as they are).

    Exception
    ├── SessionBusy      a prompt is running: the operation needs the session idle
    ├── SessionReadOnly  the session's workspace is not on this machine: no turn here
    └── TurnCancelled    the prompt was cancelled before its turn began

The runtime's errors a front end answers (the store's `StoreError` family,
`SessionHeld`, `StoreNotFound`, `IllegalCut`; the settings' `InvalidSetting`;
the rewinder's `NoRewindPoint` and `RewindRefused`; the loop's
`PromptTooLarge`) are raised as they are and exported by this package's face.
"""

from __future__ import annotations

import os

__all__ = ("SessionBusy", "SessionReadOnly", "TurnCancelled", "workspace_missing")


class SessionBusy(Exception):
    """A prompt is running, and the operation needs the session idle (a rewind)."""


class SessionReadOnly(Exception):
    """The session's workspace is not here: it can be loaded, listed and forked, not
    prompted (a turn would run its tools against files that are not there)."""


def workspace_missing(cwd: str) -> str | None:
    """Why a session in `cwd` is read-only on this machine, or None when its workspace is here.

    Taking a session over from another machine needs the same files at the same path
    (a shared or synchronised checkout); the history alone follows the session.
    """
    if os.path.isdir(cwd):
        return None
    return (
        f"its workspace {cwd} is not on this machine, so the session is read-only here "
        "(a session taken over needs the same files at the same path: a shared or "
        "synchronised checkout)"
    )


class TurnCancelled(Exception):
    """The prompt was cancelled before its turn began."""
