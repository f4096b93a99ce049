"""Running the model's tool calls: the executor, its proposals, its records.

`ToolExecutor` (a branch service) binds each proposed call to the tool
generation its request saw, asks permission, runs it and records its
progress and result; `CallProposals` and `tool_spec` are how the loop turns
a reply's tool calls into proposals and tools into what the model is
offered. `ResultBudget` caps what is kept of a result, `FullResults` keeps the
whole of one it truncated in the store and `result_tools` (`read_result`) reads it
back; `CoalescingRecorder` and `record_delta` record streamed deltas in batches.
"""

from __future__ import annotations

from acp_agent.capabilities.execution._executor import ToolExecutor
from acp_agent.capabilities.execution._full_results import FullResults
from acp_agent.capabilities.execution._proposals import CallProposals, tool_spec
from acp_agent.capabilities.execution._recorder import CoalescingRecorder, record_delta
from acp_agent.capabilities.execution._result_budget import ResultBudget, ResultLimits
from acp_agent.capabilities.execution._result_reader import READ_RESULT, result_tools

__all__ = (
    "READ_RESULT",
    "CallProposals",
    "CoalescingRecorder",
    "FullResults",
    "ResultBudget",
    "ResultLimits",
    "ToolExecutor",
    "record_delta",
    "result_tools",
    "tool_spec",
)
