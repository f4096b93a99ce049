"""`acp-agent sessions list|show|export|delete` end to end, over a store with several sessions.

The sessions are made by real `exec` runs (a fake provider over HTTP), then read
back through the `sessions` command, which drives its own agent child over ACP.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import openai_env, running_agent
from tests.support.fake_provider import FakeProviderServer, openai_reply, openai_tool_calls
from tests.support.processes import run_unread

TIMEOUT_S = 60


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def run(
    server: FakeProviderServer, home: Path, command: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_agent", command, "--home", str(home), *args]
        if command == "exec"
        else [sys.executable, "-m", "acp_agent", "sessions", "--home", str(home), command, *args],
        capture_output=True,
        text=True,
        env=openai_env(server.base_url),
        timeout=TIMEOUT_S,
        check=False,
    )


@pytest.fixture
def store(tmp_path: Path, server: FakeProviderServer) -> dict[str, Any]:
    """A home with three sessions: two in workspace `a` (one with an edit), one in `b`."""
    home = tmp_path / "home"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    server.add(
        openai_reply("Hello from a."),
        openai_tool_calls(("call_w", "write", {"path": "plan.md", "content": "step one\n"})),
        openai_reply("Wrote the plan."),
        openai_reply("Hello from b."),
    )
    ids = []
    for cwd, prompt, approve in (
        (a, "Say hello", "never"),
        (a, "Write the plan", "edits"),
        (b, "Greet b", "never"),
    ):
        done = run(server, home, "exec", "--cwd", str(cwd), "--approve", approve, "--json", prompt)
        assert done.returncode == 0, done.stderr
        ids.append(json.loads(done.stdout.splitlines()[-1])["sessionId"])
    return {"home": home, "a": a.resolve(), "b": b.resolve(), "ids": ids}


def test_list_shows_every_session_most_recent_first(
    server: FakeProviderServer, store: dict[str, Any]
) -> None:
    done = run(server, store["home"], "list", "--json")
    assert done.returncode == 0, done.stderr
    listed = [json.loads(line) for line in done.stdout.splitlines()]
    assert [info["sessionId"] for info in listed] == list(reversed(store["ids"]))
    assert all(info["version"] == 1 for info in listed)
    assert listed[0]["cwd"] == str(store["b"])
    assert listed[0]["title"] == "Greet b"
    text = run(server, store["home"], "list")
    assert text.returncode == 0
    assert len(text.stdout.splitlines()) == 3
    assert store["ids"][0] in text.stdout
    assert "Say hello" in text.stdout


def test_list_filters_by_workspace(server: FakeProviderServer, store: dict[str, Any]) -> None:
    done = run(server, store["home"], "list", "--json", "--cwd", str(store["a"]))
    listed = [json.loads(line)["sessionId"] for line in done.stdout.splitlines()]
    assert listed == [store["ids"][1], store["ids"][0]]


def test_show_prints_a_readable_transcript_with_the_diff(
    server: FakeProviderServer, store: dict[str, Any]
) -> None:
    done = run(server, store["home"], "show", store["ids"][1])
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("# Write the plan\n")
    assert "### You\n\nWrite the plan" in out
    assert "**Tool call:** Write plan.md (completed)" in out
    assert "```diff\n" in out
    assert "+step one" in out
    assert "### Agent\n\nWrote the plan." in out
    assert out.index("### You") < out.index("**Tool call:**") < out.index("Wrote the plan.")


def test_export_json_and_markdown(
    tmp_path: Path, server: FakeProviderServer, store: dict[str, Any]
) -> None:
    session_id = store["ids"][1]
    done = run(server, store["home"], "export", session_id)
    assert done.returncode == 0, done.stderr
    exported = json.loads(done.stdout)
    assert exported["version"] == 1
    assert exported["session"]["sessionId"] == session_id
    kinds = [update["sessionUpdate"] for update in exported["updates"]]
    assert kinds[0] == "user_message_chunk"
    assert "tool_call" in kinds
    assert "agent_message_chunk" in kinds
    target = tmp_path / "out.md"
    written = run(
        server, store["home"], "export", session_id, "--format", "markdown", "--output", str(target)
    )
    assert written.returncode == 0, written.stderr
    assert written.stdout == ""
    assert "+step one" in target.read_text()


def test_delete_removes_a_session_and_unknown_ids_fail(
    server: FakeProviderServer, store: dict[str, Any]
) -> None:
    gone = store["ids"][0]
    done = run(server, store["home"], "delete", gone)
    assert done.returncode == 0, done.stderr
    listed = run(server, store["home"], "list", "--json").stdout
    assert gone not in listed
    assert store["ids"][1] in listed
    again = run(server, store["home"], "show", gone)
    assert again.returncode == 1
    assert f"no session {gone}" in again.stderr


async def test_a_held_session_is_refused_with_4(
    server: FakeProviderServer, store: dict[str, Any]
) -> None:
    held = store["ids"][2]
    async with running_agent(store["home"], env=openai_env(server.base_url)) as client:
        await client.resume(held, store["b"])
        assert client.process is not None
        pid = client.process.pid
        deleted = run(server, store["home"], "delete", held)
        shown = run(server, store["home"], "show", held)
    for done in (deleted, shown):
        assert done.returncode == 4, done.stderr
        assert f"pid {pid}" in done.stderr
    assert held in run(server, store["home"], "list", "--json").stdout


@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["show"]])
def test_a_reader_that_goes_away_ends_sessions_quietly(
    server: FakeProviderServer, store: dict[str, Any], command: list[str]
) -> None:
    # `sessions show ID | true`: stdout's reader is gone before anything is written.
    if command == ["show"]:
        command = ["show", store["ids"][1]]
    sessions = [sys.executable, "-m", "acp_agent", "sessions", "--home", str(store["home"])]
    ended = run_unread([*sessions, *command], env=openai_env(server.base_url), timeout_s=TIMEOUT_S)
    assert ended == (141, "")  # 128 + SIGPIPE, as exec
