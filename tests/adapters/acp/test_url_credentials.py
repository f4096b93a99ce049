"""Credentials in URLs never reach logs, stderr, the chat or the store.

`OPENAI_BASE_URL=http://user:secret@host/v1` is a real way to reach a server
behind a proxy, and so is an MCP server's URL; the password must not show
wherever the URL is shown. Each test runs the real agent at DEBUG against
the fake provider failing one way (a refused key, rate limits and overload
after retries, a refused connection, a stream broken off, MCP servers that
fail) and then reads every place the secret could have gone: stderr, the log
file, the SQLite file's bytes (and its write-ahead log) and every line the
agent wrote. How userinfo authenticates is checked on the headers the fake
server received.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_agent.store import DATABASE_FILE_NAME
from protocol import methods, types
from tests.adapters.acp.support import text_of_updates
from tests.support import UPDATE_TIMEOUT_S, EditorClient, agent_env, running_agent, write_script
from tests.support.fake_provider import (
    Exchange,
    FakeProviderServer,
    closed_port,
    json_error,
    openai_chunk,
    openai_stream,
)

pytestmark = pytest.mark.e2e

SECRET = "hunter2-in-the-url"
USER = "proxy-user"
API_KEY = "sk-test-0123456789abcdefghij"
#: The redacted form every message shows instead of the userinfo.
REDACTED = "http://***@127.0.0.1"
DEBUG = ("--log-level", "DEBUG")


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def credentialed_env(port: int, **extra: str) -> dict[str, str]:
    return agent_env(
        OPENAI_BASE_URL=f"http://{USER}:{SECRET}@127.0.0.1:{port}/v1",
        ACP_AGENT_MODEL="openai/gpt-fake",
        **extra,
    )


def openai_error(status: int, code: str, **headers: str) -> Exchange:
    body = {"error": {"message": f"failed with {status}", "type": "error", "code": code}}
    return json_error(status, body, headers)


def anthropic_error(status: int, error_type: str) -> Exchange:
    body = {"type": "error", "error": {"type": error_type, "message": f"failed with {status}"}}
    return json_error(status, body, {"retry-after": "0"})


def broken_stream() -> Exchange:
    body = openai_stream(
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "Half a"}),
        done=False,
    )
    return Exchange(chunks=[body], truncate=True)


def openai_text(text: str) -> Exchange:
    return Exchange(
        chunks=[
            openai_stream(
                openai_chunk({"role": "assistant", "content": ""}),
                openai_chunk({"content": text}),
                openai_chunk({}, "stop"),
            )
        ]
    )


async def one_failing_turn(home: Path, env: dict[str, str], workspace: Path) -> EditorClient:
    async with running_agent(home, env=env, args=DEBUG) as client:
        session_id = await client.new_session(workspace)
        response = await client.prompt(session_id, "Say hello.")
        assert response.stop_reason == types.StopReason.END_TURN
        assert response.meta is not None
        assert "error" in response.meta["acp-agent"]
        assert "The model request failed" in text_of_updates(client.updates_for(session_id))
    return client


def places_the_secret_could_be(home: Path, client: EditorClient) -> dict[str, bytes]:
    """Everything the agent wrote that a person or another program may read."""
    places = {
        "stderr": "".join(client.stderr_lines).encode(),
        "log file": (home / "logs" / "acp-agent.log").read_bytes(),
        "wire from the agent": b"".join(client.received),
        "wire to the agent": b"".join(client.sent),
    }
    for path in sorted((home / "data").glob(f"{DATABASE_FILE_NAME}*")):
        places[path.name] = path.read_bytes()
    return places


FAILURES = {
    "refused key (401)": [openai_error(401, "invalid_api_key")],
    "rate limited (429) after retries": [openai_error(429, "rate_limit", **{"retry-after": "0"})]
    * 4,
    "overloaded (503) after retries": [openai_error(503, "server_error", **{"retry-after": "0"})]
    * 4,
    "stream broken off": [broken_stream()],
}


@pytest.mark.parametrize("failure", FAILURES.values(), ids=FAILURES.keys())
async def test_a_failing_provider_never_shows_the_password_of_its_base_url(
    tmp_path: Path, server: FakeProviderServer, failure: list[Exchange]
):
    server.add(*failure)
    home = tmp_path / "home"
    port = int(server.base_url.rsplit(":", 1)[1])

    client = await one_failing_turn(home, credentialed_env(port, OPENAI_API_KEY=API_KEY), tmp_path)

    assert server.requests, "the provider was reached"
    places = places_the_secret_could_be(home, client)
    assert DATABASE_FILE_NAME in places
    assert [where for where, data in places.items() if SECRET.encode() in data] == []
    assert [where for where, data in places.items() if USER.encode() in data] == []


async def test_a_refused_connection_names_the_redacted_url_and_never_the_password(
    tmp_path: Path,
):
    home = tmp_path / "home"
    env = credentialed_env(closed_port(), OPENAI_API_KEY=API_KEY)

    client = await one_failing_turn(home, env, tmp_path)

    places = places_the_secret_could_be(home, client)
    assert [where for where, data in places.items() if SECRET.encode() in data] == []
    [session_id] = {n.session_id for n in client.updates}
    assert REDACTED in text_of_updates(client.updates_for(session_id))


async def test_the_api_key_wins_the_authorization_header_over_url_userinfo(
    tmp_path: Path, server: FakeProviderServer
):
    server.add(openai_text("Hello."), openai_text("Again."))
    port = int(server.base_url.rsplit(":", 1)[1])
    env = credentialed_env(port, OPENAI_API_KEY=API_KEY)

    async with running_agent(tmp_path / "home", env=env) as client:
        session_id = await client.new_session(tmp_path)
        await client.prompt(session_id, "Say hello.")
        await client.prompt(session_id, "Once more.")
    stderr = "".join(client.stderr_lines)

    assert [request.headers["authorization"] for request in server.requests] == [
        f"Bearer {API_KEY}"
    ] * 2
    warnings = [line for line in stderr.splitlines() if "userinfo" in line]
    assert len(warnings) == 1, stderr
    assert f"{REDACTED}:{port}/v1" in warnings[0]
    assert SECRET not in stderr


async def test_url_userinfo_authenticates_with_basic_auth_when_no_key_is_set(
    tmp_path: Path, server: FakeProviderServer
):
    server.add(openai_text("Hello."))
    port = int(server.base_url.rsplit(":", 1)[1])
    home = tmp_path / "home"

    async with running_agent(home, env=credentialed_env(port), args=DEBUG) as client:
        session_id = await client.new_session(tmp_path)
        await client.prompt(session_id, "Say hello.")

    basic = base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
    assert [request.headers["authorization"] for request in server.requests] == [f"Basic {basic}"]
    places = places_the_secret_could_be(home, client)
    assert [where for where, data in places.items() if SECRET.encode() in data] == []
    assert f"POST {REDACTED}:{port}/v1/chat/completions".encode() in places["log file"]


async def test_anthropic_sends_url_userinfo_as_basic_auth_beside_its_key(
    tmp_path: Path, server: FakeProviderServer
):
    server.add(*[anthropic_error(529, "overloaded_error")] * 4)
    port = int(server.base_url.rsplit(":", 1)[1])
    env = agent_env(
        ANTHROPIC_BASE_URL=f"http://{USER}:{SECRET}@127.0.0.1:{port}",
        ANTHROPIC_API_KEY=API_KEY,
        ACP_AGENT_MODEL="anthropic/claude-fake",
    )
    home = tmp_path / "home"

    client = await one_failing_turn(home, env, tmp_path)

    basic = base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
    assert {(r.headers["x-api-key"], r.headers["authorization"]) for r in server.requests} == {
        (API_KEY, f"Basic {basic}")
    }
    places = places_the_secret_could_be(home, client)
    assert [where for where, data in places.items() if SECRET.encode() in data] == []
    assert "userinfo" not in "".join(client.stderr_lines)


async def stored_bytes_contain(home: Path, text: str) -> None:
    """Wait until `text` is in the SQLite file or its write-ahead log (recorded, not shown)."""
    # A file has no change event to wait for, and nothing on the wire says the
    # notification was recorded: re-read it until it holds the text.
    with anyio.fail_after(UPDATE_TIMEOUT_S):
        while not any(  # noqa: ASYNC110
            text.encode() in path.read_bytes()
            for path in (home / "data").glob(f"{DATABASE_FILE_NAME}*")
        ):
            await anyio.sleep(0.05)


async def test_mcp_server_urls_never_show_their_password_and_their_headers_win(
    tmp_path: Path, server: FakeProviderServer
):
    port = int(server.base_url.rsplit(":", 1)[1])
    userinfo_url = f"http://{USER}:{SECRET}@127.0.0.1:{port}"
    servers: list[types.McpServer] = [
        # The fake server answers GET with 501, and httpx's error quotes the URL.
        types.McpServerSse(name="docs", url=f"{userinfo_url}/sse", headers=[]),
        types.McpServerHttp(
            name="api",
            url=f"{userinfo_url}/api",
            headers=[types.HttpHeader(name="Authorization", value="Bearer mcp-token")],
        ),
        types.McpServerHttp(name="wiki", url=f"{userinfo_url}/wiki", headers=[]),
    ]
    home = tmp_path / "home"
    script = write_script(tmp_path / "script.json", [{"text": "."}])

    async with running_agent(home, script=script, args=DEBUG) as client:
        response = await client.request(
            methods.SESSION_NEW, types.NewSessionRequest(cwd=str(tmp_path), mcp_servers=servers)
        )
        session_id = str(response.session_id)
        await client.prompt(session_id, "/mcp")
        status = text_of_updates(client.updates_for(session_id))
        await stored_bytes_contain(home, "MCP server `docs` failed")
    client.sent.clear()  # the editor's own session/new holds the URLs it was given

    assert "**docs** (sse, editor): failed" in status
    assert "501" in status
    places = places_the_secret_could_be(home, client)
    assert [where for where, data in places.items() if SECRET.encode() in data] == []
    authorizations = {request.path: request.headers["authorization"] for request in server.requests}
    basic = base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
    assert authorizations == {"/api": "Bearer mcp-token", "/wiki": f"Basic {basic}"}
    warnings = [line for line in "".join(client.stderr_lines).splitlines() if "userinfo" in line]
    assert len(warnings) == 1
    assert f"http://***@127.0.0.1:{port}/api" in warnings[0]
