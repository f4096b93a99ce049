"""ACP over WebSocket: a token, the Host and the Origin checked; then a client like any other.

One real server per module listening on a Unix socket and on
`ws://127.0.0.1:<any port>/acp`; clients are the `websockets` library's. A
stdio bridge (what an editor launches) and a WebSocket client follow one
session: they see the same updates with the same cursors. A client without
the token, with another's, from a web page's origin or under another host name
is refused before anything is served.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from protocol import methods, types
from tests.support import EditorClient, agent_env, connected, write_script
from tests.support.app_server import ATTACH, ServerProcess, bridge_command, running_server
from tests.support.editor_client import allow_all

pytestmark = pytest.mark.e2e

REPLIES = [[{"text": "Over"}, {"sleep_ms": 200}, {"text": " the web."}]]


class Listening:
    def __init__(self, server: ServerProcess) -> None:
        text = "".join(server.stderr)
        found = re.search(r"listening on (ws://\S+) \(the token is in (\S+)\)", text)
        assert found is not None, text
        self.server = server
        self.url = found.group(1)
        self.token = Path(found.group(2)).read_text().strip()
        self.token_file = Path(found.group(2))


@pytest.fixture(scope="module")
async def listening(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Listening]:
    home = tmp_path_factory.mktemp("ws-home")
    script = write_script(home / "script.json", *REPLIES)
    args = ["--listen", "ws://127.0.0.1:0"]
    async with running_server(home, script=script, args=args) as server:
        yield Listening(server)


class WsClient:
    """JSON-RPC over a WebSocket, as a web page or a remote client would speak it."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.messages: list[dict[str, Any]] = []
        self._ids = 0
        self._reader = asyncio.create_task(self._read())
        self._arrived = asyncio.Event()

    async def _read(self) -> None:
        async for text in self.connection:
            self.messages.append(json.loads(text))
            self._arrived.set()

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self._ids += 1
        ident = self._ids
        await self.connection.send(
            json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        )
        async with asyncio.timeout(15):
            while True:
                for message in self.messages:
                    if message.get("id") == ident and "method" not in message:
                        assert "error" not in message, message
                        return message["result"]
                self._arrived.clear()
                await self._arrived.wait()

    async def wait_until(self, condition: Any) -> None:
        async with asyncio.timeout(15):
            while not condition():
                self._arrived.clear()
                await self._arrived.wait()

    def updates(self, session_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (m["params"]["_meta"]["acp-agent"]["cursor"], m["params"]["update"])
            for m in self.messages
            if m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
        ]


def headers(token: str | None, **more: str) -> dict[str, str]:
    found = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return {**found, **more}


async def refused_with(url: str, **kwargs: Any) -> int:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, **kwargs):
            pass
    return refused.value.response.status_code


async def test_the_token_file_is_private(listening: Listening) -> None:
    assert listening.token_file.stat().st_mode & 0o777 == 0o600
    assert len(listening.token) >= 32


async def test_a_client_without_the_token_or_with_another_is_refused(listening: Listening) -> None:
    url = listening.url
    assert await refused_with(url) == 401
    assert await refused_with(url, additional_headers=headers("not-the-token")) == 401
    assert await refused_with(url, additional_headers={"Authorization": listening.token}) == 401


async def test_a_web_page_of_another_origin_is_refused_even_with_the_token(
    listening: Listening,
) -> None:
    assert (
        await refused_with(
            listening.url,
            additional_headers=headers(listening.token),
            origin="http://evil.example",
        )
        == 403
    )


async def test_another_host_name_is_refused_against_dns_rebinding(listening: Listening) -> None:
    port = int(listening.url.rsplit(":", 1)[1].split("/")[0])
    # A page at evil.example whose name now resolves to 127.0.0.1: its requests say so.
    rebound = f"ws://evil.example:{port}/acp"
    auth = headers(listening.token)
    assert await refused_with(rebound, host="127.0.0.1", port=port, additional_headers=auth) == 403


async def test_a_non_loopback_address_needs_an_explicit_flag(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acp_agent",
        "server",
        "--home",
        str(tmp_path / "home"),
        "--listen",
        "ws://0.0.0.0:0",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=agent_env(),
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert b"--allow-remote" in stderr


async def test_a_bridge_and_a_websocket_client_follow_one_session_alike(
    listening: Listening, tmp_path: Path
) -> None:
    server = listening.server
    command = bridge_command(server.home)
    async with (
        connected(EditorClient(decide=allow_all), command, env=agent_env()) as editor,
        connect(listening.url, additional_headers=headers(listening.token)) as socket,
    ):
        web = WsClient(socket)
        await editor.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1))
        await web.request(methods.INITIALIZE, {"protocolVersion": 1, "clientCapabilities": {}})
        session_id = await editor.new_session(tmp_path)
        await editor.request(ATTACH, {"sessionId": session_id, "replay": "none"})
        attached = await web.request(
            ATTACH, {"sessionId": session_id, "role": "observer", "replay": "start"}
        )
        assert attached["role"] == "observer"

        await editor.prompt(session_id, "Hi")
        await web.wait_until(
            lambda: any(
                u["sessionUpdate"] == "session_info_update" for _, u in web.updates(session_id)
            )
        )

        # The title is each one's last update; the editor's may come a moment later.
        await editor.wait_until(
            lambda: any(
                n.session_id == session_id and isinstance(n.update, types.SessionInfoUpdate)
                for n in editor.updates
            )
        )
        converter = editor.protocol.converter
        seen_by_editor = [
            (n.meta["acp-agent"]["cursor"], converter.unstructure(n.update))
            for n in editor.updates
            if n.session_id == session_id and n.meta and "acp-agent" in n.meta
        ]

        def conversation(updates: list[tuple[str, dict[str, Any]]]) -> list[Any]:
            return [(c, u) for c, u in updates if u["sessionUpdate"] != "available_commands_update"]

        assert conversation(web.updates(session_id)) == conversation(seen_by_editor)
        texts = [
            u["content"]["text"]
            for _, u in web.updates(session_id)
            if u["sessionUpdate"] == "agent_message_chunk"
        ]
        assert "".join(texts) == "Over the web."
