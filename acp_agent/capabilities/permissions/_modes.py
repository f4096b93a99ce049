"""The permission modes: how much a session may do without asking (see `_admission`).

Their own module: a new session's answer offers them, before admission loads.
"""

from __future__ import annotations

import enum

__all__ = ("PermissionMode",)


class PermissionMode(enum.StrEnum):
    """How much a session may do without asking."""

    #: Edits run; commands run in the command sandbox without asking; leaving it, the
    #: network and other side effects are asked about.
    SANDBOXED = "sandboxed"
    #: Ask before edits, commands, network and other side effects.
    ASK = "ask"
    #: Edits run without asking; commands and network are asked about.
    ACCEPT_EDITS = "accept-edits"
    #: Read-only: side effects are refused with an explanation the model sees.
    PLAN = "plan"
    #: Run everything without asking, commands outside the sandbox (paths outside the
    #: workspace are still asked).
    BYPASS = "bypass"
