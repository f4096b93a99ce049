"""Running the model's tool calls: the executor, its proposals, its records.

`ToolExecutor` (a branch service) binds each proposed call to the tool
generation its request saw, asks permission, runs it and records its
progress and result; `CallProposals` and `tool_spec` are how the loop turns
a reply's tool calls into proposals and tools into what the model is
offered. `ResultBudget` caps what is kept of a result; `CoalescingRecorder`
and `record_delta` record streamed deltas in batches.
"""

from __future__ import annotations

from acp_agent.capabilities.execution._executor import ToolExecutor
from acp_agent.capabilities.execution._proposals import CallProposals, tool_spec
from acp_agent.capabilities.execution._recorder import CoalescingRecorder, record_delta
from acp_agent.capabilities.execution._result_budget import ResultBudget, ResultLimits

__all__ = (
    "CallProposals",
    "CoalescingRecorder",
    "ResultBudget",
    "ResultLimits",
    "ToolExecutor",
    "record_delta",
    "tool_spec",
)
