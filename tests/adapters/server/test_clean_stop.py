"""A normal stop (SIGTERM) with clients connected warns of nothing and leaves nothing.

A real server listening on its Unix socket and on WebSocket, one client on each,
stopped with SIGTERM: it exits 0; closing the clients' connections is told in the
log file (INFO), never warned of on stderr; and its socket, `server.pid` and the
WebSocket token file, which was drawn for that run alone, are gone.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from tests.support.app_server import ServerProcess, running_server, socket_client

pytestmark = pytest.mark.e2e

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


def websocket_listener(server: ServerProcess) -> tuple[str, Path, str]:
    """The WebSocket URL the server printed, its token file, and the token."""
    printed = "".join(server.stderr)
    found = re.search(r"listening on (ws://\S+) \(the token is in (\S+)\)", printed)
    assert found is not None, printed
    token_file = Path(found.group(2))
    return found.group(1), token_file, token_file.read_text().strip()


async def stopped_with_clients(home: Path) -> tuple[ServerProcess, Path]:
    """A server of `home` on its socket and WebSocket, stopped (SIGTERM, status 0) while a
    client of each is connected; the server and the token file it printed."""
    async with (
        running_server(home, args=["--listen", "ws://127.0.0.1:0"]) as server,
        socket_client(server.socket),
    ):
        url, token_file, token = websocket_listener(server)
        headers = {"Authorization": f"Bearer {token}"}
        async with connect(url, additional_headers=headers) as websocket:
            # Answered: the server counts it among its clients.
            await websocket.send(json.dumps(_INITIALIZE))
            assert json.loads(await websocket.recv())["id"] == 1
            assert await server.stop(signal.SIGTERM) == 0
    return server, token_file


async def test_a_normal_stop_with_clients_connected_warns_of_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server, _ = await stopped_with_clients(home)
    assert [line for line in server.stderr if "the server is stopping" in line] == []
    log = (home / "logs" / "acp-agent.log").read_text()
    told = r" INFO \S+ \[\d+\]: closing 2 client connections: the server is stopping"
    assert re.search(told, log), log


async def test_a_normal_stop_removes_the_token_drawn_for_the_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _, token_file = await stopped_with_clients(home)
    folder = home / "state" / "server"
    assert token_file.parent == folder
    # The socket and `server.pid` go too; the lock file stays (its lock ended with the run).
    assert {path.name for path in folder.iterdir()} == {"server.lock"}
