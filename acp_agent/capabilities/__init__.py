"""The capabilities: what consumes a branch's timeline and owns async work.

Sub-packages by idea, each importing only those below it (an import-linter
contract holds the order):

==============  ==================================================================
`loop`          the model loop: a branch's turns, model requests, tool batches
`execution`     the tool executor, the model's call proposals, the result
                budget, the recorder of streamed deltas
`session`       the session's tool set, slash commands and titles, rewind and
                the checkpoints it restores, the review of changed files
`branches`      the branch manager, what it knows of each child, the branch tools
`jobs`          background jobs: their manager and tools
`controls`      what the person sets: mode, model, thinking effort (and the roots)
`permissions`   modes, remembered rules, deciding a call, asking the person
`sandboxing`    the session's command sandbox as the modes use it
`context`       the context engine: history, state and rules as a model request
==============  ==================================================================

This face is how they are assembled into the runtime's scopes:

    registry = ServiceRegistry()
    register_capabilities(registry, CapabilitySettings(models=models, tools=builtin_tools))

and the service keys plug-ins (MCP, language servers) and the session handles
(`acp_agent.agent`, the front ends' way in) look them up by. The contract tools
implement is `acp_agent.toolkit`; the model source is `acp_agent.models`. The
assembly, and with it every sub-package, loads on first use: answering
`session/new` needs the session controls only (importing them runs this face),
and the session assembles behind the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_agent.lazy_face import lazy_face as _lazy_face

if TYPE_CHECKING:
    from acp_agent.capabilities._assembly import (
        BRANCHES,
        CHANGE_REVIEW,
        CHECKPOINTS,
        CONTEXT,
        FRONT_END,
        FULL_RESULTS,
        GUIDE,
        JOBS,
        MODEL_LOOP,
        RESULT_BUDGET,
        REWINDER,
        ROOTS_INDEX,
        SANDBOX,
        SESSION_CONTROLS,
        TOOLSET,
        CapabilitySettings,
        FrontEnd,
        register_capabilities,
    )

__all__ = (
    "BRANCHES",
    "CHANGE_REVIEW",
    "CHECKPOINTS",
    "CONTEXT",
    "FRONT_END",
    "FULL_RESULTS",
    "GUIDE",
    "JOBS",
    "MODEL_LOOP",
    "RESULT_BUDGET",
    "REWINDER",
    "ROOTS_INDEX",
    "SANDBOX",
    "SESSION_CONTROLS",
    "TOOLSET",
    "CapabilitySettings",
    "FrontEnd",
    "register_capabilities",
)

#: Loaded on first use (see the docstring).
__getattr__, __dir__ = _lazy_face(__name__, dict.fromkeys(__all__, "_assembly"))
