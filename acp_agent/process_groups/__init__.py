"""The process groups the agent starts: registered before each runs, ended when it dies.

Standard library only (and `acp_agent.process_marks`): the reaper imports this
package without site-packages (see `_reaper`). `Gate` loads on first use: the
agent's start sweeps the notes and configures the registry without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name != "Gate":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module(f"{__name__}._gate").Gate
    globals()[name] = value
    return value
