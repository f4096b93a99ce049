"""The engine in process, both ends wired to each other: what our own engine must get right.

Each end's writer hands the line to the other end's `receive_line` on the next
loop turn, as a pipe would, so requests cross in both directions while handlers
run, and a late answer to an abandoned request arrives as it does over stdio.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from protocol import methods, types
from protocol._dispatch import AcpProtocol, AgentSideProtocol, ClientSideProtocol
from protocol.converter import get_converter
from protocol.errors import PeerTimedOut


class _Wire:
    """Lines from one end to the other, each delivered on a later loop turn."""

    def __init__(self, target: AcpProtocol) -> None:
        self.target = target
        self.lines: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.lines.append(data)
        asyncio.get_running_loop().call_soon(self.target.receive_line, data)


_Pair = tuple[AgentSideProtocol, ClientSideProtocol, _Wire, _Wire]


@pytest.fixture
async def pair() -> AsyncIterator[_Pair]:
    """Both ends, their handlers run in one task group (as a connection's are)."""
    agent = AgentSideProtocol(get_converter())
    client = ClientSideProtocol(get_converter())
    to_client, to_agent = _Wire(client), _Wire(agent)
    agent.set_writer(to_client)
    client.set_writer(to_agent)
    async with anyio.create_task_group() as task_group:
        agent.set_task_group(task_group)
        client.set_task_group(task_group)
        yield agent, client, to_client, to_agent
        task_group.cancel_scope.cancel()


def _read(path: str) -> types.ReadTextFileRequest:
    return types.ReadTextFileRequest(session_id="s", path=path)


async def test_requests_cross_in_both_directions_while_handlers_run(
    pair: _Pair,
) -> None:
    agent, client, _, _ = pair
    reads: list[str] = []

    async def read_text_file(params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        reads.append(params.path)
        await asyncio.sleep(0.01)
        return types.ReadTextFileResponse(content=f"contents of {params.path}")

    async def prompt(params: types.PromptRequest) -> types.PromptResponse:
        text = params.prompt[0].text  # type: ignore[union-attr]
        # Each prompt asks the client while the other prompt is still running.
        read = await agent.request(methods.FS_READ_TEXT_FILE, _read(f"/{text}"))
        assert read.content == f"contents of /{text}"
        return types.PromptResponse(stop_reason=types.StopReason.END_TURN)

    client.register(methods.FS_READ_TEXT_FILE, read_text_file)
    agent.register(methods.SESSION_PROMPT, prompt)

    def prompt_request(text: str) -> types.PromptRequest:
        return types.PromptRequest(session_id="s", prompt=[types.TextContent(text=text)])

    answers = await asyncio.wait_for(
        asyncio.gather(
            *(client.request(methods.SESSION_PROMPT, prompt_request(f"p{i}")) for i in range(5))
        ),
        5,
    )

    assert [a.stop_reason for a in answers] == [types.StopReason.END_TURN] * 5
    assert sorted(reads) == [f"/p{i}" for i in range(5)]
    assert agent._pending == {}
    assert client._pending == {}
    assert agent._running == {}


async def test_a_late_answer_to_a_cancelled_request_is_dropped(
    pair: _Pair,
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent, client, to_client, _ = pair
    release = asyncio.Event()

    async def read_text_file(params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        await release.wait()  # the client answers only after the agent gave up
        return types.ReadTextFileResponse(content="late")

    # The client ignores `$/cancel_request` here, so its answer does come, late.
    client.register(methods.FS_READ_TEXT_FILE, read_text_file)
    client._cancel_incoming = lambda raw_params: None  # type: ignore[method-assign]
    asking = asyncio.ensure_future(agent.request(methods.FS_READ_TEXT_FILE, _read("/a")))
    await asyncio.sleep(0.02)
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    with caplog.at_level(logging.DEBUG, logger="protocol._dispatch"):
        release.set()
        await asyncio.sleep(0.05)
    # The next request still gets its own answer.
    release.set()
    read = await asyncio.wait_for(agent.request(methods.FS_READ_TEXT_FILE, _read("/b")), 5)

    sent = [line.decode() for line in to_client.lines]
    assert any('"method":"$/cancel_request"' in line for line in sent)
    assert "Dropped the late answer to abandoned request 'agent-1'" in caplog.text
    assert "unknown request id" not in caplog.text
    assert read.content == "late"
    assert agent._pending == {}


async def test_a_request_past_its_deadline_is_withdrawn_and_its_late_answer_dropped(
    pair: _Pair,
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent, client, to_client, _ = pair
    release = asyncio.Event()

    async def read_text_file(params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        await release.wait()
        return types.ReadTextFileResponse(content="late")

    client.register(methods.FS_READ_TEXT_FILE, read_text_file)
    client._cancel_incoming = lambda raw_params: None  # type: ignore[method-assign]
    with pytest.raises(PeerTimedOut) as timed_out:
        await agent.request(methods.FS_READ_TEXT_FILE, _read("/a"), timeout_s=0.05)
    with caplog.at_level(logging.DEBUG, logger="protocol._dispatch"):
        release.set()
        await asyncio.sleep(0.05)

    assert str(timed_out.value) == "the peer did not answer fs/read_text_file within 0.05 s"
    cancels = [json.loads(line) for line in to_client.lines if b"$/cancel_request" in line]
    assert cancels == [
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "agent-1"}}
    ]
    assert "Dropped the late answer to abandoned request 'agent-1'" in caplog.text
    assert agent._pending == {}


async def test_an_unreadable_line_is_answered_and_logged_and_fails_no_pending_request(
    pair: _Pair,
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent, client, to_client, _ = pair
    answer = asyncio.Event()

    async def read_text_file(params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        await answer.wait()
        return types.ReadTextFileResponse(content="in the end")

    client.register(methods.FS_READ_TEXT_FILE, read_text_file)
    asking = asyncio.ensure_future(agent.request(methods.FS_READ_TEXT_FILE, _read("/a")))
    await asyncio.sleep(0.02)
    garbage = b'{"jsonrpc":"2.0","id":"agent-1","result":{"content":"\xff' + b"x" * 300
    with caplog.at_level(logging.WARNING, logger="protocol._dispatch"):
        agent.receive_line(garbage)
    await asyncio.sleep(0.02)
    still_waiting = not asking.done()
    answer.set()
    read = await asyncio.wait_for(asking, 5)

    assert still_waiting
    assert read.content == "in the end"
    assert json.loads(to_client.lines[-1]) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: invalid UTF-8 at byte 53"},
    }
    assert repr(garbage[:200]) in caplog.text
    assert repr(garbage[:201]) not in caplog.text


async def test_a_cancelled_handler_is_answered_request_cancelled_and_leaves_no_trace(
    pair: _Pair,
) -> None:
    agent, client, to_client, _ = pair
    started = asyncio.Event()

    async def prompt(params: types.PromptRequest) -> types.PromptResponse:
        started.set()
        await asyncio.sleep(60)
        raise AssertionError("not cancelled")

    agent.register(methods.SESSION_PROMPT, prompt)
    request = types.PromptRequest(session_id="s", prompt=[types.TextContent(text="go")])
    asking = asyncio.ensure_future(client.request(methods.SESSION_PROMPT, request))
    await asyncio.wait_for(started.wait(), 5)
    asking.cancel()  # the client gives up: `$/cancel_request` goes to the agent
    with pytest.raises(asyncio.CancelledError):
        await asking
    async with asyncio.timeout(5):
        while agent._running:  # noqa: ASYNC110 - the engine has no event for it
            await asyncio.sleep(0.01)

    await asyncio.sleep(0.05)  # the answer crosses the wire
    last: dict[str, Any] = json.loads(to_client.lines[-1])
    assert (last["id"], last["error"]["code"]) == (1, -32800)


async def test_a_request_cancelled_before_its_handler_began_never_runs_it(pair: _Pair) -> None:
    agent, _, to_client, _ = pair
    ran: list[str] = []

    async def prompt(params: types.PromptRequest) -> types.PromptResponse:
        ran.append("prompt")
        return types.PromptResponse(stop_reason=types.StopReason.END_TURN)

    agent.register(methods.SESSION_PROMPT, prompt)
    request = {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}
    # Both lines in one loop turn: the cancel arrives before the handler's task ran.
    agent.receive_line(
        json.dumps(
            {"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": request}
        ).encode()
    )
    agent.receive_line(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}')
    async with asyncio.timeout(5):
        while not to_client.lines:  # noqa: ASYNC110 - the wire has no event for it
            await asyncio.sleep(0.01)

    assert ran == []
    assert json.loads(to_client.lines[-1])["error"]["code"] == -32800


async def test_the_end_of_input_answers_running_handlers_and_leaves_no_task() -> None:
    agent = AgentSideProtocol(get_converter())
    wire = _Wire(ClientSideProtocol(get_converter()))
    agent.set_writer(wire)
    started = asyncio.Event()

    async def prompt(params: types.PromptRequest) -> types.PromptResponse:
        started.set()
        await asyncio.sleep(60)
        raise AssertionError("not cancelled")

    agent.register(methods.SESSION_PROMPT, prompt)
    before = asyncio.all_tasks()
    async with anyio.create_task_group() as task_group:
        agent.set_task_group(task_group)
        for msg_id in (1, 2):
            agent.receive_line(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": msg_id,
                        "method": "session/prompt",
                        "params": {"sessionId": "s", "prompt": []},
                    }
                ).encode()
            )
        await asyncio.wait_for(started.wait(), 5)
        assert agent.running_handlers == 2
        await agent.input_ended(grace_s=5.0)
        assert agent.running_handlers == 0

    # The group ended with the handlers: nothing of the engine's is left running.
    assert asyncio.all_tasks() == before
    answers = sorted((m["id"], m["error"]["code"]) for m in map(json.loads, wire.lines))
    assert answers == [(1, -32800), (2, -32800)]
