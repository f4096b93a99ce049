"""Branches end to end: lines of work the model starts in one session, shown to the editor.

The real agent plays a script whose `branches` entries are the children's
replies (matched by title); the editor is the test client. Each test checks
what the editor saw: every branch shown as a tool call of the main line's
turn, its steps and report, and nothing between turns.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol import types
from tests.support import EditorClient, line_of_request, openai_env, running_agent, write_script
from tests.support.editor_client import allow_all
from tests.support.fake_provider import FakeProviderServer, openai_reply, openai_tool_calls
from tests.tools.editor import EditorBridge

pytestmark = pytest.mark.e2e

Call = types.ToolCall | types.ToolCallProgress


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments}}


def branch(title: str, task: str | None = None) -> dict[str, Any]:
    return tool("branch", task=task or f"Do {title}", title=title)


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def sleep(ms: int) -> dict[str, Any]:
    return {"sleep_ms": ms}


def child(title: str, *replies: list[dict[str, Any]]) -> dict[str, Any]:
    return {"title": title, "replies": list(replies)}


def showings(updates: list[types.SessionUpdate], title: str) -> list[list[Call]]:
    """Each showing of the branch titled `title` (a tool call and its updates), in order."""
    found: dict[str, list[Call]] = {}
    for update in updates:
        if isinstance(update, types.ToolCall) and update.title == f"Branch: {title}":
            found[update.tool_call_id] = [update]
        elif isinstance(update, types.ToolCallProgress) and update.tool_call_id in found:
            found[update.tool_call_id].append(update)
    return list(found.values())


def text_of(call: Call) -> str:
    parts = call.content or []
    return "\n".join(p.content.text for p in parts if isinstance(p, types.Content))  # type: ignore[union-attr]


def statuses(showing: list[Call]) -> list[str]:
    return [u.status.value for u in showing if u.status is not None]


def result_text(updates: list[types.SessionUpdate], tool_title_prefix: str) -> str:
    """The result text of the main line's tool call whose title starts so."""
    ids = [
        u.tool_call_id
        for u in updates
        if isinstance(u, types.ToolCall) and u.title.startswith(tool_title_prefix)
    ]
    assert ids, f"no tool call titled {tool_title_prefix!r}"
    last = [
        u
        for u in updates
        if isinstance(u, types.ToolCallProgress) and u.tool_call_id == ids[-1] and u.content
    ]
    return text_of(last[-1])


def agent_text(updates: list[types.SessionUpdate]) -> str:
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, types.AgentMessageChunk) and isinstance(u.content, types.TextContent)
    )


def workspace_in(tmp_path: Path, **files: str) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for name, content in files.items():
        (workspace / name).write_text(content)
    return workspace


async def test_two_branches_read_files_while_the_main_line_writes_a_third(tmp_path: Path):
    workspace = workspace_in(tmp_path, **{"a.txt": "alpha\n", "b.txt": "beta\n"})
    script = write_script(
        tmp_path / "script.json",
        [branch("read-a", "Read a.txt and report"), branch("read-b", "Read b.txt and report")],
        [tool("write", path="c.txt", content="gamma\n")],
        [tool("branch_wait", all=True, timeout_s=20)],
        [text("Both reported.")],
        branches=[
            child("read-a", [sleep(100), tool("read", path="a.txt")], [text("a.txt says alpha")]),
            child("read-b", [sleep(150), tool("read", path="b.txt")], [text("b.txt says beta")]),
        ],
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        client.decide = allow_all
        session_id = await client.new_session(workspace)
        response = await client.prompt(session_id, "Read a and b, write c")
        updates = client.updates_for(session_id)

    assert response.stop_reason == types.StopReason.END_TURN
    assert (workspace / "c.txt").read_text() == "gamma\n"
    for title, report in (("read-a", "a.txt says alpha"), ("read-b", "b.txt says beta")):
        [showing] = showings(updates, title)
        first, last = showing[0], showing[-1]
        assert isinstance(first, types.ToolCall)
        assert (first.kind, first.status) == (
            types.ToolKind.OTHER,
            types.ToolCallStatus.IN_PROGRESS,
        )
        assert statuses(showing)[-1] == "completed"
        assert statuses(showing)[:-1] == ["in_progress"] * (len(showing) - 1)
        name = "a.txt" if title == "read-a" else "b.txt"
        assert text_of(last) == f"✓ Read {name}\n\n{report}"
        assert last.meta["branch"]["state"] == "finished"  # type: ignore[index]
    waited = result_text(updates, "Wait for branches")
    assert "a.txt says alpha" in waited
    assert "b.txt says beta" in waited
    assert agent_text(updates) == "Both reported."


async def test_a_branch_still_working_when_the_turn_ends_is_never_shown_done_and_ends_next_turn(
    tmp_path: Path,
):
    workspace = workspace_in(tmp_path)
    script = write_script(
        tmp_path / "script.json",
        [branch("slow")],
        [text("Started it.")],
        [text("It reported.")],
        branches=[child("slow", [sleep(1200), text("slow work done")])],
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(workspace)
        await client.prompt(session_id)
        first_turn = client.updates_for(session_id)
        seen = len(client.updates)
        await anyio.sleep(2.0)  # the branch finishes meanwhile
        between = client.updates[seen:]
        await client.prompt(session_id, "And?")
        second_turn = client.updates_for(session_id)[len(first_turn) :]

    [running] = showings(first_turn, "slow")
    # Never shown done while it works: the row stays in progress and says when it ends.
    assert statuses(running) == ["in_progress", "in_progress"]
    assert text_of(running[-1]) == "Still working; its end shows at your next prompt."
    assert running[-1].meta["branch"]["state"] == "running"  # type: ignore[index]
    assert between == []  # nothing reaches the editor between a response and the next prompt
    # The same row ends at the start of the next prompt, before the model's reply.
    [ended] = second_turn[:1]
    assert isinstance(ended, types.ToolCallProgress)
    assert ended.tool_call_id == running[0].tool_call_id
    assert ended.status == types.ToolCallStatus.COMPLETED
    assert text_of(ended) == "slow work done"
    assert showings(second_turn, "slow") == []  # no second row for it
    assert agent_text(second_turn) == "It reported."


async def test_a_branch_runs_its_commands_itself_never_in_a_terminal_outside_its_row(
    tmp_path: Path,
):
    # An editor terminal made for a branch shown as a row would float where the editor
    # puts new terminals (Toad: the bottom), or be refused between prompts (acpx).
    workspace = workspace_in(tmp_path)
    script = write_script(
        tmp_path / "script.json",
        [branch("runner")],
        [tool("branch_wait", all=True, timeout_s=20)],
        [text("Done.")],
        branches=[child("runner", [tool("shell", command="echo ran > ran.txt")], [text("ran")])],
    )
    async with EditorBridge(has_terminals=True) as editor:
        client = EditorClient(editor=editor, decide=allow_all)
        async with running_agent(tmp_path / "home", script=script, client=client):
            session_id = await client.new_session(workspace)
            await client.prompt(session_id)
            updates = client.updates_for(session_id)
            asked = [m.get("method") for m in client.messages if "method" in m]

    assert (workspace / "ran.txt").read_text() == "ran\n"
    assert "terminal/create" not in asked
    [showing] = showings(updates, "runner")
    assert text_of(showing[-1]) == "✓ Run `echo ran > ran.txt`\n\nran"


async def test_a_message_from_the_main_line_starts_the_branch_again(tmp_path: Path):
    workspace = workspace_in(tmp_path)
    script = write_script(
        tmp_path / "script.json",
        [branch("helper")],
        [tool("branch_wait", branch_ids=["helper"], timeout_s=20)],
        [tool("branch_message", branch_id="helper", text="Now check the docs too")],
        [tool("branch_wait", branch_ids=["helper"], timeout_s=20)],
        [text("Done.")],
        branches=[child("helper", [text("first report")], [text("docs checked")])],
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(workspace)
        await client.prompt(session_id)
        updates = client.updates_for(session_id)

    first, second = showings(updates, "helper")
    assert text_of(first[-1]) == "first report"
    assert text_of(second[-1]) == "Got a message from the main line\n\ndocs checked"
    assert result_text(updates, "Message branch").startswith("Sent to branch br_")


async def test_closing_one_branch_leaves_its_sibling_running(tmp_path: Path):
    workspace = workspace_in(tmp_path)
    script = write_script(
        tmp_path / "script.json",
        [branch("doomed"), branch("keeper")],
        [tool("branch_close", branch_id="doomed")],
        [tool("branch_wait", branch_ids=["keeper"], timeout_s=20)],
        [text("Done.")],
        branches=[
            child("doomed", [sleep(10_000), text("never")]),
            child("keeper", [sleep(500), text("kept going")]),
        ],
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(workspace)
        await client.prompt(session_id)
        updates = client.updates_for(session_id)
        listed = await client.prompt(session_id, "/branches")
        table = agent_text(client.updates_for(session_id)[len(updates) :])

    [doomed] = showings(updates, "doomed")
    assert doomed[-1].meta["branch"]["state"] == "closed"  # type: ignore[index]
    [keeper] = showings(updates, "keeper")
    assert statuses(keeper)[-1] == "completed"
    assert text_of(keeper[-1]) == "kept going"
    assert listed.stop_reason == types.StopReason.END_TURN
    rows = [row for row in table.splitlines() if row.startswith("- ")]
    assert [row.split(",")[0] for row in rows] == ["- doomed: closed", "- keeper: finished"]


async def test_cancel_stops_the_main_turn_and_every_branch_which_can_go_on(tmp_path: Path):
    workspace = workspace_in(tmp_path)
    script = write_script(
        tmp_path / "script.json",
        [branch("long")],
        [tool("branch_wait", timeout_s=60)],
        [tool("branch_message", branch_id="long", text="Go on")],
        [tool("branch_wait", timeout_s=20)],
        [text("Resumed.")],
        branches=[child("long", [sleep(30_000), text("never")], [text("went on")])],
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(workspace)
        async with anyio.create_task_group() as group:
            responses: list[types.PromptResponse] = []

            async def prompt() -> None:
                responses.append(await client.prompt(session_id))

            group.start_soon(prompt)
            await client.wait_for_update(
                session_id,
                lambda u: isinstance(u, types.ToolCall) and u.title == "Wait for branches",
            )
            client.cancel(session_id)
        cancelled = client.updates_for(session_id)
        await client.prompt(session_id, "Go on")
        resumed = client.updates_for(session_id)[len(cancelled) :]

    assert responses[0].stop_reason == types.StopReason.CANCELLED
    [stopped] = showings(cancelled, "long")
    assert stopped[-1].meta["branch"]["state"] == "interrupted"  # type: ignore[index]
    assert statuses(stopped)[-1] == "failed"
    # It stays open: messaged in the next turn, it works again and reports.
    shown = showings(resumed, "long")
    assert text_of(shown[-1][-1]).endswith("went on")
    assert agent_text(resumed) == "Resumed."


async def test_a_branch_has_no_branch_tools_and_the_limit_refuses_more(tmp_path: Path):
    workspace = workspace_in(tmp_path)
    script = write_script(
        tmp_path / "script.json",
        [branch("first")],
        [branch("second")],
        [tool("branch_wait", branch_ids=["first"], timeout_s=20)],
        [text("Done.")],
        branches=[child("first", [branch("grandchild")], [text("could not branch")])],
    )
    async with running_agent(
        tmp_path / "home", script=script, args=["--max-branches", "1"]
    ) as client:
        session_id = await client.new_session(workspace)
        await client.prompt(session_id)
        updates = client.updates_for(session_id)

    refused = result_text(updates, "Start a branch: second")
    # The person reads the limit; the model is also told what it can do about it.
    assert refused == "Not run: 1 branch is working, the most this session allows (1)."
    [first] = showings(updates, "first")
    assert text_of(first[-1]) == "✗ Start a branch: grandchild\n\ncould not branch"
    assert showings(updates, "grandchild") == []


async def test_a_sibling_edit_makes_a_branch_read_the_file_again(tmp_path: Path):
    workspace = workspace_in(tmp_path, **{"shared.txt": "one\n"})
    script = write_script(
        tmp_path / "script.json",
        [branch("reader"), branch("writer")],
        [tool("branch_wait", all=True, timeout_s=20)],
        [text("Done.")],
        branches=[
            child(
                "reader",
                [tool("read", path="shared.txt")],
                [sleep(800), tool("edit", path="shared.txt", old_text="one", new_text="uno")],
                [text("the file changed under me")],
            ),
            child(
                "writer",
                [tool("read", path="shared.txt")],
                [sleep(200), tool("edit", path="shared.txt", old_text="one", new_text="two")],
                [text("edited it")],
            ),
        ],
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        client.decide = allow_all
        session_id = await client.new_session(workspace)
        await client.prompt(session_id)
        updates = client.updates_for(session_id)

    assert (workspace / "shared.txt").read_text() == "two\n"
    [reader] = showings(updates, "reader")
    assert "✗ Edit shared.txt" in text_of(reader[-1])
    # The writer's question was asked on its showing, naming it.
    [question] = [r for r in client.permission_requests if "writer" in (r.tool_call.title or "")]
    [writer] = showings(updates, "writer")
    assert question.tool_call.tool_call_id == writer[0].tool_call_id
    assert question.tool_call.title == "Branch 'writer' asks: Edit shared.txt"
    assert [r.tool_call.title for r in client.permission_requests].count(
        question.tool_call.title
    ) == 1


async def test_a_question_outside_the_main_turn_waits_for_the_next_prompt(tmp_path: Path):
    workspace = workspace_in(tmp_path)
    script = write_script(
        tmp_path / "script.json",
        [branch("asker")],
        [text("Started it.")],
        [tool("branch_wait", timeout_s=20)],
        [text("It wrote the file.")],
        branches=[
            child(
                "asker",
                [sleep(300), tool("write", path="out.txt", content="hello\n")],
                [text("wrote out.txt")],
            )
        ],
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        client.decide = allow_all
        session_id = await client.new_session(workspace)
        await client.prompt(session_id)
        seen = len(client.updates)
        await anyio.sleep(1.0)  # the branch asks meanwhile: the question waits
        assert client.permission_requests == []
        assert client.updates[seen:] == []
        listed = await client.prompt(session_id, "/branches")
        assert listed.stop_reason == types.StopReason.END_TURN
        table = agent_text(client.updates_for(session_id))
        assert "waiting for your approval (asked in your next prompt)" in table
        assert client.permission_requests == []  # a command is not a turn of the model
        before = len(client.updates_for(session_id))
        await client.prompt(session_id, "Go ahead")
        updates = client.updates_for(session_id)

    [question] = client.permission_requests
    assert question.tool_call.title == "Branch 'asker' asks: Write out.txt"
    assert (workspace / "out.txt").read_text() == "hello\n"
    # Its row, left open at the first prompt's end, goes on in this one and ends.
    [showing] = showings(updates, "asker")
    turn = {id(update) for update in updates[before:]}
    in_turn = [update for update in showing if id(update) in turn]
    assert in_turn[0].meta["branch"]["state"] == "waiting"  # type: ignore[index]
    assert question.tool_call.tool_call_id == showing[0].tool_call_id
    assert text_of(showing[-1]) == "✓ Write out.txt\n\nwrote out.txt"


async def test_a_branch_killed_mid_step_is_interrupted_never_rerun_and_the_session_loads(
    tmp_path: Path,
):
    workspace = workspace_in(tmp_path)
    marker = workspace / "runs.txt"
    script = write_script(
        tmp_path / "script.json",
        [branch("victim")],
        [tool("branch_wait", timeout_s=1)],  # long enough for its command to start
        [text("Started it.")],
        [text("Noted.")],
        branches=[
            child(
                "victim",
                [tool("shell", command="echo ran >> runs.txt && sleep 30")],
                [text("never")],
            )
        ],
    )
    home = tmp_path / "home"
    client = EditorClient(decide=allow_all)
    async with running_agent(home, script=script, client=client) as client:
        session_id = await client.new_session(workspace)
        await client.prompt(session_id)
        for _ in range(100):
            if marker.exists():
                break
            await anyio.sleep(0.05)
        assert client.process is not None
        os.kill(client.process.pid, signal.SIGKILL)
        await client.process.wait()

    assert marker.read_text() == "ran\n"
    async with running_agent(home, script=script) as again:
        loaded = await again.load(session_id, workspace)
        replayed = again.updates_for(session_id)
        assert loaded is not None
        await again.prompt(session_id, "What happened?")
        turn = again.updates_for(session_id)[len(replayed) :]
        listed = await again.prompt(session_id, "/branches")

    assert marker.read_text() == "ran\n"  # nothing re-ran
    # The load ends the showing the agent's death left open, before it replays it:
    # failed, saying why, never still in progress.
    [was] = showings(replayed, "victim")
    assert text_of(was[-1]) == (
        "✗ Run `echo ran >> runs.txt && sleep 30`\n"
        "The agent stopped while it worked; it is not re-run."
    )
    assert statuses(was)[-1] == "failed"
    assert was[-1].meta["branch"]["state"] == "interrupted"  # type: ignore[index]
    assert showings(turn, "victim") == []  # already shown ended: no second row
    assert listed.stop_reason == types.StopReason.END_TURN
    table = agent_text(again.updates_for(session_id)[len(replayed) + len(turn) :])
    assert (
        "- victim: interrupted: the agent stopped while it worked; it is not re-run, last activity"
        in table
    )


async def test_a_branch_report_reaches_the_main_line_request_as_a_notification(tmp_path: Path):
    workspace = workspace_in(tmp_path, **{"notes.txt": "one\ntwo\nthree\n"})
    with FakeProviderServer(route=line_of_request) as server:
        server.add(
            openai_tool_calls(
                ("m1", "branch", {"task": "Count the lines of notes.txt", "title": "notes"})
            ),
            openai_tool_calls(("m2", "branch_wait", {"all": True, "timeout_s": 20})),
            openai_reply("It found three lines."),
            queue="main",
        )
        server.add(
            openai_tool_calls(("c1", "read", {"path": "notes.txt"})),
            openai_reply("notes.txt has 3 lines."),
            queue="branch",
        )
        env = openai_env(server.base_url)
        async with running_agent(tmp_path / "home", env=env) as client:
            session_id = await client.new_session(workspace)
            response = await client.prompt(session_id, "How long are my notes?")
            updates = client.updates_for(session_id)
        requests = [(line_of_request(r.body), r.json()) for r in server.requests]

    assert response.stop_reason == types.StopReason.END_TURN
    mains = [body for line, body in requests if line == "main"]
    branches = [body for line, body in requests if line == "branch"]
    assert (len(mains), len(branches)) == (3, 2)
    main_tools = {t["function"]["name"] for t in mains[0]["tools"]}
    branch_tools = {t["function"]["name"] for t in branches[0]["tools"]}
    names = {"branch", "branch_status", "branch_message", "branch_wait", "branch_close"}
    assert names <= main_tools
    assert not names & branch_tools  # a branch never starts a branch
    assert {"read", "edit", "shell"} <= branch_tools
    # The branch starts from main's history (the person's words) and its own identity.
    child_text = json.dumps(branches[0]["messages"])
    assert "How long are my notes?" in child_text
    assert "Task: Count the lines of notes.txt" in child_text
    # The report reaches main's next request as a notification, not as the person.
    [carrier] = [
        m
        for m in mains[2]["messages"]
        if m["role"] != "system" and "<notification" in str(m.get("content"))
    ]
    assert carrier["role"] == "user"
    notification = str(carrier["content"])
    assert '<notification source="branch/br_' in notification
    assert '("notes") finished its work. Its report:\nnotes.txt has 3 lines.' in notification
    assert "<notification" not in json.dumps(mains[1]["messages"][1:])
    [showing] = showings(updates, "notes")
    assert text_of(showing[-1]) == "✓ Read notes.txt\n\nnotes.txt has 3 lines."
