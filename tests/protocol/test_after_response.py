"""`after_response`: work a request handler schedules for right after its response.

Driven in process: lines go in through `receive_line`, and what the agent
writes is collected in order, so the test sees exactly what follows what.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.errors import InvalidRequest


class _Lines:
    """A writer keeping each line the connection writes, decoded."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.written = asyncio.Event()

    def write(self, data: bytes) -> None:
        self.messages.append(json.loads(data))
        self.written.set()

    def close(self) -> None:
        pass


def _connection() -> tuple[AgentConnection, _Lines]:
    connection = AgentConnection()
    lines = _Lines()
    connection.protocol.set_writer(lines, include_headers=False)
    return connection, lines


@asynccontextmanager
async def _serving() -> AsyncIterator[tuple[AgentConnection, _Lines]]:
    """A connection whose handlers run in a task group, as they do when it serves."""
    connection, lines = _connection()
    async with anyio.create_task_group() as task_group:
        connection.protocol.set_task_group(task_group)
        yield connection, lines
        task_group.cancel_scope.cancel()


def _request(msg_id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


def _update(session_id: str, text: str) -> types.SessionNotification:
    return types.SessionNotification(
        session_id=session_id,
        update=types.AgentMessageChunk(content=types.TextContent(text=text)),
    )


async def _settle(lines: _Lines, count: int) -> None:
    async with asyncio.timeout(5):
        while len(lines.messages) < count:
            lines.written.clear()
            await lines.written.wait()
    await asyncio.sleep(0.05)  # nothing more should follow


async def test_notifications_scheduled_by_a_handler_follow_its_response_in_order():
    async with _serving() as (connection, lines):

        async def new_session(params: types.NewSessionRequest) -> types.NewSessionResponse:
            for text in ("first", "second"):
                connection.after_response(
                    lambda text=text: connection.notify(methods.SESSION_UPDATE, _update("s1", text))
                )
            await asyncio.sleep(0.01)  # the response is written after an await, still first
            return types.NewSessionResponse(session_id="s1")

        connection.register(methods.SESSION_NEW, new_session)
        connection.protocol.receive_line(
            _request(1, methods.SESSION_NEW, {"cwd": "/tmp", "mcpServers": []})
        )
        await _settle(lines, 3)

        assert [m.get("id", m.get("method")) for m in lines.messages] == [
            1,
            methods.SESSION_UPDATE,
            methods.SESSION_UPDATE,
        ]
        assert lines.messages[0]["result"] == {"sessionId": "s1"}
        texts = [m["params"]["update"]["content"]["text"] for m in lines.messages[1:]]
        assert texts == ["first", "second"]


async def test_a_failed_request_runs_none_of_its_callbacks():
    async with _serving() as (connection, lines):
        ran: list[str] = []

        async def new_session(params: types.NewSessionRequest) -> types.NewSessionResponse:
            connection.after_response(lambda: ran.append("after"))
            raise InvalidRequest("Invalid request: no")

        connection.register(methods.SESSION_NEW, new_session)
        connection.protocol.receive_line(
            _request(1, methods.SESSION_NEW, {"cwd": "/tmp", "mcpServers": []})
        )
        await _settle(lines, 1)

        assert lines.messages[0]["error"]["code"] == InvalidRequest.CODE
        assert ran == []


async def test_callbacks_belong_to_the_request_that_scheduled_them():
    async with _serving() as (connection, lines):
        release = asyncio.Event()

        async def new_session(params: types.NewSessionRequest) -> types.NewSessionResponse:
            session_id = f"s-{params.cwd.rsplit('/', 1)[-1]}"
            connection.after_response(
                lambda: connection.notify(methods.SESSION_UPDATE, _update(session_id, "hello"))
            )
            if session_id == "s-slow":
                await release.wait()
            return types.NewSessionResponse(session_id=session_id)

        connection.register(methods.SESSION_NEW, new_session)
        connection.protocol.receive_line(
            _request(1, methods.SESSION_NEW, {"cwd": "/w/slow", "mcpServers": []})
        )
        connection.protocol.receive_line(
            _request(2, methods.SESSION_NEW, {"cwd": "/w/fast", "mcpServers": []})
        )
        await _settle(lines, 2)
        release.set()
        await _settle(lines, 4)

        # The fast request's update follows the fast response; the slow one's waits for its own.
        assert [(m.get("id"), m.get("params", {}).get("sessionId")) for m in lines.messages] == [
            (2, None),
            (None, "s-fast"),
            (1, None),
            (None, "s-slow"),
        ]


def test_after_response_outside_a_request_handler_is_misuse():
    connection, _ = _connection()

    with pytest.raises(RuntimeError, match="only for request handlers"):
        connection.after_response(lambda: None)


async def test_a_caller_cancelled_after_the_answer_came_sends_no_cancel_request() -> None:
    connection, lines = _connection()
    request = types.TerminalOutputRequest(session_id="sess_1", terminal_id="term_1")
    asked = asyncio.ensure_future(connection.request(methods.TERMINAL_OUTPUT, request))
    await _settle(lines, 1)
    msg_id = lines.messages[0]["id"]
    # The answer arrives, and the caller is cancelled before it could take it.
    answer = {"jsonrpc": "2.0", "id": msg_id, "result": {"output": "", "truncated": False}}
    connection.protocol.receive_line(json.dumps(answer).encode())
    asked.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asked
    await asyncio.sleep(0.05)
    assert [m.get("method") for m in lines.messages] == [methods.TERMINAL_OUTPUT]

    # Still unanswered when cancelled: the peer is told.
    pending = asyncio.ensure_future(connection.request(methods.TERMINAL_OUTPUT, request))
    await _settle(lines, 2)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    await _settle(lines, 3)
    assert lines.messages[2]["method"] == methods.CANCEL_REQUEST
    assert lines.messages[2]["params"] == {"requestId": lines.messages[1]["id"]}
