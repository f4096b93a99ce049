"""A full disk during a turn: the prompt is still answered, and the session goes on after.

The agent's home is a small tmpfs of its own, filled to the last byte while a
session is open. The next prompt streams more than fits: it is answered
`end_turn` with `_meta["acp-agent"].error.kind == "storage_full"`, after one
message telling the person the disk is full and where the store is. Once
space is freed the session works again, and after a restart it loads, with
the cut-short turn ended and nothing torn.

Mounting needs root (CI runs as root); elsewhere the test says why it skips.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from tests.adapters.acp.support import text_of_updates
from tests.faults.support import store_problems
from tests.support import EditorClient, running_agent, write_script
from tests.support.editor_client import allow_all
from tests.support.processes import group_members
from tests.support.steps import text_of

pytestmark = pytest.mark.e2e

#: The tmpfs: room for the store and logs, not for a long reply on a full disk.
DISK_SIZE = "8m"


@contextlib.contextmanager
def mounted(mount: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` at `mount` (skips the test where it cannot be mounted)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the agent's home needs root")
    mount.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted(tmp_path / "disk", DISK_SIZE) as mount:
        yield mount


def fill(disk: Path) -> Path:
    """Write a file until the disk is full; returns it (delete it to free the space)."""
    filler = disk / "filler"
    # Unbuffered: every write reaches the disk, and closing has nothing left to flush.
    with filler.open("wb", buffering=0) as file:
        for size in (65536, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    file.write(b"\0" * size)
    return filler


async def wait_until(condition: Callable[[], bool], timeout_s: float = 15.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110 - what we wait for is a file
            await asyncio.sleep(0.02)


def texts(updates: list[types.SessionUpdate], kind: type) -> list[str]:
    return [
        u.content.text
        for u in updates
        if isinstance(u, kind) and isinstance(u.content, types.TextContent)
    ]


@pytest.mark.parametrize("when", ["mid-turn", "before the prompt"])
async def test_a_full_disk_answers_the_prompt_and_the_session_recovers_once_freed(
    small_disk: Path, tmp_path: Path, when: str
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = small_disk / "home"
    # A first piece, a pause (where the test fills the disk), then 400 KB: far more than
    # a full disk takes. Then, in a reply of its own, what the session says once healed.
    script = write_script(
        tmp_path / "s.json",
        [{"text": "Starting. "}, {"sleep_ms": 300}, *[{"text": "x" * 4096}] * 100],
        [{"text": "Back."}],
    )
    database = home / "data" / "sessions.sqlite3"

    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(workspace)
        if when == "mid-turn":
            prompt = asyncio.create_task(client.prompt(session_id, "Write a lot."))
            await client.wait_for_update(session_id, lambda u: "Starting" in text_of(u))
            filler = fill(small_disk)
            full = await prompt
        else:
            filler = fill(small_disk)
            full = await client.prompt(session_id, "Write a lot.")
        answered_at = len(client.updates_for(session_id))
        filler.unlink()
        again = await client.prompt(session_id, "And now?")
        after = client.updates_for(session_id)[answered_at:]

    assert full.stop_reason == types.StopReason.END_TURN
    assert full.meta is not None
    assert full.meta["acp-agent"]["error"]["kind"] == "storage_full"
    told = texts(client.updates_for(session_id)[:answered_at], types.AgentMessageChunk)
    assert told[-1].startswith("The disk is full")
    assert str(database) in told[-1]
    assert again.stop_reason == types.StopReason.END_TURN
    assert again.meta is not None
    assert "error" not in again.meta["acp-agent"]
    assert text_of_updates(after)  # the healed session answered
    assert store_problems(database) == []

    async with running_agent(home, script=script) as client:
        await client.request(
            methods.SESSION_LOAD,
            types.LoadSessionRequest(session_id=session_id, cwd=str(workspace), mcp_servers=[]),
        )
        replay = client.updates_for(session_id)
    prompts = texts(replay, types.UserMessageChunk)
    if when == "mid-turn":
        # The cut-short turn is on record up to where the disk filled, then ended.
        assert prompts == ["Write a lot.", "And now?"]
        assert text_of_updates(replay).startswith("Starting. ")
        assert text_of_updates(replay).endswith("Back.")
    else:
        # Nothing of the first prompt could be recorded.
        assert prompts == ["And now?"]
    assert store_problems(database) == []


def _tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments}}


def _branch_rows(updates: list[types.SessionUpdate]) -> dict[str, list[Any]]:
    """Each showing of a branch (a `tool_call` titled "Branch: ...") and its updates."""
    rows: dict[str, list[Any]] = {}
    for update in updates:
        if isinstance(update, types.ToolCall) and update.title.startswith("Branch: "):
            rows[update.tool_call_id] = [update]
        elif isinstance(update, types.ToolCallProgress) and update.tool_call_id in rows:
            rows[update.tool_call_id].append(update)
    return rows


def _final_status(row: list[Any]) -> str:
    return [u.status.value for u in row if u.status is not None][-1]


def _row_text(row: list[Any]) -> str:
    parts = [u for u in row if u.content][-1].content
    return "\n".join(p.content.text for p in parts if isinstance(p, types.Content))


def _notifications_of_branches(database: Path) -> int:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT payload FROM events WHERE kind = 'notification'").fetchall()
    return sum('"branch/' in payload for (payload,) in rows)


async def test_a_full_disk_while_a_branch_streams_ends_it_and_the_main_line_is_told_once_freed(
    small_disk: Path, tmp_path: Path
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = small_disk / "home"
    database = home / "data" / "sessions.sqlite3"
    # Main starts a branch and waits for it far longer than the test may take; the branch
    # says it started, then streams far more than a full disk takes.
    script = write_script(
        tmp_path / "s.json",
        [
            _tool("branch", task="Write a lot", title="streamer"),
            _tool("branch_wait", timeout_s=600),
        ],
        [{"text": "Told."}],
        branches=[
            {
                "title": "streamer",
                "replies": [
                    [_tool("shell", command="touch started")],
                    [{"text": "Streaming. "}, {"sleep_ms": 300}, *[{"text": "x" * 4096}] * 100],
                ],
            }
        ],
    )
    # A client that takes notices: it is told of the branch the full disk stopped.
    notices = types.ClientCapabilities(
        session=types.ClientSessionCapabilities(notices=types.NoticeCapabilities())
    )
    async with running_agent(
        home, script=script, client=EditorClient(decide=allow_all), capabilities=notices
    ) as client:
        session_id = await client.new_session(workspace)
        prompt = asyncio.create_task(client.prompt(session_id, "Go."))
        await wait_until(lambda: (workspace / "started").exists())
        filler = fill(small_disk)
        # `branch_wait` returns as the branch ends, far before its 600 s.
        full = await asyncio.wait_for(prompt, 30)
        filler.unlink()
        listed = await client.prompt(session_id, "/branches")
        table = text_of_updates(client.updates_for(session_id)[-1:])
        healed = await client.prompt(session_id, "And now?")
    assert full.meta is not None
    assert full.meta["acp-agent"]["error"]["kind"] == "storage_full"
    told = [u for u in client.updates_for(session_id) if isinstance(u, types.Notice)]
    assert {(n.severity, n.title) for n in told} == {
        (types.NoticeSeverity.ERROR, "The disk is full")
    }
    assert any("Branch 'streamer' stopped" in (n.description or "") for n in told)
    assert listed.stop_reason == types.StopReason.END_TURN
    assert "- streamer: failed: the disk was full" in table
    assert healed.stop_reason == types.StopReason.END_TURN
    assert "error" not in (healed.meta or {}).get("acp-agent", {})
    assert store_problems(database) == []
    assert _notifications_of_branches(database) == 1

    for _ in range(2):
        async with running_agent(home, script=script) as client:
            await client.load(session_id, workspace)
            replay = client.updates_for(session_id)
        rows = _branch_rows(replay)
        assert rows
        assert {_final_status(row) for row in rows.values()} == {"failed"}, rows
        for row in rows.values():
            assert "The disk was full, so its work could not be recorded" in _row_text(row)
        assert store_problems(database) == []
        assert _notifications_of_branches(database) == 1


def _storage_error(answer: dict[str, Any]) -> dict[str, Any]:
    """The `acp-agent` error an error response carries in its data."""
    assert answer["error"]["code"] == -32603, answer
    error: dict[str, Any] = answer["error"]["data"]["acp-agent"]["error"]
    return error


async def test_opening_a_session_on_a_full_disk_is_answered_storage_full_naming_the_disk(
    small_disk: Path, tmp_path: Path
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = small_disk / "home"
    script = write_script(tmp_path / "s.json", [{"text": "Hello."}])
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(workspace)
        await client.prompt(session_id, "Hi.")
    fill(small_disk)
    opened = {"cwd": str(workspace), "mcpServers": []}
    async with running_agent(home, script=script) as client:
        answers = [
            await client.request_raw("session/new", opened),
            await client.request_raw("session/load", {"sessionId": session_id, **opened}),
            await client.request_raw("session/resume", {"sessionId": session_id, **opened}),
        ]
    for answer in answers:
        error = _storage_error(answer)
        assert error["kind"] == "storage_full"
        assert error["location"] == str(home / "data")
        message = answer["error"]["message"]
        assert f"the disk at {small_disk} is full" in message
        assert f"the session store in {home / 'data'} cannot be written" in message


async def test_on_a_tiny_disk_the_log_gives_back_freed_room_and_a_full_load_names_it(
    tmp_path: Path,
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # Room for a few replies of 200 KB: the log never reaches SQLite's own checkpoint.
    # (3 MB: with the owners' and session files' tables, 2 MB left the healed prompt no
    # room beside what the full one's log had taken.)
    with mounted(tmp_path / "tiny", "3m") as disk:
        home = disk / "home"
        wal = home / "data" / "sessions.sqlite3-wal"
        script = write_script(tmp_path / "s.json", *[[{"text": "x" * 4096}] * 50] * 8)
        async with running_agent(home, script=script) as client:
            session_id = await client.new_session(workspace)
            await client.prompt(session_id, "Write.")
            await client.prompt(session_id, "Write.")
            filler = fill(disk)
            full = await client.prompt(session_id, "Write.")
            log_when_full = wal.stat().st_size
            filler.unlink()
            healed = await client.prompt(session_id, "Write.")
            log_when_healed = wal.stat().st_size
            fill(disk)
            assert client.process is not None
            client.process.kill()
            await client.process.wait()
        async with running_agent(home, script=script) as client:
            answer = await client.request_raw(
                "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
            )
    assert full.meta is not None
    assert full.meta["acp-agent"]["error"]["kind"] == "storage_full"
    assert healed.meta is not None
    assert "error" not in healed.meta["acp-agent"]
    # Once there was room, the log was checkpointed and cut back, not left to refill it.
    assert log_when_healed < log_when_full / 2, (log_when_full, log_when_healed)
    assert _storage_error(answer)["kind"] == "storage_full"
    assert str(home / "data") in answer["error"]["message"]


async def test_a_command_whose_registration_cannot_be_written_runs_and_ends_with_the_agent(
    small_disk: Path, tmp_path: Path
):
    """The notes' folder is on a full disk: the command runs, the reaper still holds it."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    (home / "data" / "jobs").symlink_to(small_disk)
    fill(small_disk)
    script = write_script(
        tmp_path / "s.json", [_tool("shell", command="echo $$ > cmd.pid; sleep 120")]
    )
    pid_file = workspace / "cmd.pid"
    try:
        async with running_agent(
            home, script=script, client=EditorClient(decide=allow_all)
        ) as client:
            session_id = await client.new_session(workspace)
            turn = asyncio.create_task(client.prompt(session_id, "Run it."))
            turn.add_done_callback(lambda task: task.cancelled() or task.exception())
            await wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
            noted = sorted(os.listdir(small_disk))
            assert client.process is not None
            client.process.kill()
            await client.process.wait()
        leader = int(pid_file.read_text())
        with contextlib.suppress(TimeoutError):
            await wait_until(lambda: group_members(leader) == [], 5.0)
        assert noted == ["filler"]  # nothing could be noted on that disk
        assert group_members(leader) == []
    finally:
        if pid_file.exists() and pid_file.read_text().strip():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)
