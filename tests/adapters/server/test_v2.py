"""ACP v2 through the app server: a connection is a connection, whatever version it speaks.

One real server listening on its Unix socket and on WebSocket. A v1 editor (a
stdio bridge, what an editor launches) makes a session and attaches as an
observer; a v2 client over the WebSocket attaches to it as a controller, prompts,
and is asked the turn's permission question in v2. Each sees the turn in its own
protocol, every line the v2 client got is valid v2 (the bridge's are checked
against v1 by the launcher), and the observer learns who answered. An option
each sets reaches the other.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from protocol import methods, types
from protocol.validation import WireValidator
from tests.support import EditorClient, agent_env, connected, write_script
from tests.support.app_server import ATTACH, ServerProcess, bridge_command, running_server

pytestmark = pytest.mark.e2e

REPLIES = [
    [
        {"text": "Writing."},
        {"tool_call": {"name": "write", "arguments": {"path": "note.txt", "content": "hi\n"}}},
    ],
    [{"text": "Written."}],
]


class V2WebSocketClient:
    """ACP v2 over a WebSocket: requests and their answers, every line kept, the agent's
    permission questions answered with its first `allow_once` option."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.sent: list[bytes] = []
        self.received: list[bytes] = []
        self.messages: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []
        self._ids = 0
        self._arrived = asyncio.Event()

    async def read(self) -> None:
        async for text in self.connection:
            data = text.encode() if isinstance(text, str) else text
            self.received.append(data)
            message = json.loads(data)
            self.messages.append(message)
            self._arrived.set()
            if message.get("method") == "session/request_permission":
                await self._answer(message)

    async def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode()
        self.sent.append(data)
        await self.connection.send(data.decode())

    async def _answer(self, question: dict[str, Any]) -> None:
        self.questions.append(question["params"])
        option = next(o for o in question["params"]["options"] if o["kind"] == "allow_once")
        outcome = {"outcome": "selected", "optionId": option["optionId"]}
        await self._send({"jsonrpc": "2.0", "id": question["id"], "result": {"outcome": outcome}})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self._ids += 1
        ident = self._ids
        await self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})

        def answer() -> dict[str, Any] | None:
            return next(
                (m for m in self.messages if m.get("id") == ident and "method" not in m), None
            )

        await self.wait_until(lambda: answer() is not None)
        found = answer()
        assert found is not None
        assert "error" not in found, found
        return found["result"]

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(15):
            while not condition():
                self._arrived.clear()
                await self._arrived.wait()

    def updates(self, session_id: str) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.messages
            if m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
        ]


def token_in(path: str) -> str:
    """The server's WebSocket token, from the file it named."""
    return Path(path).read_text().strip()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[ServerProcess, str, str]]:
    home = tmp_path / "home"
    home.mkdir()
    script = write_script(home / "script.json", *REPLIES)
    args = ["--listen", "ws://127.0.0.1:0"]
    async with running_server(home, script=script, args=args) as running:
        text = "".join(running.stderr)
        found = re.search(r"listening on (ws://\S+) \(the token is in (\S+)\)", text)
        assert found is not None, text
        yield running, found.group(1), token_in(found.group(2))


async def test_a_v2_client_over_the_websocket_and_a_v1_editor_share_one_session(
    server: tuple[ServerProcess, str, str], tmp_path: Path
) -> None:
    process, url, token = server
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    auth = {"Authorization": f"Bearer {token}"}
    async with (
        connected(EditorClient(), bridge_command(process.home), env=agent_env()) as editor,
        connect(url, additional_headers=auth) as socket,
    ):
        web = V2WebSocketClient(socket)
        reading = asyncio.create_task(web.read())
        try:
            started = await web.request(
                "initialize",
                {"protocolVersion": 2, "info": {"name": "web", "version": "1"}, "capabilities": {}},
            )
            assert started["protocolVersion"] == 2
            web_id = started["_meta"]["acp-agent"]["clientId"]
            await editor.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1))
            session_id = await editor.new_session(workspace)
            await editor.request(ATTACH, {"sessionId": session_id, "role": "observer"})

            attached = await web.request(
                ATTACH,
                {"sessionId": session_id, "role": "controller", "replay": "start", "files": True},
            )
            assert attached["role"] == "controller"
            assert attached["files"] is False  # v2 has no client file system
            assert attached["clientId"] == web_id
            assert any(o["configId"] == "mode" for o in attached["configOptions"])
            assert any(c["name"] == "title" for c in attached["availableCommands"])
            assert web.updates(session_id)[-1] == {
                "sessionUpdate": "state_update",
                "state": "idle",
                "background": [],
            }

            blocks = [{"type": "text", "text": "Write a note"}]
            accepted = await web.request(
                "session/prompt", {"sessionId": session_id, "prompt": blocks}
            )

            def states() -> list[dict[str, Any]]:
                return [u for u in web.updates(session_id) if u["sessionUpdate"] == "state_update"]

            # The v2 client: its own message echoed, asked in v2, the turn to its end.
            await web.wait_until(lambda: len(states()) == 5)
            assert [u["state"] for u in states()] == [
                "idle",
                "running",
                "requires_action",
                "running",
                "idle",
            ]
            assert states()[-1]["stopReason"] == "end_turn"
            updates = web.updates(session_id)
            echoed = [u for u in updates if u["sessionUpdate"] == "user_message_chunk"]
            assert {u["messageId"] for u in echoed} == {accepted["messageId"]}
            [question] = web.questions
            assert question["subject"]["type"] == "tool_call"
            assert (workspace / "note.txt").read_text() == "hi\n"

            # The v1 observer: the same turn in v1's shapes, and who answered.
            def resolved() -> list[dict[str, Any]]:
                return [
                    m["params"]
                    for m in editor.messages
                    if m.get("method") == "_acp-agent/permission_resolved"
                ]

            def said() -> str:
                return "".join(
                    n.update.content.text
                    for n in editor.updates
                    if n.session_id == session_id
                    and isinstance(n.update, types.AgentMessageChunk)
                    and isinstance(n.update.content, types.TextContent)
                )

            await editor.wait_until(lambda: said() == "Writing.Written." and bool(resolved()))
            assert resolved()[0]["resolvedBy"] == web_id
            kinds = {type(n.update).__name__ for n in editor.updates if n.session_id == session_id}
            assert {"ToolCall", "ToolCallProgress", "UserMessageChunk"} <= kinds
            assert editor.permission_requests == []  # an observer is not asked

            # Settings one client adopts reach the other, each in its own protocol.
            def v1_modes() -> list[str]:
                return [
                    str(n.update.current_mode_id)
                    for n in editor.updates
                    if n.session_id == session_id and isinstance(n.update, types.CurrentModeUpdate)
                ]

            def v2_modes() -> list[str]:
                return [
                    next(o["currentValue"] for o in u["configOptions"] if o["configId"] == "mode")
                    for u in web.updates(session_id)
                    if u["sessionUpdate"] == "config_option_update"
                ]

            option = {"sessionId": session_id, "configId": "mode", "type": "id", "value": "plan"}
            await web.request("session/set_config_option", option)
            await editor.wait_until(lambda: v1_modes() == ["plan"])
            await editor.request(
                ATTACH, {"sessionId": session_id, "role": "controller", "replay": "none"}
            )
            await editor.set_option(session_id, "mode", "ask")
            await web.wait_until(lambda: v2_modes() == ["ask"])
        finally:
            reading.cancel()
    assert WireValidator(protocol_version=2).problems(web.sent, web.received) == []
