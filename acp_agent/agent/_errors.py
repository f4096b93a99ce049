"""The session handle's own errors (the runtime's pass through as they are).

    Exception
    ├── SessionBusy      a prompt is running: the operation needs the session idle
    └── TurnCancelled    the prompt was cancelled before its turn began

The runtime's errors a front end answers (the store's `StoreError` family,
`SessionHeld`, `StoreNotFound`, `IllegalCut`; the settings' `InvalidSetting`;
the rewinder's `NoRewindPoint` and `RewindRefused`; the loop's
`PromptTooLarge`) are raised as they are and exported by this package's face.
"""

from __future__ import annotations

__all__ = ("SessionBusy", "TurnCancelled")


class SessionBusy(Exception):
    """A prompt is running, and the operation needs the session idle (a rewind)."""


class TurnCancelled(Exception):
    """The prompt was cancelled before its turn began."""
