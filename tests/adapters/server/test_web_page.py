"""The web page in a real browser: sessions, lanes, a diff, a job, questions answered in the page.

Debian's Chromium, headless, driven by Playwright (`executable_path` the
system's browser, `--no-sandbox` as CI runs as root; `playwright install` is
never run). A real server with `--web` plays a turn with two branches, a
background job and a file written (two permission questions, in the `ask`
mode the tests run in); the editor is a socket client that never answers, so
the page, attached as a controller, answers both, and the editor sees them
resolved by the page; then the page sends a message and cancels its turn.
Screenshots of each state go to `$ACP_AGENT_TEST_ARTIFACTS/web/` (default:
the test's temporary folder).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from protocol import types
from tests.support import write_script
from tests.support.app_server import running_server, socket_client

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: What one wait in the page may take (a loaded 2-core machine).
_WAIT_MS = 30_000

REPLIES = [
    [
        {"text": "Starting."},
        {"tool_call": {"name": "branch", "arguments": {"task": "Lint it", "title": "lint"}}},
        {"tool_call": {"name": "branch", "arguments": {"task": "Test it", "title": "tests"}}},
        {
            "tool_call": {
                "name": "shell",
                "arguments": {"command": "sleep 0.5; echo job-done", "background": True},
            }
        },
        {
            "tool_call": {
                "name": "write",
                "arguments": {"path": "notes.txt", "content": "one\ntwo\nthree\n"},
            }
        },
    ],
    [{"tool_call": {"name": "branch_wait", "arguments": {"all": True, "timeout_s": 30}}}],
    [{"text": "All done."}],
    [{"text": "Thinking it over"}, {"sleep_ms": 30000}, {"text": " never shown"}],
]
BRANCHES = [
    {"title": "lint", "replies": [[{"text": "lint "}, {"sleep_ms": 800}, {"text": "clean"}]]},
    {"title": "tests", "replies": [[{"text": "tests "}, {"sleep_ms": 800}, {"text": "pass"}]]},
]


def _playwright() -> Any:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("Playwright is not installed (pip install -e '.[dev]' installs it)")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run does)")
    return async_playwright


def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("ACP_AGENT_TEST_ARTIFACTS", tmp_path)) / "web"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def test_the_page_follows_a_session_and_answers_its_questions(tmp_path: Path) -> None:
    async_playwright = _playwright()
    shots = artifacts(tmp_path)
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    script = write_script(tmp_path / "script.json", *REPLIES, branches=BRANCHES)
    async with (
        running_server(home, script=script, args=["--web"]) as server,
        socket_client(server.socket) as editor,  # never answers, never attaches
        async_playwright() as playwright,
    ):
        found = re.search(r"this link works once\): (http://\S+)", "".join(server.stderr))
        assert found is not None
        session_id = await editor.new_session(work)
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"], headless=True
        )
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            await page.goto(found.group(1))  # the link, traded for the cookie
            item = page.locator(f'nav .session[data-id="{session_id}"]')
            await item.wait_for(timeout=_WAIT_MS)
            await page.screenshot(path=shots / "sessions.png")

            await page.check("#control")
            await item.click()
            await page.wait_for_selector(f'body[data-attached="{session_id}"]', timeout=_WAIT_MS)
            page_client = re.search(r"client-\d+", await page.inner_text("#status"))
            assert page_client is not None

            turn = asyncio.create_task(editor.prompt(session_id, "Lint, test, a job, a note"))
            for shot in ("question.png", None):
                allow = page.locator(".question:not(.resolved) button.allow_once").first
                await allow.wait_for(timeout=_WAIT_MS)
                if shot is not None:
                    await page.screenshot(path=shots / shot, full_page=True)
                await allow.click()
            response = await asyncio.wait_for(turn, _WAIT_MS / 1000)
            assert response.stop_reason == types.StopReason.END_TURN

            # Two lanes, side by side, each with its report; the note's diff; the job ended.
            await page.wait_for_function(
                "document.querySelectorAll('#lanes > .lane.completed').length === 2",
                timeout=_WAIT_MS,
            )
            lanes = await page.locator("#lanes > .lane").all_inner_texts()
            assert any("lint" in lane and "clean" in lane for lane in lanes)
            assert any("tests" in lane and "pass" in lane for lane in lanes)
            added = await page.locator("#conversation pre.diff .add").all_inner_texts()
            assert added == ["+ one", "+ two", "+ three"]
            job = page.locator('#jobs .job[data-state="exited"]')
            await job.wait_for(timeout=_WAIT_MS)
            assert "job-done" in await job.inner_text()
            await page.locator("#conversation .msg.agent", has_text="All done.").wait_for(
                timeout=_WAIT_MS
            )
            await page.screenshot(path=shots / "session.png", full_page=True)

            # The message box sends a prompt; the cancel button cancels its turn.
            await page.fill("#message", "Think it over")
            await page.click("#compose button[type=submit]")
            await page.locator("#conversation .msg.agent", has_text="Thinking it over").wait_for(
                timeout=_WAIT_MS
            )
            await page.click("#cancel")
            await page.locator("#status", has_text="your turn ended: cancelled").wait_for(
                timeout=_WAIT_MS
            )
        finally:
            await browser.close()

        # The editor was asked too; the page answered both, and the editor was told.
        assert (work / "notes.txt").read_text() == "one\ntwo\nthree\n"
        resolved = [p for m, p in editor.notices if m == "_acp-agent/permission_resolved"]
        assert len(resolved) == 2
        assert {p["resolvedBy"] for p in resolved} == {page_client.group(0)}
    for name in ("sessions.png", "question.png", "session.png"):
        assert (shots / name).stat().st_size > 0
