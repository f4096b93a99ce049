"""Branches: lines of work the model starts beside the main one, and follows.

`BranchManager` (a session service) starts children of main at a quiet cut,
follows each (`ChildBranch`, `ChildState`), shows them in main's turns and tells
main when they end; `branch_tools` are the model's tools for them and
`branch_commands` the person's `/branches`. A child asks its permission
questions through a `GatedPrompter`, during main's turns.
"""

from __future__ import annotations

from acp_agent.capabilities.branches._children import ChildBranch, ChildState
from acp_agent.capabilities.branches._manager import (
    BRANCHES_GUIDE_ENTRY,
    DEFAULT_BRANCH_LIMIT,
    BranchManager,
    BranchSide,
    GatedPrompter,
)
from acp_agent.capabilities.branches._tools import BRANCH_TOOL_NAMES, branch_commands, branch_tools

__all__ = (
    "BRANCHES_GUIDE_ENTRY",
    "BRANCH_TOOL_NAMES",
    "DEFAULT_BRANCH_LIMIT",
    "BranchManager",
    "BranchSide",
    "ChildBranch",
    "ChildState",
    "GatedPrompter",
    "branch_commands",
    "branch_tools",
)
