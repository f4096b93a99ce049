"""The context engine: a branch's history turned into the model's next request.

It keeps apart how to read the input (the guide, the system prompt: `_guide`;
a client's own instructions join it, `_instructions`) and what the input
currently is: the history folded (`_projection`) into messages (`_messages`), state from
its sources (`_state_sources`), rules from `AGENTS.md` files (`_rules`),
notifications (`_notifications`), each a block tagged by the runtime (the
tags are `acp_agent.toolkit`'s), and keeps that true across compaction
(`_compaction`), estimating what fits the window (`_token_budget`).
`ContextEngine` (`_engine`) puts them together per branch. This face lists
what other packages use; the rest stays in the private modules.
"""

from __future__ import annotations

from acp_agent.capabilities.context._compaction import (
    CompactionError,
    CompactionTrigger,
    CompactionView,
    compaction_view,
)
from acp_agent.capabilities.context._engine import (
    ContextEngine,
    ContextSettings,
    build_context_engine,
    default_guide_registry,
)
from acp_agent.capabilities.context._guide import GuideEntry, GuideRegistry
from acp_agent.capabilities.context._instructions import Instructions, apply_instructions
from acp_agent.capabilities.context._notifications import record_notification
from acp_agent.capabilities.context._rules import (
    scan_rule_files,
    scan_user_rules,
    scan_workspace_rules,
)
from acp_agent.capabilities.context._state_sources import Environment, ValueSource

__all__ = (
    "CompactionError",
    "CompactionTrigger",
    "CompactionView",
    "ContextEngine",
    "ContextSettings",
    "Environment",
    "GuideEntry",
    "GuideRegistry",
    "Instructions",
    "ValueSource",
    "apply_instructions",
    "build_context_engine",
    "compaction_view",
    "default_guide_registry",
    "record_notification",
    "scan_rule_files",
    "scan_user_rules",
    "scan_workspace_rules",
)
