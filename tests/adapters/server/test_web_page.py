"""The web page in a real browser: sessions, lanes, a diff, a job, questions answered in the page.

Debian's Chromium, headless, driven by Playwright (`executable_path` the
system's browser, `--no-sandbox` as CI runs as root; `playwright install` is
never run). A real server with `--web` plays a turn with two branches, a
background job and a file written; each branch runs a command that waits for
the other's to start (so both work at once, whatever the machine's load).
That is four permission questions, in the `ask` mode the tests run in; the
editor is a socket client that never answers, so the page, attached as a
controller, answers them all, and the editor sees them resolved by the page;
then the page sends a message and cancels its turn. The page advertises
`subagents: {}`: its lanes are the branches' child sessions, which the
frames it received show, and a branch's question is asked on its child
session and answered in its lane; a second page, an observer, is shown each
question where it belongs and sees it resolved. Screenshots of each state go to
`$ACP_AGENT_TEST_ARTIFACTS/web/` (default: the test's temporary folder).
"""

from __future__ import annotations

import asyncio
import json
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


def _meeting(mine: str, other: str) -> str:
    """A command that marks its start, then waits (at most 30 s) for the other's."""
    return (
        f"touch {mine}.on; for i in $(seq 300); do test -e {other}.on && exit 0; "
        "sleep 0.1; done; exit 1"
    )


def _branch(title: str, other: str, report: str) -> dict[str, Any]:
    command = _meeting(title, other)
    return {
        "title": title,
        "replies": [
            [
                {"text": f"Running {title}."},
                {"tool_call": {"name": "shell", "arguments": {"command": command}}},
            ],
            [{"text": report}],
        ],
    }


BRANCHES = [_branch("lint", "tests", "lint clean"), _branch("tests", "lint", "tests pass")]
#: Notes the lanes after each change (one snapshot per message the page handles).
WATCH_LANES = """
() => {
  window.__lanes = [];
  new MutationObserver(() => {
    window.__lanes.push([...document.querySelectorAll("#lanes > .lane")].map((lane) => ({
      session: lane.dataset.session,
      steps: [...lane.querySelectorAll(".step")].map((step) => step.className),
      reported: lane.querySelector(".report") !== null,
    })));
  }).observe(document.getElementById("lanes"), { childList: true, subtree: true });
}
"""


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
            context = await browser.new_context(viewport={"width": 1280, "height": 800})
            page = await context.new_page()
            frames: list[dict[str, Any]] = []
            page.on(
                "websocket",
                lambda ws: ws.on("framereceived", lambda frame: frames.append(json.loads(frame))),
            )
            await page.goto(found.group(1))  # the link, traded for the cookie
            item = page.locator(f'nav .session[data-id="{session_id}"]')
            await item.wait_for(timeout=_WAIT_MS)
            await page.screenshot(path=shots / "sessions.png")

            await page.evaluate(WATCH_LANES)
            await page.check("#control")
            await item.click()
            await page.wait_for_selector(f'body[data-attached="{session_id}"]', timeout=_WAIT_MS)
            page_client = re.search(r"client-\d+", await page.inner_text("#status"))
            assert page_client is not None
            # A second page (the same browser's login) watches, an observer.
            observer = await context.new_page()
            await observer.goto(found.group(1).split("?")[0] + f"#session={session_id}")
            await observer.wait_for_selector(
                f'body[data-attached="{session_id}"]', timeout=_WAIT_MS
            )
            await page.bring_to_front()  # a tab behind is throttled

            turn = asyncio.create_task(editor.prompt(session_id, "Lint, test, a job, a note"))
            for shot in ("question.png", None, None, None):
                allow = page.locator(".question:not(.resolved) button.allow_once").first
                await allow.wait_for(timeout=_WAIT_MS)
                if shot is not None:
                    await page.screenshot(path=shots / shot, full_page=True)
                await allow.click()
            response = await asyncio.wait_for(turn, _WAIT_MS / 1000)
            assert response.stop_reason == types.StopReason.END_TURN
            # Each branch's question was asked on its child session, answered in its lane;
            # the observer was shown it there, with its command, and saw it resolved.
            children = _children(frames, session_id)
            asked_on = {
                f["params"]["sessionId"]
                for f in frames
                if f.get("method") == "session/request_permission"
            }
            assert asked_on == {session_id, *children.values()}
            for title, child_id in children.items():
                lane = f'#lanes > .lane[data-session="{child_id}"] .question.resolved'
                assert "answered here" in await page.locator(lane).inner_text()
                seen = observer.locator(lane, has_text=f"answered allow_once by {page_client[0]}")
                await seen.wait_for(timeout=_WAIT_MS)
                # Once answered it folds to its title and outcome; its command is kept.
                assert f"$ touch {title}.on" in (await seen.text_content() or "")

            # Two lanes, side by side, each with its step and report; the note's diff; the
            # job ended.
            await page.locator("#lanes > .lane.idle .report").nth(1).wait_for(timeout=_WAIT_MS)
            reports = {
                await lane.get_attribute("data-session"): await lane.inner_text()
                for lane in await page.locator("#lanes > .lane").all()
            }
            assert set(reports) == set(children.values())
            assert "lint clean" in reports[children["lint"]]
            assert "tests pass" in reports[children["tests"]]
            # Filled from the children's own updates, concurrently: at one point both lanes
            # showed their command working, neither done.
            for title, child_id in children.items():
                said = _said_on(frames, child_id)
                assert f"Running {title}." in said
                assert any(f"touch {title}.on" in step for step in _steps_on(frames, child_id))
            snapshots = await page.evaluate("window.__lanes")
            assert any(_both_working(lanes) for lanes in snapshots)
            # No branch came as a row of the parent.
            assert not [
                f
                for f in frames
                if f.get("method") == "session/update"
                and f["params"]["sessionId"] == session_id
                and "Branch: " in str(f["params"]["update"].get("title"))
            ]
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
        assert len(resolved) == 4
        assert {p["resolvedBy"] for p in resolved} == {page_client.group(0)}
    for name in ("sessions.png", "question.png", "session.png"):
        assert (shots / name).stat().st_size > 0


def _children(frames: list[dict[str, Any]], session_id: str) -> dict[str, str]:
    """Each child session announced to the page on the parent (`subagent_update`), by title."""
    found: dict[str, str] = {}
    for frame in frames:
        update = (frame.get("params") or {}).get("update") or {}
        if (
            frame.get("method") == "session/update"
            and frame["params"]["sessionId"] == session_id
            and update.get("sessionUpdate") == "subagent_update"
            and update.get("title")
        ):
            found[update["title"]] = update["sessionId"]
    return found


def _updates_on(frames: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    return [
        f["params"]["update"]
        for f in frames
        if f.get("method") == "session/update" and f["params"]["sessionId"] == session_id
    ]


def _said_on(frames: list[dict[str, Any]], session_id: str) -> str:
    return "".join(
        u["content"].get("text", "")
        for u in _updates_on(frames, session_id)
        if u["sessionUpdate"] == "agent_message_chunk"
    )


def _steps_on(frames: list[dict[str, Any]], session_id: str) -> list[str]:
    return [
        str(u.get("title"))
        for u in _updates_on(frames, session_id)
        if u["sessionUpdate"] == "tool_call"
    ]


def _both_working(lanes: list[dict[str, Any]]) -> bool:
    """Two lanes, each showing a step not yet done and no report."""
    working = [
        lane
        for lane in lanes
        if lane["steps"]
        and not lane["reported"]
        and any("completed" not in step for step in lane["steps"])
    ]
    return len(working) == 2
