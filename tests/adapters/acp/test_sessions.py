"""`session/new`: absolute roots, unique ids, MCP servers accepted."""

from __future__ import annotations

import pytest

from protocol import methods, types
from protocol.errors import InvalidParams
from tests.support import AcpTestClient
from tests.support.steps import initialize, new_session

pytestmark = pytest.mark.e2e


async def test_new_session_with_a_relative_cwd_is_invalid_params_naming_cwd(
    agent: AcpTestClient,
):
    await initialize(agent)

    with pytest.raises(InvalidParams) as caught:
        await new_session(agent, cwd="relative/dir")

    assert caught.value.message == "Invalid params: cwd: must be an absolute path"


async def test_new_session_without_mcp_servers_is_invalid_params_naming_the_field(
    agent: AcpTestClient,
):
    await initialize(agent)

    response = await agent.request_raw(methods.SESSION_NEW, {"cwd": "/tmp"})

    assert response["error"] == {
        "code": InvalidParams.CODE,
        "message": "Invalid params: mcpServers: required field missing",
    }


async def test_new_sessions_get_distinct_ids(agent: AcpTestClient):
    await initialize(agent)

    ids = {await new_session(agent) for _ in range(3)}

    assert len(ids) == 3


async def test_new_session_accepts_mcp_servers_without_connecting_them(agent: AcpTestClient):
    await initialize(agent)
    server = types.McpServerStdio(name="files", command="/usr/bin/false", args=[], env=[])

    response = await agent.request(
        methods.SESSION_NEW, types.NewSessionRequest(cwd="/tmp", mcp_servers=[server])
    )

    assert response.session_id
