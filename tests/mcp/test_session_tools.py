"""MCP servers in a session: its tool generations, permissions, guide and notifications.

A real runtime with the capabilities and `register_mcp`, a scripted model,
and real MCP servers (tests/mcp/servers) over stdio.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from acp_agent.capabilities import CONTEXT, CapabilitySettings, FrontEnd, register_capabilities
from acp_agent.capabilities.branches import BRANCH_TOOL_NAMES
from acp_agent.capabilities.execution import READ_RESULT
from acp_agent.capabilities.jobs._tools import JOB_TOOL_NAMES
from acp_agent.capabilities.permissions import PermissionChoice, PermissionMode
from acp_agent.core import (
    GuideAdopted,
    NotificationReceived,
    ServiceRegistry,
    ToolOutcome,
    ToolResultRecorded,
    open_runtime,
)
from acp_agent.mcp import (
    MCP_GUIDE_ENTRY,
    MCP_SESSION,
    McpSessionTools,
    McpSettings,
    ReconnectPolicy,
    ServerState,
    StdioServerConfig,
    register_mcp,
)
from acp_agent.models import ConfiguredModels, load_models_config, parse_script
from acp_agent.store import MemoryStore
from acp_agent.toolkit import (
    NO_NOTICES,
    Effect,
    Notice,
    NoticeSeverity,
    PermissionNeed,
    TextContent,
    ToolContext,
    ToolDefinition,
    ToolKind,
    ToolPresentation,
    ToolResult,
)
from tests.capabilities.support import ENVIRONMENT, Agent, AnsweringPrompter, payloads_of
from tests.mcp.support import WAIT_S, process_alive, stdio_server

pytestmark = pytest.mark.anyio


@attrs.define
class GateTool:
    """`gate`: a built-in-like tool that runs until `opened` is set, then succeeds."""

    started: anyio.Event = attrs.field(factory=anyio.Event)
    opened: anyio.Event = attrs.field(factory=anyio.Event)

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition("gate", "Wait at the gate.", {"type": "object"}, ToolKind.EXECUTE)

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        return ToolPresentation("Gate", ToolKind.EXECUTE)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        return PermissionNeed(Effect.EXECUTE, "gate")

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        self.started.set()
        await self.opened.wait()
        return ToolResult((TextContent("through"),), "through")


@asynccontextmanager
async def in_process_agent(
    script: Mapping[str, Any],
    tmp_path: Path,
    *,
    tools: Sequence[Any] = (),
    notices: list[Notice] | None = None,
) -> AsyncIterator[Agent]:
    """A runtime with the capabilities and MCP, playing `script`, one session in `tmp_path`
    (whose notices go to `notices`)."""
    parsed = parse_script(script, name="test")
    models = ConfiguredModels(load_models_config(None, {}), {}, script=parsed)
    registry = ServiceRegistry()
    register_capabilities(
        registry,
        CapabilitySettings(models=models, tools=lambda: list(tools), environment=ENVIRONMENT),
    )
    register_mcp(
        registry,
        McpSettings(config_dir=tmp_path / "config", reconnect=ReconnectPolicy((0.01, 0.01))),
    )
    store = MemoryStore()
    async with open_runtime(store, registry=registry) as runtime:
        side = FrontEnd(notices=NO_NOTICES if notices is None else notices.append)
        session = await runtime.create_session(str(tmp_path), provide=side.provide)
        yield Agent(runtime, session, store)


def mcp_of(agent: Agent) -> McpSessionTools:
    return agent.session.scope.get(MCP_SESSION)


async def wait_for_tool(agent: Agent, name: str) -> int:
    """The number of the first tool generation offering `name`."""
    with anyio.fail_after(WAIT_S):
        while name not in agent.toolset.current.tools:  # noqa: ASYNC110
            await anyio.sleep(0.01)
    return agent.toolset.current.number


def call(name: str, call_id: str = "c1", **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments, "id": call_id}}


def results(history: list[Any]) -> list[ToolResultRecorded]:
    return payloads_of(history, ToolResultRecorded)


async def test_mcp_tools_join_the_sessions_tools_as_a_new_generation(tmp_path: Path) -> None:
    gate = GateTool()
    async with in_process_agent({"replies": [[{"text": "."}]]}, tmp_path, tools=[gate]) as agent:
        first = agent.toolset.current
        runtime_tools = BRANCH_TOOL_NAMES | JOB_TOOL_NAMES | {READ_RESULT}
        assert [name for name in first.tools if name not in runtime_tools] == ["gate"]

        await mcp_of(agent).connect([stdio_server("calc")])
        number = await wait_for_tool(agent, "mcp__calc__add")

    assert number > first.number
    assert agent.toolset.current.tools["gate"] is gate


async def test_the_model_calls_an_mcp_tool_after_asking_permission(tmp_path: Path) -> None:
    script = {"replies": [[call("mcp__calc__add", a=2, b=40)], [{"text": "42 it is."}]]}
    async with in_process_agent(script, tmp_path) as agent:
        prompter = AnsweringPrompter(PermissionChoice.ALLOW_ONCE)
        agent.controls.prompter = prompter
        await mcp_of(agent).connect([stdio_server("calc")])
        await mcp_of(agent).wait_for_startup()
        await agent.wait_turn_over(await agent.prompt())
        history = await agent.history()

    [question] = prompter.questions
    assert (question.tool, question.target) == ("mcp__calc__add", "mcp__calc__add")
    [result] = results(history)
    assert (result.outcome, result.is_error, result.model_text) == (
        ToolOutcome.FINISHED,
        False,
        "42",
    )
    assert result.raw_output == {"result": 42}


async def test_a_server_becoming_ready_mid_call_cancels_nothing(tmp_path: Path) -> None:
    gate = GateTool()
    script = {"replies": [[call("gate")], [{"text": "done"}]]}
    async with in_process_agent(script, tmp_path, tools=[gate]) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        turn_id = await agent.prompt()
        with anyio.fail_after(WAIT_S):
            await gate.started.wait()

        await mcp_of(agent).connect([stdio_server("calc")])
        await wait_for_tool(agent, "mcp__calc__add")
        gate.opened.set()
        await agent.wait_turn_over(turn_id)
        history = await agent.history()

    [result] = results(history)
    assert (result.outcome, result.model_text) == (ToolOutcome.FINISHED, "through")


async def test_the_guide_explains_mcp_tools_once_the_session_has_servers(tmp_path: Path) -> None:
    script = {"replies": [[{"text": "."}]]}
    async with in_process_agent(script, tmp_path) as agent:
        guide = agent.session.main.scope.get(CONTEXT).guide
        assert MCP_GUIDE_ENTRY.entry_id not in guide.entries

        await mcp_of(agent).connect([stdio_server("calc")])
        await mcp_of(agent).wait_for_startup()
        await agent.wait_turn_over(await agent.prompt())
        history = await agent.history()

    [adopted] = payloads_of(history, GuideAdopted)
    assert MCP_GUIDE_ENTRY.entry_id in adopted.entry_ids
    assert MCP_GUIDE_ENTRY.text in adopted.text


async def test_a_lost_server_and_its_return_are_notifications_on_the_main_branch(
    tmp_path: Path,
) -> None:
    script = {"replies": [[call("mcp__fragile__crash")], [{"text": "oh"}]]}
    notices: list[Notice] = []
    async with in_process_agent(script, tmp_path, notices=notices) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        mcp = mcp_of(agent)
        await mcp.connect([stdio_server("fragile")])
        await mcp.wait_for_startup()
        await agent.wait_turn_over(await agent.prompt())
        with anyio.fail_after(WAIT_S):
            while len(payloads_of(await agent.history(), NotificationReceived)) < 2:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        history = await agent.history()

    [result] = results(history)
    assert result.is_error
    assert result.model_text is not None
    assert result.model_text.startswith("MCP server 'fragile' stopped while 'crash' was running")
    lost, back = payloads_of(history, NotificationReceived)
    assert lost.source == back.source == "mcp/fragile"
    assert lost.text.startswith(
        "MCP server `fragile` disconnected; its tools are unavailable until it is back. "
        "reconnecting in 0.01 s (attempt 1 of 2): the server process exited with code 3"
    )
    assert back == NotificationReceived(
        "mcp/fragile", "MCP server `fragile` reconnected; its tools are available again."
    )
    # The person hears of both: lost (a warning: until it is back), back (info).
    assert [(n.severity, n.title) for n in notices] == [
        (NoticeSeverity.WARNING, "MCP server fragile disconnected"),
        (NoticeSeverity.INFO, "MCP server fragile reconnected"),
    ]


async def test_a_server_that_fails_to_start_is_a_notification(tmp_path: Path) -> None:
    notices: list[Notice] = []
    async with in_process_agent({"replies": [[{"text": "."}]]}, tmp_path, notices=notices) as agent:
        mcp = mcp_of(agent)
        await mcp.connect([StdioServerConfig(name="missing", command=str(tmp_path / "nothing"))])
        await mcp.wait_for_startup()
        with anyio.fail_after(WAIT_S):
            while not payloads_of(await agent.history(), NotificationReceived):  # noqa: ASYNC110
                await anyio.sleep(0.01)
        [notice] = payloads_of(await agent.history(), NotificationReceived)

    assert notice.source == "mcp/missing"
    assert notice.text.startswith("MCP server `missing` failed: ")
    assert notice.text.endswith("Its tools are unavailable.")
    # The person hears of it as an error: its tools are gone.
    [told] = notices
    assert (told.severity, told.title) == (NoticeSeverity.ERROR, "MCP server missing failed")
    assert (told.description or "").endswith("Its tools are unavailable; /mcp shows why.")


async def test_closing_the_runtime_ends_the_sessions_stdio_servers(tmp_path: Path) -> None:
    script = {"replies": [[call("mcp__calc__pid")], [{"text": "."}]]}
    async with in_process_agent(script, tmp_path) as agent:
        agent.controls.mode = PermissionMode.BYPASS
        await mcp_of(agent).connect([stdio_server("calc")])
        await mcp_of(agent).wait_for_startup()
        await agent.wait_turn_over(await agent.prompt())
        [result] = results(await agent.history())
        assert result.model_text is not None
        pid = int(result.model_text)
        assert process_alive(pid)

    assert not process_alive(pid)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A workspace whose `.acp-agent/config.toml` declares the server `repo`."""
    (tmp_path / ".acp-agent").mkdir()
    (tmp_path / ".acp-agent" / "config.toml").write_text(
        '[mcp_servers.repo]\ncommand = "repo-mcp"\n'
    )
    return tmp_path.resolve()


async def test_the_status_report_shows_a_disabled_project_server_and_how_to_enable_it(
    project: Path,
) -> None:
    async with in_process_agent({"replies": [[{"text": "."}]]}, project) as agent:
        mcp = mcp_of(agent)
        await mcp.connect([stdio_server("calc")])
        await mcp.wait_for_startup()
        statuses = {status.name: status.state for status in mcp.statuses()}
        report = mcp.status_report()

    assert statuses == {"calc": ServerState.READY, "repo": ServerState.DISABLED}
    assert "- **calc** (stdio, user): ready" in report
    assert "- **repo** (stdio, project): disabled" in report
    assert "[[mcp.enabled_project_servers]]" in report
    assert f'project = "{project}"' in report
