"""`ToolSet.supersede`: new tools for new requests, nothing taken from calls already proposed.

MCP tool changes (a server ready, its list changed) use it instead of `reload`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.capabilities.permissions import PermissionMode
from acp_agent.capabilities.session._toolset import GenerationState
from acp_agent.core import ModelRequestStarted, ToolOutcome, ToolResultRecorded
from tests.capabilities.support import CountingTool, in_process_agent, payloads_of

pytestmark = pytest.mark.anyio


async def test_a_superseded_generation_still_runs_the_call_its_request_proposed(
    tmp_path: Path,
) -> None:
    old, new = CountingTool(tmp_path / "old"), CountingTool(tmp_path / "new")
    script = {"replies": [[{"sleep_ms": 300}, {"tool_call": {"name": "count"}}], [{"text": "."}]]}
    async with in_process_agent(script, tmp_path, tools=lambda: [old]) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        first = agent.toolset.current
        turn_id = await agent.prompt()
        await agent.wait_for(ModelRequestStarted)  # made with the first generation
        second = await agent.toolset.supersede([new])
        await agent.wait_turn_over(turn_id)
        history = await agent.history()

    assert (old.runs, new.runs) == (1, 0)
    [result] = payloads_of(history, ToolResultRecorded)
    assert result.outcome is ToolOutcome.FINISHED
    assert (first.state, second.state) == (GenerationState.SUPERSEDED, GenerationState.CURRENT)
    assert second.number == first.number + 1


async def test_a_reload_retires_the_current_generation_and_leaves_superseded_ones_running(
    tmp_path: Path,
) -> None:
    async with in_process_agent({"replies": [[{"text": "."}]]}, tmp_path) as agent:
        superseded = agent.toolset.current
        current = await agent.toolset.supersede([])
        await agent.toolset.reload([])

    assert current.state is GenerationState.RETIRED
    assert superseded.state is GenerationState.SUPERSEDED
