"""fetch: a URL as readable text over httpx (answered here by MockTransport, no network)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from acp_agent.toolkit import Effect, TextContent, ToolInputError, ToolKind
from acp_agent.tools import FetchTool
from acp_agent.tools._fetch import MAX_DOWNLOAD_BYTES
from tests.tools.support import Session

pytestmark = pytest.mark.anyio

PAGE = """<!doctype html><html><head><title>Docs</title><script>track()</script>
<style>body{}</style></head><body><h1>Install</h1><p>Run <code>pip   install x</code>,
then read <a href="/guide">the guide</a>.</p><ul><li>fast</li><li>small</li></ul></body></html>"""


def site(request: httpx.Request) -> httpx.Response:
    routes = {
        "/page": httpx.Response(200, html=PAGE),
        "/data.json": httpx.Response(200, json={"ok": True}),
        "/logo.png": httpx.Response(200, content=b"\x89PNG", headers={"content-type": "image/png"}),
        "/old": httpx.Response(301, headers={"location": "/page"}),
        "/big": httpx.Response(200, text="x" * (MAX_DOWNLOAD_BYTES + 10)),
    }
    return routes.get(request.url.path, httpx.Response(404, text="no such page"))


FETCH = FetchTool(transport=httpx.MockTransport(site))


async def test_an_html_page_becomes_readable_text_with_absolute_links(workspace: Path) -> None:
    result = await Session([workspace]).run(FETCH, {"url": "https://docs.example/page"})
    assert result.model_text == (
        "https://docs.example/page — HTTP 200, text/html\n\n"
        "# Docs\n\n# Install\n\n"
        "Run pip install x, then read [the guide](https://docs.example/guide).\n\n"
        "- fast\n- small"
    )
    assert result.content == (TextContent(result.model_text),)
    assert result.raw_output["status"] == 200
    assert not result.is_error


async def test_redirects_are_followed_and_text_formats_come_as_they_are(workspace: Path) -> None:
    session = Session([workspace])
    moved = await session.run(FETCH, {"url": "https://docs.example/old"})
    assert moved.raw_output["final_url"] == "https://docs.example/page"
    data = await session.run(FETCH, {"url": "https://docs.example/data.json"})
    assert data.model_text.endswith('\n\n{"ok":true}')


async def test_binary_content_errors_and_missing_pages_are_errors(workspace: Path) -> None:
    session = Session([workspace])
    image = await session.run(FETCH, {"url": "https://docs.example/logo.png"})
    assert image.is_error
    assert image.raw_output["error"] == "not_text"
    missing = await session.run(FETCH, {"url": "https://docs.example/nothing"})
    assert missing.is_error
    assert "HTTP 404" in missing.model_text


async def test_long_content_is_cut_and_the_cut_stated(workspace: Path) -> None:
    session = Session([workspace])
    big = await session.run(FETCH, {"url": "https://docs.example/big", "max_chars": 1000})
    assert big.raw_output["truncated"] is True
    assert big.raw_output["chars"] == 1000
    assert f"cut at 1000 of {MAX_DOWNLOAD_BYTES} characters" in big.model_text
    assert f"only the first {MAX_DOWNLOAD_BYTES} bytes were downloaded" in big.model_text


async def test_a_connection_failure_is_an_error_result(workspace: Path) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    tool = FetchTool(transport=httpx.MockTransport(refuse))
    result = await Session([workspace]).run(tool, {"url": "http://localhost:1/"})
    assert result.is_error
    assert result.raw_output["error"] == "fetch_failed"


def test_fetch_needs_network_permission_for_its_url_and_only_takes_http(workspace: Path) -> None:
    need = FETCH.permission({"url": "https://docs.example/page"}, [workspace])
    assert need.effect is Effect.NETWORK
    assert need.target == "https://docs.example/page"
    for bad in ("file:///etc/passwd", "docs.example", ""):
        with pytest.raises(ToolInputError):
            FETCH.permission({"url": bad}, [workspace])
    presentation = FETCH.present({"url": "https://docs.example/page"}, [workspace])
    assert presentation.title == "Fetch https://docs.example/page"
    assert presentation.kind is ToolKind.FETCH
