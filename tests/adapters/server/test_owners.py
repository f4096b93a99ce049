"""Owners on the app server: each connection is a person, and sees only that person's sessions.

One real server per module, on its Unix socket (the peer's uid: the server's
person, `ACP_AGENT_PERSON` here) and on WebSocket with a token table
(`ACP_AGENT_SERVER_TOKENS`) giving Alice and Bob a token each. What one person
creates the other neither lists, loads, attaches to nor deletes.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from acp_agent.adapters.server import TokenTableError, token_table
from protocol import methods
from tests.adapters.server.test_websocket import WsClient, headers
from tests.support import agent_env, write_script
from tests.support.app_server import ATTACH, ServerProcess, running_server, socket_client

pytestmark = pytest.mark.e2e

TOKENS = {"alice": "alice-token-1", "bob": "bob-token-2"}


class Served:
    def __init__(self, server: ServerProcess) -> None:
        found = re.search(r"listening on (ws://\S+) ", "".join(server.stderr))
        assert found is not None, server.stderr
        self.server = server
        self.url = found.group(1)


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    home = tmp_path_factory.mktemp("owners-home")
    table = home / "tokens"
    table.write_text("".join(f"{person} {token}\n" for person, token in TOKENS.items()))
    table.chmod(0o600)
    env = {**agent_env(), "ACP_AGENT_SERVER_TOKENS": str(table), "ACP_AGENT_PERSON": "carol"}
    script = write_script(home / "script.json", [{"text": "ok"}])
    args = ["--listen", "ws://127.0.0.1:0"]
    async with running_server(home, script=script, args=args, env=env) as server:
        yield Served(server)


async def call(client: WsClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The whole answer (result or error) to one request."""
    client._ids += 1
    ident = client._ids
    message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
    await client.connection.send(json.dumps(message))
    found: list[dict[str, Any]] = []
    await client.wait_until(
        lambda: bool(
            found.extend(m for m in client.messages if m.get("id") == ident and "method" not in m)
            or found
        )
    )
    return found[0]


async def listed(client: WsClient) -> set[str]:
    result = await client.request(methods.SESSION_LIST, {})
    return {entry["sessionId"] for entry in result["sessions"]}


async def test_each_person_sees_only_their_own_sessions(served: Served, tmp_path: Path) -> None:
    async with (
        connect(served.url, additional_headers=headers(TOKENS["alice"])) as alice_socket,
        connect(served.url, additional_headers=headers(TOKENS["bob"])) as bob_socket,
        socket_client(served.server.socket) as carol,
    ):
        alice, bob = WsClient(alice_socket), WsClient(bob_socket)
        for client in (alice, bob):
            await client.request(
                methods.INITIALIZE, {"protocolVersion": 1, "clientCapabilities": {}}
            )
        new = {"cwd": str(tmp_path), "mcpServers": []}
        alices = (await alice.request(methods.SESSION_NEW, new))["sessionId"]
        bobs = (await bob.request(methods.SESSION_NEW, new))["sessionId"]
        carols = await carol.new_session(tmp_path)  # the socket's peer: the server's person

        assert await listed(alice) == {alices}
        assert await listed(bob) == {bobs}
        carol_listed = await carol.list_sessions()
        assert {str(info.session_id) for info in carol_listed.sessions} == {carols}

        # Bob can neither load, attach to, fork nor delete Alice's session: it is unknown
        # to him, as an id that never existed would be.
        loaded = await call(bob, methods.SESSION_LOAD, {"sessionId": alices, **new})
        unknown = await call(bob, methods.SESSION_LOAD, {"sessionId": "sess_nope", **new})
        assert loaded["error"]["code"] == unknown["error"]["code"]
        assert alices in loaded["error"]["message"]
        attached = await call(bob, ATTACH, {"sessionId": alices, "role": "observer"})
        assert "error" in attached, attached
        await bob.request(methods.SESSION_DELETE, {"sessionId": alices})
        assert await listed(alice) == {alices}

        # Alice still uses hers: loading it (open on the server already) is hers to do.
        await alice.request(methods.SESSION_LOAD, {"sessionId": alices, **new})


async def test_an_unknown_token_is_refused(served: Served) -> None:
    from websockets.exceptions import InvalidStatus

    with pytest.raises(InvalidStatus) as refused:
        async with connect(served.url, additional_headers=headers("mallory-token")):
            pass
    assert refused.value.response.status_code == 401


def test_a_token_table_others_may_read_is_refused(tmp_path: Path) -> None:
    table = tmp_path / "tokens"
    table.write_text("alice t1\n")
    table.chmod(0o644)
    with pytest.raises(TokenTableError, match="private"):
        token_table({"ACP_AGENT_SERVER_TOKENS": str(table)})
    table.chmod(0o600)
    assert token_table({"ACP_AGENT_SERVER_TOKENS": str(table)}) == {"t1": "alice"}
    table.write_text("# the team\nalice t1\n\nbob t1\n")
    with pytest.raises(TokenTableError, match="two people"):
        token_table({"ACP_AGENT_SERVER_TOKENS": str(table)})
    table.write_text("alice\n")
    with pytest.raises(TokenTableError, match=":1: expected"):
        token_table({"ACP_AGENT_SERVER_TOKENS": str(table)})
    assert token_table({}) == {}
