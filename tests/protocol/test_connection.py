"""The connection in both roles, end to end: our client against a small agent on our server.

The agent is `tests/support/protocol_agent.py`, a real subprocess over
real pipes; every line it writes is checked against the schema.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator

import pytest

from protocol import methods, types
from protocol.errors import (
    InternalError,
    MethodNotFound,
    PeerDisconnected,
    RequestCancelled,
    UnstableNotEnabled,
)
from tests.support import PROTOCOL_AGENT, AcpTestClient, connected

pytestmark = pytest.mark.e2e

#: How long a test waits for the agent to exit at all; only a failing test waits this long.
EXIT_WAIT_S = 10.0


@pytest.fixture
async def agent() -> AsyncIterator[AcpTestClient]:
    async with connected(AcpTestClient(), PROTOCOL_AGENT) as client:
        await client.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1))
        yield client


@pytest.fixture
async def unstable_agent() -> AsyncIterator[AcpTestClient]:
    async with connected(AcpTestClient(unstable=True), [*PROTOCOL_AGENT, "--unstable"]) as client:
        yield client


async def _new_session(client: AcpTestClient) -> str:
    response = await client.request(
        methods.SESSION_NEW, types.NewSessionRequest(cwd="/tmp", mcp_servers=[])
    )
    return str(response.session_id)


def _prompt(session_id: str, text: str) -> types.PromptRequest:
    return types.PromptRequest(session_id=session_id, prompt=[types.TextContent(text=text)])


async def test_handler_awaiting_a_client_request_keeps_serving_other_requests(
    agent: AcpTestClient,
):
    session_id = await _new_session(agent)
    served_meanwhile: list[object] = []

    async def read_text_file(params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        # The agent's prompt handler is suspended awaiting this answer; the
        # agent must still serve these before we reply.
        served_meanwhile.append(await _new_session(agent))
        served_meanwhile.append(await agent.request("_test/echo", {"nested": True}))
        return types.ReadTextFileResponse(content=f"contents of {params.path}")

    agent.register(methods.FS_READ_TEXT_FILE, read_text_file)
    response = await agent.request(methods.SESSION_PROMPT, _prompt(session_id, "/tmp/a.txt"))

    assert response == types.PromptResponse(stop_reason=types.StopReason.END_TURN)
    assert served_meanwhile == ["session-2", {"nested": True}]
    assert agent.updates_for(session_id) == [
        types.AgentMessageChunk(content=types.TextContent(text="contents of /tmp/a.txt"))
    ]


async def test_agent_request_ids_are_agent_strings_and_incoming_ids_are_echoed_exactly(
    agent: AcpTestClient,
):
    session_id = await _new_session(agent)
    agent.register(
        methods.FS_READ_TEXT_FILE, lambda params: types.ReadTextFileResponse(content="x")
    )
    await agent.request(methods.SESSION_PROMPT, _prompt(session_id, "/tmp/a.txt"))
    agent.send_raw({"jsonrpc": "2.0", "id": "text-id", "method": "_test/echo", "params": [1]})
    agent.send_raw({"jsonrpc": "2.0", "id": 2**40, "method": "_test/echo", "params": [2]})
    await _wait_for_lines(agent, lambda m: m.get("id") == 2**40)

    agent_requests = [m for m in agent.messages if "method" in m and "id" in m]
    assert [m["id"] for m in agent_requests] == ["agent-1"]
    echoed = {m["id"]: m["result"] for m in agent.messages if "result" in m}
    assert echoed["text-id"] == [1]
    assert echoed[2**40] == [2]


async def test_peer_request_with_the_same_id_as_ours_does_not_disturb_our_request(
    agent: AcpTestClient,
):
    session_id = await _new_session(agent)

    async def read_text_file(params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        # The agent is waiting for its request "agent-1"; send it a request
        # of ours with that very id and see both answered correctly.
        agent.send_raw(
            {"jsonrpc": "2.0", "id": "agent-1", "method": "_test/echo", "params": {"mine": 1}}
        )
        await _wait_for_lines(agent, lambda m: m.get("id") == "agent-1" and "result" in m)
        return types.ReadTextFileResponse(content="the real file")

    agent.register(methods.FS_READ_TEXT_FILE, read_text_file)
    response = await agent.request(methods.SESSION_PROMPT, _prompt(session_id, "/tmp/a.txt"))

    assert response.stop_reason == types.StopReason.END_TURN
    assert agent.updates_for(session_id) == [
        types.AgentMessageChunk(content=types.TextContent(text="the real file"))
    ]
    answer = next(m for m in agent.messages if m.get("id") == "agent-1" and "result" in m)
    assert answer["result"] == {"mine": 1}


async def test_cancel_request_answers_the_running_request_with_request_cancelled(
    agent: AcpTestClient,
):
    session_id = await _new_session(agent)
    prompt = asyncio.create_task(
        agent.request(methods.SESSION_PROMPT, _prompt(session_id, "sleep"))
    )
    await _wait_for_sent(agent, methods.SESSION_PROMPT)
    prompt_id = _last_sent(agent, methods.SESSION_PROMPT)["id"]

    started = time.monotonic()
    agent.notify(methods.CANCEL_REQUEST, types.CancelRequestNotification(request_id=prompt_id))
    with pytest.raises(RequestCancelled):
        await prompt
    assert time.monotonic() - started < 1.0


async def test_a_stop_signal_ends_the_input_as_its_end_would_and_running_requests_are_answered(
    agent: AcpTestClient,
):
    session_id = await _new_session(agent)
    prompt = asyncio.create_task(
        agent.request(methods.SESSION_PROMPT, _prompt(session_id, "sleep"))
    )
    await _wait_for_stderr(agent, "prompt sleeps until cancelled")
    assert agent.process is not None

    agent.process.send_signal(signal.SIGTERM)

    with pytest.raises(RequestCancelled):
        await prompt
    assert await asyncio.wait_for(agent.process.wait(), EXIT_WAIT_S) == 0


async def test_stop_from_another_thread_ends_serving_while_stdin_stays_open(
    agent: AcpTestClient,
):
    assert await agent.request("_test/stop", None) is None
    assert agent.process is not None

    # The test never closes the agent's stdin: `stop()` alone ends it.
    assert await asyncio.wait_for(agent.process.wait(), EXIT_WAIT_S) == 0


async def test_internal_error_keeps_the_traceback_in_the_log_and_off_the_wire(
    agent: AcpTestClient,
):
    with pytest.raises(InternalError):
        await agent.request("_test/crash", {})

    error = next(m["error"] for m in agent.messages if "error" in m)
    assert error["code"] == -32603
    assert "data" not in error
    assert "Traceback" not in error["message"]
    await _wait_for_stderr(agent, "deliberate crash in _test/crash")
    assert any("Traceback" in line for line in agent.stderr_lines)


async def test_extension_methods_get_plain_json_and_notifications_are_never_answered(
    agent: AcpTestClient,
):
    agent.notify("_test/notified", {"first": True})
    agent.notify("_test/notified", None)
    agent.notify("_unknown/notification", {})

    assert await agent.request("_test/echo", {"a": [1, {"b": None}]}) == {"a": [1, {"b": None}]}
    assert await agent.request("_test/notified_count", None) == 2
    answered_ids = [m["id"] for m in agent.messages]
    assert answered_ids == [1, 2, 3]  # initialize, echo, count: nothing for the notifications


async def test_nested_objects_that_look_like_messages_stay_plain_json(agent: AcpTestClient):
    lookalike = {"jsonrpc": "2.0", "id": 99, "method": "initialize", "params": {}}

    assert await agent.request("_test/echo", {"inner": lookalike}) == {"inner": lookalike}


async def test_twenty_megabyte_lines_cross_in_both_directions(agent: AcpTestClient):
    big = {"text": "\u00e9" * (10 * 1024 * 1024)}  # 20 MB of UTF-8 each way

    assert await agent.request("_test/echo", big) == big
    assert max(len(line) for line in agent.received) > 20 * 1024 * 1024


async def test_unknown_extension_request_gets_method_not_found(agent: AcpTestClient):
    with pytest.raises(MethodNotFound):
        await agent.request("_test/no_such_method", {})


async def test_stray_prints_and_child_output_never_reach_the_protocol_stream(
    agent: AcpTestClient,
):
    assert await agent.request("_test/print", None) == {"printed": True}

    for line in agent.received:
        assert json.loads(line)["jsonrpc"] == "2.0"
    await _wait_for_stderr(agent, "stray output from a child process")
    assert any("stray print from a handler" in line for line in agent.stderr_lines)


async def test_unstable_method_is_not_served_unless_the_agent_opted_in(agent: AcpTestClient):
    session_id = await _new_session(agent)
    fork = {"sessionId": session_id, "cwd": "/tmp", "mcpServers": []}

    with pytest.raises(UnstableNotEnabled):
        await agent.request(methods.SESSION_FORK, types.ForkSessionRequest(**_snake(fork)))
    agent.send_raw({"jsonrpc": "2.0", "id": "fork", "method": methods.SESSION_FORK, "params": fork})
    await _wait_for_lines(agent, lambda m: m.get("id") == "fork")

    answer = next(m for m in agent.messages if m.get("id") == "fork")
    assert answer["error"]["code"] == MethodNotFound.CODE


async def test_unstable_method_is_served_when_both_sides_opted_in(unstable_agent: AcpTestClient):
    await unstable_agent.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1))
    session_id = await _new_session(unstable_agent)

    response = await unstable_agent.request(
        methods.SESSION_FORK,
        types.ForkSessionRequest(session_id=session_id, cwd="/tmp", mcp_servers=[]),
    )

    assert response.session_id == f"{session_id}-fork"


async def test_unstable_fields_go_on_the_wire_whatever_the_flag_which_gates_methods_only(
    agent: AcpTestClient, unstable_agent: AcpTestClient
):
    # Neither end opted in: a client's unstable capabilities still go out, are read
    # and are written back (the agent answers them as it decoded them).
    advertised = types.ClientCapabilities(
        subagents=types.SubagentCapabilities(), plan=types.PlanCapabilities()
    )
    answer = await agent.request(
        methods.INITIALIZE,
        types.InitializeRequest(protocol_version=1, client_capabilities=advertised),
    )
    await unstable_agent.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1))
    results = []
    for client in (agent, unstable_agent):
        client.register(
            methods.FS_READ_TEXT_FILE, lambda params: types.ReadTextFileResponse(content="x")
        )
        await client.request(methods.SESSION_PROMPT, _prompt(await _new_session(client), "/a"))
        results.append(
            next(m["result"] for m in client.messages if "stopReason" in m.get("result", {}))
        )

    sent = _last_sent(agent, methods.INITIALIZE)["params"]
    assert sent["clientCapabilities"]["subagents"] == {}  # type: ignore[index]
    assert sent["clientCapabilities"]["plan"] == {}  # type: ignore[index]
    decoded = (answer.meta or {})["clientCapabilities"]
    assert (decoded["subagents"], decoded["plan"]) == ({}, {})
    # The agent decides what it sends: this one sends `usage` only when opted in.
    assert results[0] == {"stopReason": "end_turn"}
    assert results[1] == {
        "stopReason": "end_turn",
        "usage": {"totalTokens": 3, "inputTokens": 1, "outputTokens": 2},
    }


def _snake(wire: dict[str, object]) -> dict[str, object]:
    names = {"sessionId": "session_id", "mcpServers": "mcp_servers"}
    return {names.get(key, key): value for key, value in wire.items()}


async def _wait_for_lines(client: AcpTestClient, matches) -> None:
    await client.wait_until(lambda: any(matches(m) for m in client.messages))


async def _wait_for_sent(client: AcpTestClient, method: str) -> None:
    await client.wait_until(lambda: any(m.get("method") == method for m in client.sent_messages()))


def _last_sent(client: AcpTestClient, method: str) -> dict[str, object]:
    return [m for m in client.sent_messages() if m.get("method") == method][-1]


async def _wait_for_stderr(client: AcpTestClient, text: str) -> None:
    await client.wait_until(lambda: any(text in line for line in client.stderr_lines))


def test_shutdown_callbacks_run_in_order_after_the_input_ends_while_the_loop_runs():
    import os

    from protocol.connection import AgentConnection

    read_end, write_end = os.pipe()
    os.close(write_end)  # the input ends at once
    out_read, out_write = os.pipe()
    ran: list[str] = []

    async def first() -> None:
        await asyncio.sleep(0)  # the loop still runs: callbacks may await
        ran.append(f"first in {asyncio.get_running_loop().is_running()}")

    async def failing() -> None:
        raise RuntimeError("a broken callback does not stop the next")

    async def last() -> None:
        ran.append("last")

    connection = AgentConnection()
    for callback in (first, failing, last):
        connection.on_shutdown(callback)
    with os.fdopen(read_end, "rb") as stdin, os.fdopen(out_write, "wb") as stdout:
        connection.start_io(stdin, stdout)
    os.close(out_read)
    assert ran == ["first in True", "last"]


def test_work_the_connection_started_outlives_the_shutdown_and_is_waited_for():
    import os

    import anyio

    from protocol.connection import AgentConnection

    read_end, write_end = os.pipe()
    os.write(write_end, b'{"jsonrpc":"2.0","method":"_start","params":{}}\n')
    os.close(write_end)  # the input ends right after that line
    out_read, out_write = os.pipe()
    ran: list[str] = []
    connection = AgentConnection()
    working = asyncio.Event()

    async def work() -> None:
        try:
            ran.append("working")
            working.set()
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.01)  # an await in its clean-up: the connection waits
            ran.append("work ended")

    async def failing() -> None:
        raise RuntimeError("it ends alone, logged")

    async def start(params: object) -> None:
        connection.start_soon(work, name="work")
        connection.start_soon(failing, name="failing")

    async def shutdown() -> None:
        await asyncio.wait_for(working.wait(), 5)
        ran.append("shutdown")

    connection.register("_start", start)
    connection.on_shutdown(shutdown)
    with os.fdopen(read_end, "rb") as stdin, os.fdopen(out_write, "wb") as stdout:
        connection.start_io(stdin, stdout)
    os.close(out_read)

    # The work still ran during the shutdown; then it was cancelled, and its clean-up
    # finished before `start_io` returned.
    assert ran == ["working", "shutdown", "work ended"]


async def test_leaving_the_client_connection_stops_the_agent_and_leaves_no_task() -> None:
    before = asyncio.all_tasks()
    async with AcpTestClient() as client:
        await client.start_io(*PROTOCOL_AGENT)
        await client.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1))
        assert asyncio.all_tasks() - before  # its readers, in its task group

    assert client.process is not None
    assert client.process.returncode is not None
    assert asyncio.all_tasks() - before == set()


async def test_a_client_connection_starts_its_agent_only_inside_async_with() -> None:
    with pytest.raises(RuntimeError, match="inside `async with`"):
        await AcpTestClient().start_io(*PROTOCOL_AGENT)


def _started(*command: str) -> subprocess.Popen[bytes]:
    """A process started before any loop, as a headless command starts its agent."""
    return subprocess.Popen(
        list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


async def test_an_agent_started_before_the_loop_is_attached_and_talked_to_as_a_spawned_one() -> (
    None
):
    started = _started(*PROTOCOL_AGENT)
    before = asyncio.all_tasks()
    async with AcpTestClient() as client:
        await client.attach_process(started)
        answer = await client.request(
            methods.INITIALIZE, types.InitializeRequest(protocol_version=1)
        )
        assert answer.protocol_version == 1
        # Twenty megabytes cross too: the attached pipes read lines as long as a spawn's.
        text = "x" * (20 * 1024 * 1024)
        echoed = await client.request("_test/echo", {"text": text})
        assert echoed == {"text": text}
        assert client.process is not None
        assert client.process.pid == started.pid

    # Leaving closed its input; it exited, was reaped, and no task is left.
    assert started.returncode == 0
    assert client.process.returncode == 0
    assert asyncio.all_tasks() - before == set()


async def test_an_attached_agent_that_ignores_the_end_of_its_input_is_terminated() -> None:
    ignoring = _started(
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "while True: time.sleep(1)",
    )
    async with AcpTestClient() as client:
        await client.attach_process(ignoring)
        started = time.monotonic()
        await client.stop(timeout_s=0.2)
    assert ignoring.returncode == -signal.SIGTERM
    assert time.monotonic() - started < EXIT_WAIT_S


async def test_an_attached_agent_that_dies_ends_the_pending_requests() -> None:
    dying = _started(sys.executable, "-c", "import sys; sys.stdin.readline(); sys.exit(3)")
    async with AcpTestClient() as client:
        await client.attach_process(dying)
        with pytest.raises(PeerDisconnected):
            await asyncio.wait_for(
                client.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1)),
                EXIT_WAIT_S,
            )
        assert client.process is not None
        assert await asyncio.wait_for(client.process.wait(), EXIT_WAIT_S) == 3


async def test_a_client_connection_attaches_its_agent_only_inside_async_with() -> None:
    started = _started(*PROTOCOL_AGENT)
    try:
        with pytest.raises(RuntimeError, match="inside `async with`"):
            await AcpTestClient().attach_process(started)
    finally:
        started.stdin.close()  # type: ignore[union-attr]
        assert started.wait(EXIT_WAIT_S) == 0
        started.stdout.close()  # type: ignore[union-attr]
        started.stderr.close()  # type: ignore[union-attr]
