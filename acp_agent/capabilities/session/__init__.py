"""A session's own services: its tools, its commands, going back, reviewing changes.

- `ToolSet`: the tools the session offers, in generations (`ToolGeneration`;
  `ToolBindings` remembers which a request saw, `UnboundCall` when none);
- `CommandRunner`: the slash commands and prompt templates (`parse_invocation`,
  `load_templates`, `available_commands`), and `title_from_prompt`;
- `Rewinder`: back to before a message, files and conversation (`NoRewindPoint`,
  `RewindRefused`, `rewind_commands`), from the `CheckpointStore` the executor
  keeps (`CallChanges`);
- `ChangeReview`: what reviews the files a call changed (`ChangedFile`);
- `RootsIndex`: what the files under the roots held, to find what a sandboxed
  command changed (`CallChanges.watching`).
"""

from __future__ import annotations

from acp_agent.capabilities.session._change_review import ChangedFile, ChangeReview
from acp_agent.capabilities.session._checkpoints import CallChanges, CheckpointStore
from acp_agent.capabilities.session._commands import (
    CommandInvocation,
    CommandRunner,
    available_commands,
    load_templates,
    parse_invocation,
)
from acp_agent.capabilities.session._rewind import (
    NoRewindPoint,
    Rewinder,
    RewindOutcome,
    RewindRefused,
)
from acp_agent.capabilities.session._rewind_command import rewind_commands
from acp_agent.capabilities.session._roots_index import RootsIndex
from acp_agent.capabilities.session._titles import title_from_prompt
from acp_agent.capabilities.session._toolset import (
    ToolBindings,
    ToolGeneration,
    ToolSet,
    UnboundCall,
)

__all__ = (
    "CallChanges",
    "ChangeReview",
    "ChangedFile",
    "CheckpointStore",
    "CommandInvocation",
    "CommandRunner",
    "NoRewindPoint",
    "RewindOutcome",
    "RewindRefused",
    "Rewinder",
    "RootsIndex",
    "ToolBindings",
    "ToolGeneration",
    "ToolSet",
    "UnboundCall",
    "available_commands",
    "load_templates",
    "parse_invocation",
    "rewind_commands",
    "title_from_prompt",
)
