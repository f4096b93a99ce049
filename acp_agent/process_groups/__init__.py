"""The process groups the agent starts: registered before each runs, ended when it dies.

Standard library only (and `acp_agent.process_marks`, `acp_agent.lazy_face`): the
reaper imports this package without site-packages (see `_reaper`). `Gate` loads on first use: the
agent's start sweeps the notes and configures the registry without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_agent.lazy_face import lazy_face as _lazy_face
from acp_agent.process_groups._notes import GroupNotes
from acp_agent.process_groups._registry import (
    GroupRegistry,
    Registration,
    process_groups,
    use_process_groups,
)

if TYPE_CHECKING:
    from acp_agent.process_groups._gate import Gate

__all__ = (
    "Gate",
    "GroupNotes",
    "GroupRegistry",
    "Registration",
    "process_groups",
    "use_process_groups",
)


__getattr__, __dir__ = _lazy_face(__name__, {"Gate": "_gate"})
