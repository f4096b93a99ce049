"""Background jobs end to end: the real agent over stdio, a fake OpenAI provider, real processes.

A job is started by `shell` with `background`, runs while its line goes on,
and reports back as one `<notification source="job/ID">` in that line's
next model request. Each test runs where it matters both through a client
terminal (an `EditorBridge` serving `terminal/*`) and locally (a client
offering nothing).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol import methods, types
from tests.support import EditorClient, line_of_request, openai_env, running_agent
from tests.support.editor_client import allow_all
from tests.support.fake_provider import (
    Exchange,
    FakeProviderServer,
    openai_reply,
    openai_tool_calls,
)
from tests.support.processes import alive, children_of, group_members
from tests.tools.editor import EditorBridge

pytestmark = pytest.mark.e2e

MODES = ("client-terminal", "local")
_JOB_ID = re.compile(r"job_[0-9a-f]{32}")


def shell(call_id: str, command: str, *, background: bool = True) -> Exchange:
    arguments: dict[str, Any] = {"command": command}
    if background:
        arguments["background"] = True
    return openai_tool_calls((call_id, "shell", arguments))


def with_job(call_id: str, tool: str, **arguments: Any) -> Callable[[Any], Exchange]:
    """A call of `tool` on the job the request mentions (its id came in a tool result)."""

    def make(body: Any) -> Exchange:
        return openai_tool_calls((call_id, tool, {"job_id": job_in(body), **arguments}))

    return make


def job_in(body: Any) -> str:
    found = _JOB_ID.findall(json.dumps(body))
    assert found, "no job id in the request"
    return str(found[0])


def notifications(body: Any) -> list[str]:
    """The job notifications a model request carries (the texts of their messages)."""
    return [
        str(m["content"])
        for m in body["messages"]
        if m["role"] == "user" and '<notification source="job/' in str(m.get("content"))
    ]


def tool_results(body: Any) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def agent_text(updates: list[types.SessionUpdate]) -> str:
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, types.AgentMessageChunk) and isinstance(u.content, types.TextContent)
    )


def allowing() -> EditorClient:
    return EditorClient(decide=allow_all)


@contextlib.asynccontextmanager
async def editor_for(mode: str) -> AsyncIterator[tuple[EditorClient, EditorBridge | None]]:
    if mode == "local":
        yield EditorClient(decide=allow_all), None
        return
    async with EditorBridge(has_terminals=True) as editor:
        yield EditorClient(editor=editor, decide=allow_all), editor


async def wait_for(condition: Callable[[], object], timeout_s: float = 10.0) -> None:
    with anyio.fail_after(timeout_s):
        while not condition():  # noqa: ASYNC110 - polls processes and files, not our state
            await anyio.sleep(0.05)


def workspace_in(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace


@pytest.mark.parametrize("mode", MODES)
async def test_a_job_reports_once_in_the_next_request_of_its_line(tmp_path: Path, mode: str):
    workspace = workspace_in(tmp_path)
    with FakeProviderServer() as server:
        server.add(
            shell("c1", "sleep 0.5; echo done"),
            shell("c2", "sleep 2.5", background=False),  # the job ends meanwhile
            openai_reply("It finished."),
            openai_reply("Still here."),
        )
        async with (
            editor_for(mode) as (client, editor),
            running_agent(tmp_path / "home", env=openai_env(server.base_url), client=client),
        ):
            session_id = await client.new_session(workspace)
            first = await client.prompt(session_id, "Run it in the background")
            updates = client.updates_for(session_id)
            second = await client.prompt(session_id, "Anything else?")
        bodies = [r.json() for r in server.requests]

    assert first.stop_reason == second.stop_reason == types.StopReason.END_TURN
    assert len(bodies) == 4
    started = tool_results(bodies[1])[0]
    assert started.startswith("Started in the background as job job_")
    assert notifications(bodies[0]) == notifications(bodies[1]) == []
    [notice] = notifications(bodies[2])
    job_id = job_in({"text": started})
    assert f'<notification source="job/{job_id}">' in notice
    assert f"Background job {job_id} (`sleep 0.5; echo done`) exited with code 0 after" in notice
    assert notice.endswith("Its last output:\ndone\n</notification>")  # all of it: no "More"
    # It stays one message of the history: the next turn's request carries it once.
    assert notifications(bodies[3]) == [notice]
    # The tool call the person saw ended at once (a job, not a wait).
    [call] = [
        u for u in updates if isinstance(u, types.ToolCall) and "in the background" in u.title
    ]
    assert call.title == "Run `sleep 0.5; echo done` in the background"
    # It ended during the turn: the person sees that at once, before the reply to it.
    [ended] = [u for u in updates if isinstance(u, types.ToolCall) and u.title.startswith("Job ")]
    assert ended.title == "Job `sleep 0.5; echo done` ended"
    reply = next(u for u in updates if isinstance(u, types.AgentMessageChunk))
    assert updates.index(ended) < updates.index(reply)
    where = ended.content[-1].content.text  # type: ignore[index,union-attr]
    if editor is not None:
        assert where.endswith("All of its output is in its terminal, in the call that started it.")
    else:
        assert where.endswith("What was kept of its output: `/jobs job_" + job_id[4:12] + "`.")
    if editor is not None:
        # The job ran in the editor's terminal, shown in the call, released once it ended.
        terminal_id = editor.terminals[0].terminal_id
        shown = [
            p.terminal_id
            for u in updates
            if isinstance(u, types.ToolCallProgress) and u.tool_call_id == call.tool_call_id
            for p in u.content or []
            if isinstance(p, types.Terminal)
        ]
        assert terminal_id in shown
        methods = [m for m, t in editor.calls if t == terminal_id]
        assert methods[0] == "terminal/create"
        assert methods[-1] == "terminal/release"
        assert "terminal/wait_for_exit" in methods


@pytest.mark.parametrize("mode", MODES)
async def test_output_is_read_while_it_runs_and_a_stopped_job_is_gone(tmp_path: Path, mode: str):
    workspace = workspace_in(tmp_path)
    command = "echo $$ > job.pid; echo first; exec sleep 1000"
    with FakeProviderServer() as server:
        server.add(
            shell("c1", command),
            shell("c2", "sleep 1", background=False),
            with_job("c3", "job_output"),
            with_job("c4", "job_stop"),
            openai_reply("Stopped it."),
        )
        async with (
            editor_for(mode) as (client, _editor),
            running_agent(tmp_path / "home", env=openai_env(server.base_url), client=client),
        ):
            session_id = await client.new_session(workspace)
            response = await client.prompt(session_id, "Start the server, then stop it")
            pid = int((workspace / "job.pid").read_text())
            gone = not alive(pid)
            listed = await client.prompt(session_id, "/jobs")
            table = agent_text(client.updates_for(session_id))
        bodies = [r.json() for r in server.requests]

    assert response.stop_reason == types.StopReason.END_TURN
    output = tool_results(bodies[3])[-1]
    assert "is running" in output
    assert "first" in output
    stopped = tool_results(bodies[4])[-1]
    assert stopped.startswith("Stopped: job_")
    assert "was stopped by you" in stopped
    assert gone
    # The model stopped it itself: no notification comes back for it.
    assert notifications(bodies[4]) == []
    assert listed.stop_reason == types.StopReason.END_TURN
    # The person reads who stopped it, and the command cut to fit a narrow client.
    assert "`echo $$ > job.pid; echo first; exec sle…`: was stopped by the agent" in table


async def test_a_job_outlives_its_turn_and_its_end_shows_at_the_next_prompt(tmp_path: Path):
    workspace = workspace_in(tmp_path)
    home = tmp_path / "home"
    with FakeProviderServer() as server:
        server.add(
            shell("c1", "sleep 1; echo late"),
            openai_reply("It runs."),
            openai_reply("It ended."),
        )
        env = openai_env(server.base_url)
        async with running_agent(home, env=env, client=allowing()) as client:
            session_id = await client.new_session(workspace)
            await client.prompt(session_id, "Start it")
            at_end = len(client.updates_for(session_id))
            await anyio.sleep(2.0)
            between = client.updates_for(session_id)[at_end:]
            listed = await client.prompt(session_id, "/jobs")
            table = agent_text(client.updates_for(session_id)[at_end:])
            [short_id] = re.findall(r"`(job_[0-9a-f]{8})`", table)
            before_show = len(client.updates_for(session_id))
            await client.prompt(session_id, f"/jobs {short_id}")
            before_turn = len(client.updates_for(session_id))
            shown = agent_text(client.updates_for(session_id)[before_show:])
            await client.prompt(session_id, "What happened?")
            turn = client.updates_for(session_id)[before_turn:]
        async with running_agent(home, env=env) as again:
            await again.load(session_id, workspace)
            replayed = again.updates_for(session_id)
        bodies = [r.json() for r in server.requests]

    assert between == []  # nothing reaches the editor between turns
    assert listed.stop_reason == types.StopReason.END_TURN
    assert "`sleep 1; echo late`: exited with code 0 after" in table
    # `/jobs <job id>`: the job, and the end of what it printed.
    assert shown.startswith(f"`{short_id}` `sleep 1; echo late` exited with code 0 after ")
    assert shown.endswith("Its output (5 bytes in all), the end of it:\n\n```\nlate\n```")
    assert notifications(bodies[1]) == []
    [notice] = notifications(bodies[2])
    assert "(`sleep 1; echo late`) exited with code 0" in notice
    assert "Its last output:\nlate" in notice
    # The person sees it end at the start of the next prompt, before the model's reply.
    row = turn[0]
    assert isinstance(row, types.ToolCall)
    assert row.title == "Job `sleep 1; echo late` ended"
    assert row.status == types.ToolCallStatus.COMPLETED
    text = row.content[0].content.text  # type: ignore[index,union-attr]
    assert text.startswith("The background job `sleep 1; echo late` exited with code 0 after ")
    assert f"It was started by the main line (job `{short_id}`)." in text
    assert "Its last output:\n```\nlate\n```" in text
    assert f"What was kept of its output: `/jobs {short_id}`." in text
    assert agent_text(turn) == "It ended."
    # A load shows it where the live turn did.
    [again] = [u for u in replayed if isinstance(u, types.ToolCall) and u.title.startswith("Job ")]
    assert again == row


@pytest.mark.parametrize("mode", MODES)
async def test_cancel_leaves_a_job_running_and_closing_the_session_ends_it(
    tmp_path: Path, mode: str
):
    workspace = workspace_in(tmp_path)
    with FakeProviderServer() as server:
        server.add(
            shell("c1", "echo $$ > job.pid; exec sleep 1000"),
            shell("c2", "sleep 30", background=False),
        )
        async with (
            editor_for(mode) as (client, _editor),
            running_agent(tmp_path / "home", env=openai_env(server.base_url), client=client),
        ):
            session_id = await client.new_session(workspace)
            async with anyio.create_task_group() as group:
                outcome: list[types.PromptResponse] = []

                async def prompt() -> None:
                    outcome.append(await client.prompt(session_id, "Start it, then wait"))

                group.start_soon(prompt)
                await wait_for(
                    lambda: len(server.requests) >= 2 and (workspace / "job.pid").exists()
                )
                await wait_for(lambda: (workspace / "job.pid").read_text().strip() != "")
                pid = int((workspace / "job.pid").read_text())
                await anyio.sleep(0.3)  # the foreground sleep is running
                client.cancel(session_id)
            assert outcome[0].stop_reason == types.StopReason.CANCELLED
            await anyio.sleep(0.5)
            running_after_cancel = alive(pid)
            listed = await client.prompt(session_id, "/jobs")
            table = agent_text(client.updates_for(session_id))
            closed = await client.request_raw(methods.SESSION_CLOSE, {"sessionId": session_id})
            await wait_for(lambda: not alive(pid))

    assert running_after_cancel
    assert listed.stop_reason == types.StopReason.END_TURN
    assert ": is running for " in table
    assert "error" not in closed
    assert not alive(pid)


async def test_the_agent_exiting_ends_its_jobs(tmp_path: Path):
    workspace = workspace_in(tmp_path)
    with FakeProviderServer() as server:
        server.add(shell("c1", "echo $$ > job.pid; sleep 1000 & wait"), openai_reply("Started."))
        async with running_agent(
            tmp_path / "home", env=openai_env(server.base_url), client=allowing()
        ) as client:
            session_id = await client.new_session(workspace)
            await client.prompt(session_id, "Start it")
            await wait_for(lambda: (workspace / "job.pid").exists())
            await wait_for(lambda: (workspace / "job.pid").read_text().strip() != "")
            pgid = int((workspace / "job.pid").read_text())
            await wait_for(lambda: len(group_members(pgid)) == 2)
        # stdin closed, the agent exited: the whole group went with it.
        await wait_for(lambda: group_members(pgid) == [])


async def test_after_sigkill_a_job_ends_with_the_agent_and_is_shown_interrupted(tmp_path: Path):
    workspace = workspace_in(tmp_path)
    home = tmp_path / "home"
    with FakeProviderServer() as server:
        server.add(
            shell("c1", "echo $$ > job.pid; sleep 1000 & wait"),
            openai_reply("Started."),
            openai_reply("It was interrupted."),
        )
        env = openai_env(server.base_url)
        async with running_agent(home, env=env, client=allowing()) as client:
            session_id = await client.new_session(workspace)
            await client.prompt(session_id, "Start it")
            await wait_for(lambda: (workspace / "job.pid").exists())
            await wait_for(lambda: (workspace / "job.pid").read_text().strip() != "")
            pgid = int((workspace / "job.pid").read_text())
            await wait_for(lambda: len(group_members(pgid)) == 2)
            assert client.process is not None
            os.kill(client.process.pid, signal.SIGKILL)
            await client.process.wait()
        # Its reaper ended the job's whole group at once: no restart needed.
        await wait_for(lambda: group_members(pgid) == [])
        async with running_agent(home, env=env, client=allowing()) as again:
            await again.load(session_id, workspace)
            loaded = len(again.updates_for(session_id))
            await anyio.sleep(0.3)
            after_load = again.updates_for(session_id)[loaded:]
            listed = await again.prompt(session_id, "/jobs")
            table = agent_text(again.updates_for(session_id)[loaded:])
            before_turn = len(again.updates_for(session_id))
            await again.prompt(session_id, "What happened to it?")
            turn = again.updates_for(session_id)[before_turn:]
        bodies = [r.json() for r in server.requests]

    assert after_load == []  # nothing after the load's response
    assert listed.stop_reason == types.StopReason.END_TURN
    assert "was interrupted" in table
    [notice] = notifications(bodies[2])
    assert "was interrupted: the agent stopped while it ran; it is not re-run" in notice
    assert "`echo $$ &gt; job.pid; sleep 1000 &amp; wait`" in notice  # escaped as tag text
    # The person sees it too, at the start of the next prompt.
    row = turn[0]
    assert isinstance(row, types.ToolCall)
    assert row.title == "Job `echo $$ > job.pid; sleep 1000 & wait` ended"
    assert row.content[0].content.text.startswith(  # type: ignore[index,union-attr]
        "The background job `echo $$ > job.pid; sleep 1000 & wait` was interrupted: the agent "
        "stopped while it ran; it is not re-run."
    )


async def test_a_job_both_the_agent_and_its_reaper_left_ends_before_initialize_is_answered(
    tmp_path: Path,
):
    workspace = workspace_in(tmp_path)
    home = tmp_path / "home"
    with FakeProviderServer() as server:
        server.add(shell("c1", "echo $$ > job.pid; sleep 1000 & wait"), openai_reply("Started."))
        async with running_agent(
            home, env=openai_env(server.base_url), client=allowing()
        ) as client:
            session_id = await client.new_session(workspace)
            await client.prompt(session_id, "Start it")
            await wait_for(lambda: (workspace / "job.pid").read_text().strip() != "")
            pgid = int((workspace / "job.pid").read_text())
            await wait_for(lambda: len(group_members(pgid)) == 2)
            assert client.process is not None
            [reaper] = children_of(client.process.pid, command_contains="process_groups._reaper")
            os.kill(reaper, signal.SIGKILL)  # both killed at once: only the disk note is left
            os.kill(client.process.pid, signal.SIGKILL)
            await client.process.wait()
        await anyio.sleep(0.3)
        survived = group_members(pgid)
        async with running_agent(home, env=openai_env(server.base_url)):
            # The new agent's sweep ended it before `initialize` was answered.
            swept = group_members(pgid)
    try:
        assert len(survived) == 2
        assert swept == []
        assert list((home / "data" / "jobs").glob("*.json")) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


async def test_the_job_limit_refuses_and_names_it(tmp_path: Path):
    workspace = workspace_in(tmp_path)
    with FakeProviderServer() as server:
        server.add(
            shell("c1", "sleep 1000"),
            shell("c2", "sleep 1000"),
            openai_reply("One runs."),
        )
        env = openai_env(server.base_url)
        async with running_agent(
            tmp_path / "home", env=env, args=["--max-jobs", "1"], client=allowing()
        ) as client:
            session_id = await client.new_session(workspace)
            await client.prompt(session_id, "Start two")
        bodies = [r.json() for r in server.requests]

    refused = tool_results(bodies[2])[-1]
    assert refused == (
        "Error: Not started: 1 background job is running, the most this session allows (1); "
        "stop one (job_stop) or wait for one to end."
    )


async def test_a_branch_job_reports_to_the_branch_and_ends_when_the_branch_closes(tmp_path: Path):
    workspace = workspace_in(tmp_path)

    def close_branch(body: Any) -> Exchange:
        [branch_id] = set(re.findall(r"br_[0-9a-f]{32}", json.dumps(tool_results(body))))
        return openai_tool_calls(("m3", "branch_close", {"branch_id": branch_id}))

    with FakeProviderServer(route=line_of_request) as server:
        server.add(
            openai_tool_calls(("m1", "branch", {"task": "Run the check", "title": "check"})),
            openai_tool_calls(("m2", "branch_wait", {"all": True, "timeout_s": 20})),
            close_branch,
            openai_reply("Closed."),
            queue="main",
        )
        server.add(
            shell("b1", "sleep 0.5; echo checked"),
            shell("b2", "echo $$ > server.pid; exec sleep 1000"),
            shell("b3", "sleep 2.5", background=False),
            openai_reply("The check printed checked; the server runs."),
            queue="branch",
        )
        env = openai_env(server.base_url)
        async with running_agent(tmp_path / "home", env=env, client=allowing()) as client:
            session_id = await client.new_session(workspace)
            await client.prompt(session_id, "Check it in a branch")
            server_pid = int((workspace / "server.pid").read_text())
            await wait_for(lambda: not alive(server_pid))
            await client.prompt(session_id, "/jobs")
            updates = client.updates_for(session_id)
            table = agent_text(updates)
        requests = [(line_of_request(r.body), r.json()) for r in server.requests]

    branch_bodies = [body for line, body in requests if line == "branch"]
    main_bodies = [body for line, body in requests if line == "main"]
    assert len(branch_bodies) == 4
    assert [len(notifications(body)) for body in branch_bodies] == [0, 0, 0, 1]
    [notice] = notifications(branch_bodies[3])
    assert "(`sleep 0.5; echo checked`) exited with code 0" in notice
    # The job reported to the line that started it, not to main.
    assert all(notifications(body) == [] for body in main_bodies)
    assert "`sleep 0.5; echo checked`: exited with code 0 after" in table
    assert ", branch 'check'" in table
    # The person sees it end in the main line's turn, naming the branch that started it.
    [ended] = [u for u in updates if isinstance(u, types.ToolCall) and u.title.startswith("Job ")]
    assert ended.title == "Job `sleep 0.5; echo checked` ended"
    assert "It was started by the branch 'check'" in ended.content[0].content.text  # type: ignore[index,union-attr]
    assert "`echo $$ > server.pid; exec sleep 1000`: was killed" in table


async def test_a_loud_job_costs_bounded_memory_and_a_bounded_record(tmp_path: Path):
    workspace = workspace_in(tmp_path)
    home = tmp_path / "home"
    command = "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo END"
    with FakeProviderServer() as server:
        server.add(
            shell("c1", command),
            with_job("c2", "job_output", wait_s=30, tail_bytes=100),
            openai_reply("It was loud."),
        )
        env = openai_env(server.base_url)
        async with running_agent(home, env=env, client=allowing()) as client:
            session_id = await client.new_session(workspace)
            await client.prompt(session_id, "Make noise")
        bodies = [r.json() for r in server.requests]
    with sqlite3.connect(home / "data" / "sessions.sqlite3") as db:
        [(record,)] = db.execute("SELECT payload FROM events WHERE kind = 'job.ended'").fetchall()

    output = tool_results(bodies[2])[-1]
    assert "exited with code 0" in output
    assert "Output (3000005 bytes in all):" in output
    assert output.endswith("xxx\nEND\n")
    ended = json.loads(record)
    assert ended["output_bytes"] == 3000005
    assert len(ended["output"]) < 34 * 1024  # head and tail kept, the middle counted
    assert "bytes of output omitted" in ended["output"]
    [notice] = notifications(bodies[2])
    assert len(notice) < 3000
    assert '(More: job_output with job_id "job_' in notice
