"""McpServerManager against real MCP servers (the SDK's MCPServer) over stdio, HTTP and SSE."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import anyio
import attrs
import pytest

from acp_agent.mcp import (
    DEFAULT_TOOL_TIMEOUT_S,
    TOOL_NAME_PATTERN,
    HttpServerConfig,
    McpOrigin,
    McpServerManager,
    ReconnectPolicy,
    ServerState,
    ServerStatusChanged,
    SseServerConfig,
    StdioServerConfig,
    ToolSetChanged,
    load_configured_servers,
)
from acp_agent.toolkit import Effect, ImageContent, PermissionNeed, TextContent
from tests.mcp.servers.sample_png import PNG
from tests.mcp.support import (
    WAIT_S,
    EventLog,
    RecordingProgress,
    http_server,
    process_alive,
    stdio_server,
    tool_context,
)

pytestmark = pytest.mark.anyio

FAST_RECONNECT = ReconnectPolicy(delays_s=(0.01, 0.01))


async def test_a_tool_call_runs_end_to_end_through_the_manager_and_the_tool(
    tmp_path: Path,
) -> None:
    async with McpServerManager([stdio_server("calc")], cwd=tmp_path) as manager:
        await manager.wait_settled()
        assert manager.status("calc").state is ServerState.READY
        tool = manager.tool_set.by_name()["mcp__calc__add"]
        assert tool.definition.input_schema["type"] == "object"
        assert set(tool.definition.input_schema["properties"]) == {"a", "b"}
        assert tool.permission({"a": 1, "b": 2}, [tmp_path]) == PermissionNeed(
            effect=Effect.OTHER,
            target="mcp__calc__add",
            note="Tool 'add' of MCP server 'calc' (user)",
        )

        result = await tool.run({"a": 2, "b": 40}, tool_context(tmp_path))

    assert not result.is_error
    assert result.content == (TextContent("42"),)
    assert result.model_text == "42"
    assert result.raw_output == {"result": 42}


async def test_every_offered_name_follows_the_providers_rules(tmp_path: Path) -> None:
    async with McpServerManager([stdio_server("my tools.v2")], cwd=tmp_path) as manager:
        await manager.wait_settled()
        names = [tool.definition.name for tool in manager.tool_set.tools]
    assert "mcp__my_tools_v2__add" in names
    assert all(TOOL_NAME_PATTERN.match(name) for name in names)


async def test_an_image_result_reaches_the_editor_as_an_image(tmp_path: Path) -> None:
    async with McpServerManager([stdio_server("art")], cwd=tmp_path) as manager:
        await manager.wait_settled()
        result = await manager.tool_set.by_name()["mcp__art__picture"].run(
            {}, tool_context(tmp_path)
        )

    assert result.content == (
        ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png"),
    )
    assert result.model_text == f"[image: image/png, {len(PNG)} bytes; shown to the user]"


async def test_an_embedded_resource_result_becomes_its_text(tmp_path: Path) -> None:
    async with McpServerManager([stdio_server("files")], cwd=tmp_path) as manager:
        await manager.wait_settled()
        result = await manager.tool_set.by_name()["mcp__files__document"].run(
            {}, tool_context(tmp_path)
        )
    assert result.content == (TextContent("file:///notes/todo.txt:\nbuy milk"),)


async def test_starting_does_not_wait_for_a_server_that_never_answers(tmp_path: Path) -> None:
    silent = stdio_server("silent", "silent_server.py", startup_timeout_s=4)
    async with McpServerManager([silent, stdio_server("calc")], cwd=tmp_path) as manager:
        log = EventLog(manager)
        # Back from starting, and nothing has been waited for.
        assert manager.status("silent").state is ServerState.CONNECTING
        assert manager.status("calc").state is ServerState.CONNECTING

        await log.wait_for_state("calc", ServerState.READY)
        # The other server's tools are offered while the silent one still connects.
        assert manager.status("silent").state is ServerState.CONNECTING
        assert "mcp__calc__add" in manager.tool_set.by_name()

        failed = await log.wait_for_state("silent", ServerState.FAILED)

    assert failed.status.error == "did not start (start, handshake and tool list) within 4 s"
    assert not any(tool.server == "silent" for tool in manager.tool_set.tools)


async def test_a_command_that_cannot_start_fails_with_the_reason(tmp_path: Path) -> None:
    missing = StdioServerConfig(name="missing", command=str(tmp_path / "no-such-server"))
    async with McpServerManager([missing], cwd=tmp_path) as manager:
        await manager.wait_settled()
        status = manager.status("missing")
    assert status.state is ServerState.FAILED
    assert status.error is not None
    assert "No such file or directory" in status.error


async def test_a_crash_mid_call_fails_the_call_clearly_and_the_server_reconnects(
    tmp_path: Path,
) -> None:
    async with McpServerManager(
        [stdio_server("fragile")], cwd=tmp_path, reconnect=FAST_RECONNECT
    ) as manager:
        await manager.wait_settled()
        log = EventLog(manager)
        before = manager.tool_set.by_name()

        result = await before["mcp__fragile__crash"].run({}, tool_context(tmp_path))

        assert result.is_error
        assert result.model_text.startswith(
            "MCP server 'fragile' stopped while 'crash' was running (the server process "
            "exited with code 3; its stderr ended with:\ncrashing on purpose). Whether the "
            "call took effect is unknown"
        )
        await log.wait_for(
            lambda e: (
                isinstance(e, ServerStatusChanged)
                and e.status.state is ServerState.READY
                and e.previous is ServerState.CONNECTING
            )
        )
        assert log.states("fragile") == [
            ServerState.DISCONNECTED,
            ServerState.CONNECTING,
            ServerState.READY,
        ]
        disconnected = next(
            e for e in log.events if isinstance(e, ServerStatusChanged) and e.status.error
        )
        assert disconnected.status.error is not None
        assert disconnected.status.error.startswith(
            "reconnecting in 0.01 s (attempt 1 of 2): the server process exited with code 3"
        )

        after = manager.tool_set.by_name()
        fresh = await after["mcp__fragile__add"].run({"a": 1, "b": 1}, tool_context(tmp_path))
        stale = await before["mcp__fragile__add"].run({"a": 1, "b": 1}, tool_context(tmp_path))

    assert fresh.model_text == "2"
    assert after["mcp__fragile__add"].generation > before["mcp__fragile__add"].generation
    # A tool of the lost connection never runs on the new one.
    assert stale.is_error
    assert "is no longer connected" in stale.model_text
    assert "'add' was listed by that earlier connection and was not run" in stale.model_text


async def test_a_server_that_keeps_failing_ends_failed_after_the_last_reconnect(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "crashed"
    server = stdio_server("doomed", env={"CRASH_MARKER": str(marker)})
    async with McpServerManager([server], cwd=tmp_path, reconnect=FAST_RECONNECT) as manager:
        await manager.wait_settled()
        log = EventLog(manager)
        await manager.tool_set.by_name()["mcp__doomed__crash"].run({}, tool_context(tmp_path))
        failed = await log.wait_for_state("doomed", ServerState.FAILED)

    assert log.states("doomed") == [
        ServerState.DISCONNECTED,
        ServerState.CONNECTING,
        ServerState.DISCONNECTED,
        ServerState.CONNECTING,
        ServerState.FAILED,
    ]
    assert failed.status.error is not None
    assert failed.status.error.startswith(
        "gave up after 2 reconnect attempt(s): the server process exited with code 7"
    )
    assert failed.status.error.endswith("refusing to start: the crash marker is present")


async def test_a_tool_list_change_mid_call_is_a_new_generation_and_the_call_keeps_its_binding(
    tmp_path: Path,
) -> None:
    async with McpServerManager([stdio_server("growing")], cwd=tmp_path) as manager:
        log = EventLog(manager)
        await manager.wait_settled()
        first = manager.tool_set
        assert "mcp__growing__grown" not in first.by_name()
        in_flight = first.by_name()["mcp__growing__grow_and_wait"]
        results = []

        async def call() -> None:
            results.append(await in_flight.run({}, tool_context(tmp_path)))

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            changed = await log.wait_for(
                lambda e: (
                    isinstance(e, ToolSetChanged) and "mcp__growing__grown" in e.tool_set.by_name()
                )
            )
            assert isinstance(changed, ToolSetChanged)
            second = changed.tool_set
            assert results == []  # still running on the first generation's binding

            released = await second.by_name()["mcp__growing__release"].run(
                {}, tool_context(tmp_path)
            )
            assert released.model_text == "released"

    assert second.generation == first.generation + 1
    assert second.by_name()["mcp__growing__grow_and_wait"] is not in_flight
    assert in_flight.generation == first.generation
    assert [result.model_text for result in results] == ["finished on its original binding"]


async def test_closing_ends_stdio_servers_with_their_process_group(tmp_path: Path) -> None:
    async with McpServerManager([stdio_server("spawner")], cwd=tmp_path) as manager:
        await manager.wait_settled()
        tools = manager.tool_set.by_name()
        server_pid = int(
            (await tools["mcp__spawner__pid"].run({}, tool_context(tmp_path))).model_text
        )
        child_pid = int(
            (await tools["mcp__spawner__spawn_child"].run({}, tool_context(tmp_path))).model_text
        )
        assert process_alive(server_pid)
        assert process_alive(child_pid)

    assert not process_alive(server_pid)
    assert not process_alive(child_pid)


async def test_a_call_in_flight_when_the_session_closes_says_so(tmp_path: Path) -> None:
    results = []
    async with McpServerManager([stdio_server("slow")], cwd=tmp_path) as manager:
        await manager.wait_settled()
        tool = manager.tool_set.by_name()["mcp__slow__grow_and_wait"]
        async with anyio.create_task_group() as group:

            async def call() -> None:
                results.append(await tool.run({}, tool_context(tmp_path)))

            group.start_soon(call)
            await EventLog(manager).wait_for(lambda e: isinstance(e, ToolSetChanged))
            await manager.aclose()

    assert len(results) == 1
    assert results[0].is_error
    assert results[0].model_text.startswith(
        "The session closed its connection to MCP server 'slow' while 'grow_and_wait' was running"
    )


async def test_disabled_servers_are_reported_and_never_started(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".acp-agent").mkdir(parents=True)
    (project / ".acp-agent" / "config.toml").write_text(
        f"[mcp_servers.repo]\ncommand = {sys.executable!r}\n"
        f"args = [{str(Path(__file__).parent / 'servers' / 'tools_server.py')!r}]\n"
    )
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    configured = load_configured_servers(config_dir, project)
    async with McpServerManager(
        configured.servers, disabled=configured.disabled, cwd=project
    ) as manager:
        await manager.wait_settled()
        status = manager.status("repo")
        assert status.state is ServerState.DISABLED
        assert manager.tool_set.tools == ()

    assert status.enable_with is not None
    (config_dir / "config.toml").write_text(status.enable_with)
    enabled = load_configured_servers(config_dir, project)
    async with McpServerManager(enabled.servers, disabled=enabled.disabled, cwd=project) as manager:
        await manager.wait_settled()
        assert manager.status("repo").state is ServerState.READY
        assert manager.status("repo").origin is McpOrigin.PROJECT
        assert "mcp__repo__add" in manager.tool_set.by_name()


async def test_progress_notifications_reach_the_progress_sink(tmp_path: Path) -> None:
    progress = RecordingProgress()
    async with McpServerManager([stdio_server("calc")], cwd=tmp_path) as manager:
        await manager.wait_settled()
        result = await manager.tool_set.by_name()["mcp__calc__count"].run(
            {"steps": 2}, tool_context(tmp_path, progress)
        )
    assert result.model_text == "counted"
    assert progress.updates == [
        (TextContent("Progress: 1/2 step 1"),),
        (TextContent("Progress: 2/2 step 2"),),
    ]


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_tool_call_runs_end_to_end_over_http_transports(
    tmp_path: Path, transport: str
) -> None:
    with http_server(transport) as server:
        config = (
            HttpServerConfig(name="remote", url=server.url)
            if transport == "http"
            else SseServerConfig(name="remote", url=server.url)
        )
        async with McpServerManager([config], cwd=tmp_path) as manager:
            await manager.wait_settled()
            assert manager.status("remote").transport == transport
            tools = manager.tool_set.by_name()
            added = await tools["mcp__remote__add"].run({"a": 20, "b": 22}, tool_context(tmp_path))
            image = await tools["mcp__remote__picture"].run({}, tool_context(tmp_path))

    assert added.model_text == "42"
    assert image.content == (
        ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png"),
    )


async def test_an_http_server_that_goes_away_fails_the_call_clearly_and_ends_failed(
    tmp_path: Path,
) -> None:
    with http_server("http") as server:
        config = HttpServerConfig(name="remote", url=server.url)
        async with McpServerManager([config], cwd=tmp_path, reconnect=FAST_RECONNECT) as manager:
            await manager.wait_settled()
            log = EventLog(manager)
            tool = manager.tool_set.by_name()["mcp__remote__add"]
            server.stop()

            result = await tool.run({"a": 1, "b": 2}, tool_context(tmp_path))
            failed = await log.wait_for_state("remote", ServerState.FAILED)

    assert result.is_error
    assert result.model_text.startswith("MCP server 'remote' stopped while 'add' was running")
    assert log.states("remote")[0] is ServerState.DISCONNECTED
    assert failed.status.error is not None
    assert failed.status.error.startswith("gave up after 2 reconnect attempt(s)")
    assert manager.tool_set.tools == ()


async def test_waiting_for_startup_covers_first_connections_not_reconnects(tmp_path: Path) -> None:
    slow_retry = ReconnectPolicy(delays_s=(60.0,))
    silent = stdio_server("silent", "silent_server.py", startup_timeout_s=1)
    servers = [stdio_server("fragile"), silent]
    async with McpServerManager(servers, cwd=tmp_path, reconnect=slow_retry) as manager:
        await manager.wait_started()
        assert manager.status("fragile").state is ServerState.READY
        assert manager.status("silent").state is ServerState.FAILED

        log = EventLog(manager)
        await manager.tool_set.by_name()["mcp__fragile__crash"].run({}, tool_context(tmp_path))
        await log.wait_for_state("fragile", ServerState.DISCONNECTED)
        with anyio.fail_after(WAIT_S):
            await manager.wait_started()  # the reconnect, a minute away, is not waited for
        assert manager.status("fragile").state is ServerState.DISCONNECTED


async def test_a_call_past_its_timeout_is_abandoned_and_the_server_goes_on(tmp_path: Path) -> None:
    assert stdio_server("default").tool_timeout_s == DEFAULT_TOOL_TIMEOUT_S  # never unbounded
    slow = attrs.evolve(stdio_server("slow"), tool_timeout_s=0.5)
    async with McpServerManager([slow], cwd=tmp_path) as manager:
        await manager.wait_settled()
        tools = manager.tool_set.by_name()
        hung = await tools["mcp__slow__grow_and_wait"].run({}, tool_context(tmp_path))
        assert hung.is_error
        assert hung.model_text.startswith(
            "MCP server 'slow' did not finish 'grow_and_wait' within 0.5 s; the call was abandoned"
        )
        echoed = await tools["mcp__slow__echo"].run({"text": "still here"}, tool_context(tmp_path))
        assert echoed.model_text == "still here"
