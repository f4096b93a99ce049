"""Interop: the official ACP Python SDK (`agent-client-protocol`) drives acp-agent.

The SDK is an independent implementation of the client side, so this
catches wire mistakes our own client would share with our agent.
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp
import pytest
from acp import schema

from tests.support import agent_command, agent_env

pytestmark = pytest.mark.e2e


class RecordingClient:
    """An SDK `Client` that records updates and offers nothing else."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.update_arrived = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.update_arrived.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("session/request_permission")


def _spawn(script: str, client: RecordingClient) -> Any:
    command = agent_command(script=script)
    return acp.spawn_agent_process(
        client, command[0], *command[1:], env=agent_env(), transport_kwargs={"stderr": None}
    )


async def test_official_sdk_client_initializes_opens_a_session_and_gets_the_scripted_reply():
    client = RecordingClient()
    async with _spawn("greeting.json", client) as (conn, process):
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd="/tmp", mcp_servers=[])
        response = await conn.prompt(
            session_id=session.session_id, prompt=[acp.text_block("Hello agent")]
        )

    assert init.protocol_version == 1
    assert init.agent_info is not None
    assert init.agent_info.name == "acp-agent"
    assert response.stop_reason == "end_turn"
    kinds = [type(update) for _, update in client.updates]
    # The session's commands follow its creation; its title follows the first exchange.
    assert kinds == [schema.AvailableCommandsUpdate, schema.AgentThoughtChunk] + [
        schema.AgentMessageChunk
    ] * 3 + [schema.UsageUpdate, schema.SessionInfoUpdate]
    assert "".join(u.content.text for _, u in client.updates[2:5]) == "Hello, world."
    assert client.updates[-1][1].title == "Hello agent"
    assert process.returncode == 0


async def test_official_sdk_client_cancels_a_turn_and_gets_stop_reason_cancelled():
    client = RecordingClient()
    async with _spawn("slow.json", client) as (conn, process):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd="/tmp", mcp_servers=[])
        turn = asyncio.create_task(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block("Go slowly")])
        )
        await asyncio.wait_for(client.update_arrived.wait(), timeout=10)
        await conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(turn, timeout=10)

    assert response.stop_reason == "cancelled"
    assert process.returncode == 0
