"""The process groups the agent starts: registered before each runs, ended when it dies.

Standard library only (and `acp_agent.process_marks`): the reaper imports this
package without site-packages (see `_reaper`).
"""

from acp_agent.process_groups._gate import Gate
from acp_agent.process_groups._notes import GroupNotes
from acp_agent.process_groups._registry import (
    GroupRegistry,
    Registration,
    process_groups,
    use_process_groups,
)

__all__ = (
    "Gate",
    "GroupNotes",
    "GroupRegistry",
    "Registration",
    "process_groups",
    "use_process_groups",
)
