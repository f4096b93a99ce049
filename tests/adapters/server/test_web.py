"""`acp-agent server --web`: the one-time link traded for a cookie, and who may upgrade with it.

One real server per module with `--web`; requests are plain HTTP
(`http.client`) and WebSocket upgrades (the `websockets` library), as a
browser would make them but with every header in the test's hands. What the
page does in a browser is `test_web_page.py`'s.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.support import write_script
from tests.support.app_server import running_server

pytestmark = pytest.mark.e2e

#: The reply: this many chunks with no pause (streamed text comes several to a write).
BURST = 200


class WebServer:
    def __init__(self, stderr: str) -> None:
        found = re.search(r"the web page \(this link works once\): (http://\S+)", stderr)
        assert found is not None, stderr
        self.login_url = found.group(1)
        parts = urlsplit(self.login_url)
        self.host = parts.netloc
        self.login_path = f"{parts.path}?{parts.query}"
        self.cookie: str | None = None
        token_file = re.search(r"the token is in (\S+)\)", stderr)
        assert token_file is not None, stderr
        self.token = Path(token_file.group(1)).read_text().strip()


@pytest.fixture(scope="module")
async def web(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[WebServer]:
    home = tmp_path_factory.mktemp("web-home")
    script = write_script(home / "script.json", [{"text": f"c{i} "} for i in range(BURST)])
    async with running_server(home, script=script, args=["--web"]) as server:
        yield WebServer("".join(server.stderr))


def get(web: WebServer, path: str, **headers: str) -> http.client.HTTPResponse:
    host, port = web.host.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("GET", path, headers={"Host": web.host, **headers})
    response = connection.getresponse()
    response.read()
    return response


async def fetch(web: WebServer, path: str, **headers: str) -> http.client.HTTPResponse:
    return await asyncio.to_thread(get, web, path, **headers)


async def logged_in(web: WebServer) -> str:
    """The cookie the one-time link was traded for (traded once per module)."""
    if web.cookie is None:
        response = await fetch(web, web.login_path)
        assert response.status == 303
        assert response.getheader("Location") == "/"
        set_cookie = response.getheader("Set-Cookie") or ""
        attributes = {part.strip() for part in set_cookie.split(";")[1:]}
        assert attributes == {"HttpOnly", "SameSite=Strict", "Path=/"}
        web.cookie = set_cookie.split(";")[0]
    return web.cookie


async def test_the_link_works_once_and_the_page_needs_its_cookie(web: WebServer) -> None:
    assert (await fetch(web, "/")).status == 401
    assert (await fetch(web, "/app.js")).status == 401
    assert (await fetch(web, "/?login=not-the-secret")).status == 403
    cookie = await logged_in(web)

    assert (await fetch(web, web.login_path)).status == 403  # used already
    page = await fetch(web, "/", Cookie=cookie)
    assert page.status == 200
    assert page.getheader("Content-Type") == "text/html; charset=utf-8"
    assert "frame-ancestors 'none'" in (page.getheader("Content-Security-Policy") or "")
    assert (await fetch(web, "/app.js", Cookie=cookie)).status == 200
    assert (await fetch(web, "/elsewhere", Cookie=cookie)).status == 404
    assert (await fetch(web, "/", Cookie="acp_agent_web=guessed")).status == 401
    # A page reached under another name (DNS rebinding) is refused, cookie or not.
    port = web.host.split(":")[1]
    assert (await fetch(web, "/", Cookie=cookie, Host=f"attacker.example:{port}")).status == 403


async def upgrade(web: WebServer, **headers: str) -> dict[str, object]:
    """Upgrade with `headers` and initialize; the answer's result."""
    async with connect(f"ws://{web.host}/acp", additional_headers=headers, open_timeout=10) as ws:
        initialize = {"protocolVersion": 1}
        await ws.send(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
        )
        answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
    result: dict[str, object] = answer["result"]
    return result


async def test_the_upgrade_takes_the_cookie_only_from_the_pages_own_origin(web: WebServer) -> None:
    cookie = await logged_in(web)
    own = f"http://{web.host}"

    answer = await upgrade(web, Cookie=cookie, Origin=own)
    assert answer["protocolVersion"] == 1

    refusals = [
        ({"Cookie": cookie, "Origin": "http://attacker.example"}, 403),
        ({"Cookie": cookie, "Origin": f"https://{web.host}"}, 403),
        ({"Origin": own}, 403),  # no cookie: a page is not a client with the token
        ({"Cookie": "acp_agent_web=guessed", "Origin": own}, 403),
        ({"Cookie": cookie}, 401),  # no origin: not a page; the token is needed then
    ]
    for headers, status in refusals:
        with pytest.raises(InvalidStatus) as refused:
            await upgrade(web, **headers)
        assert refused.value.response.status_code == status, headers


async def test_each_websocket_message_is_one_json_rpc_message(
    web: WebServer, tmp_path: Path
) -> None:
    """A burst of streamed text reaches a WebSocket client whole, a message per frame
    (a frame of several lines is what a browser's JSON.parse cannot read)."""
    frames: list[str] = []
    headers = {"Authorization": f"Bearer {web.token}"}
    async with connect(f"ws://{web.host}/acp", additional_headers=headers) as ws:

        async def call(ident: int, method: str, params: dict[str, object]) -> dict[str, object]:
            await ws.send(
                json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
            )
            async with asyncio.timeout(30):
                while True:
                    frame = await ws.recv()
                    assert isinstance(frame, str)
                    frames.append(frame)
                    message = json.loads(frame)  # one JSON document, or this fails
                    if message.get("id") == ident and "method" not in message:
                        result: dict[str, object] = message["result"]
                        return result

        await call(1, "initialize", {"protocolVersion": 1})
        session = await call(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        prompt = [{"type": "text", "text": "Go"}]
        await call(3, "session/prompt", {"sessionId": session["sessionId"], "prompt": prompt})
    chunks = [
        json.loads(frame)["params"]["update"]["content"]["text"]
        for frame in frames
        if '"agent_message_chunk"' in frame
    ]
    assert chunks == [f"c{i} " for i in range(BURST)]
