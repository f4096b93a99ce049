"""The capabilities: what consumes a branch's timeline and owns async work.

Sub-packages by idea, each importing only those below it (an import-linter
contract holds the order):

==============  ==================================================================
`loop`          the model loop: a branch's turns, model requests, tool batches
`execution`     the tool executor, the model's call proposals, the result
                budget, the recorder of streamed deltas
`session`       the session's controls (mode, model, effort, roots), its tool
                set, slash commands and titles, rewind and the checkpoints it
                restores, the review of changed files
`branches`      the branch manager, what it knows of each child, the branch tools
`jobs`          background jobs: their manager and tools
`permissions`   modes, remembered rules, deciding a call, asking the person
`context`       the context engine: history, state and rules as a model request
==============  ==================================================================

This face is how they are assembled into the runtime's scopes:

    registry = ServiceRegistry()
    register_capabilities(registry, CapabilitySettings(models=models, tools=builtin_tools))

and the service keys front ends and plug-ins (MCP, language servers) look
them up by. The contract tools implement is `acp_agent.toolkit`; the model
source is `acp_agent.models`. Everything loads with the package: nothing of
it is imported before `initialize` is answered, and a session needs it all.
"""

from __future__ import annotations

from acp_agent.capabilities._assembly import (
    BRANCHES,
    CHANGE_REVIEW,
    CHECKPOINTS,
    CONTEXT,
    GUIDE,
    JOBS,
    MODEL_LOOP,
    RESULT_BUDGET,
    REWINDER,
    SESSION_CONTROLS,
    TOOLSET,
    CapabilitySettings,
    register_capabilities,
)

__all__ = (
    "BRANCHES",
    "CHANGE_REVIEW",
    "CHECKPOINTS",
    "CONTEXT",
    "GUIDE",
    "JOBS",
    "MODEL_LOOP",
    "RESULT_BUDGET",
    "REWINDER",
    "SESSION_CONTROLS",
    "TOOLSET",
    "CapabilitySettings",
    "register_capabilities",
)
