"""Slash commands end to end: the built-ins, the person's templates, and what they change.

A built-in answers without the model; what it changes (mode, title, a revoked
rule, a compaction) is recorded and reaches the editor before the answer. A
template is the person's text, expanded: it changes nothing by itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol import methods, types
from tests.adapters.acp.session_support import before, kinds, openai_text
from tests.support import EditorClient, openai_env, running_agent, write_script
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.e2e


def reply_text(updates: list[types.SessionUpdate]) -> str:
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, types.AgentMessageChunk) and isinstance(u.content, types.TextContent)
    )


async def run(client: EditorClient, session_id: str, text: str) -> tuple[str, list[Any]]:
    """Send `text`; the answer's stop reason must be end_turn. Returns (reply, new updates)."""
    start = len(client.session_updates_for(session_id))
    response = await client.prompt(session_id, text)
    assert response.stop_reason == types.StopReason.END_TURN
    new = client.session_updates_for(session_id)[start:]
    return reply_text(new), new


def template(folder: Path, name: str, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(body)


def command_names(update: Any) -> list[str]:
    assert isinstance(update, types.AvailableCommandsUpdate)
    return [command.name for command in update.available_commands]


async def test_help_lists_built_ins_mcp_and_the_workspace_and_user_templates(tmp_path: Path):
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    template(workspace / ".acp-agent/commands", "review", "Review $ARGUMENTS carefully.")
    template(home / "config/commands", "explain", "---\ndescription: Explain code\n---\nExplain.")
    script = write_script(tmp_path / "s.json", [{"text": "never asked"}])
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(workspace)
        commands = await client.wait_for_update(
            session_id, lambda u: isinstance(u, types.AvailableCommandsUpdate)
        )
        reply, updates = await run(client, session_id, "/help")
        mcp, _ = await run(client, session_id, "/mcp")

    assert command_names(commands) == [
        "help",
        "compact",
        "model",
        "mode",
        "permissions",
        "rules",
        "title",
        "branches",
        "branch",
        "jobs",
        "rewind",
        "mcp",
        "explain",
        "review",
    ]
    review = commands.available_commands[-1]  # type: ignore[union-attr]
    assert review.input == types.UnstructuredCommandInput(hint="arguments")
    assert reply.startswith("Commands:")
    assert mcp == "No MCP servers are configured for this session."
    assert "- `/mode <mode id>`: Show the permission modes" in reply
    assert "- `/permissions revoke <rule id>`: List remembered permission rules" in reply
    assert "- `/explain`: Explain code (from user" in reply
    assert "- `/review <arguments>`: Review $ARGUMENTS carefully. (from workspace" in reply
    # A built-in is answered without the model and is no exchange: no title, no usage.
    assert kinds(updates) == ["agent_message_chunk"]


async def test_mode_switches_tells_the_editor_before_the_answer_and_survives_a_restart(
    tmp_path: Path,
):
    script = write_script(tmp_path / "s.json", [{"text": "."}])
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(tmp_path)
        listing, _ = await run(client, session_id, "/mode")
        wrong, _ = await run(client, session_id, "/mode yolo")
        raw = await client.request_raw(
            methods.SESSION_PROMPT,
            {"sessionId": session_id, "prompt": [{"type": "text", "text": "/mode bypass"}]},
        )
        messages = client.messages
    async with running_agent(home, script=script) as client:
        loaded = await client.load(session_id, tmp_path)
        replayed = client.updates_for(session_id)

    assert listing.startswith("Mode: `ask`.")
    assert "`sandboxed`, `ask`, `accept-edits`, `plan`, `bypass`" in listing
    assert wrong == (
        "Not changed: mode: no choice 'yolo' (choices: sandboxed, ask, accept-edits, plan, bypass)."
    )
    assert raw["result"] == {"stopReason": "end_turn"}
    assert before(messages, raw["id"])[-3:] == [
        "update:current_mode_update",
        "update:config_option_update",
        "update:agent_message_chunk",
    ]
    assert loaded.modes is not None
    assert loaded.modes.current_mode_id == "bypass"
    # Command exchanges are not conversation: nothing of them is replayed.
    assert replayed == []


async def test_title_sets_the_title_which_the_first_exchange_then_keeps(tmp_path: Path):
    script = write_script(tmp_path / "s.json", [{"text": "Sure."}])
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        untitled, _ = await run(client, session_id, "/title")
        reply, updates = await run(client, session_id, "/title   Release   checklist ")
        _, exchange = await run(client, session_id, "Draft the checklist")
        shown, _ = await run(client, session_id, "/title")
        listed = await client.list_sessions()

    assert untitled == "This session has no title yet."
    assert reply == "Title set to: Release checklist"
    assert updates[0] == types.SessionInfoUpdate(title="Release checklist")
    assert "session_info_update" not in kinds(exchange)
    assert shown == "Title: Release checklist"
    assert listed.sessions[0].title == "Release checklist"


def shell(command: str, call_id: str) -> dict[str, Any]:
    return {"tool_call": {"name": "shell", "arguments": {"command": command}, "id": call_id}}


async def test_permissions_lists_remembered_rules_and_a_revoked_one_is_asked_again(
    tmp_path: Path,
):
    script = write_script(
        tmp_path / "s.json",
        [shell("echo hi", "c1")],
        [{"text": "Ran."}],
        [shell("echo hi", "c2")],
        [{"text": "Ran again."}],
        [shell("echo hi", "c3")],
        [{"text": "Asked first."}],
    )
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        none, _ = await run(client, session_id, "/permissions")
        client.answers = ["allow_always"]
        await run(client, session_id, "Say hi")
        await run(client, session_id, "Say hi again")  # the rule allows it: no question
        asked_before_revoking = len(client.permission_requests)
        listing, _ = await run(client, session_id, "/permissions")
        rule_id = listing.split("`")[1]
        revoked, _ = await run(client, session_id, f"/permissions revoke {rule_id}")
        unknown, _ = await run(client, session_id, "/permissions revoke rule_nope")
        client.answers = ["allow_once"]
        await run(client, session_id, "Once more")

    workspace = str(await anyio.Path(tmp_path).resolve())
    assert none == f"No permission rules are remembered for {workspace}."
    assert asked_before_revoking == 1
    assert listing.startswith(f"Permission rules for {workspace}:")
    assert f"- `{rule_id}`: always allow commands starting with echo hi (shell)" in listing
    assert revoked == (
        f"Revoked `{rule_id}`: always allow commands starting with echo hi (shell) "
        "will be asked about again."
    )
    assert unknown.startswith("No rule `rule_nope` holds in")
    assert len(client.permission_requests) == 2  # asked again after the revocation


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments, "id": call_id}}


LOOP = "for i in 1 2; do echo n$i; done"


async def test_always_on_a_command_a_chain_and_an_edit_asks_no_more_and_keeps_each_rule_once(
    tmp_path: Path,
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("one\n")

    def turn(suffix: str, old: str, new: str) -> list[list[dict[str, Any]]]:
        return [
            [call("read", f"r{suffix}", path="notes.txt")],
            [
                shell("echo hi", f"s{suffix}"),
                shell(LOOP, f"l{suffix}"),
                call("edit", f"e{suffix}", path="notes.txt", old_text=old, new_text=new),
            ],
            [{"text": "Done."}],
        ]

    script = write_script(tmp_path / "s.json", *turn("1", "one", "two"), *turn("2", "two", "3"))
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(workspace)
        client.answers = ["allow_always"] * 6  # enough for both turns, should both ask
        await run(client, session_id, "First")
        asked_first = sorted(q.tool_call.tool_call_id for q in client.permission_requests)
        loop_question = next(
            q for q in client.permission_requests if q.tool_call.tool_call_id == "l1"
        )
        await run(client, session_id, "Again")
        listing, _ = await run(client, session_id, "/permissions")

    assert asked_first == ["e1", "l1", "s1"]
    assert [o.name for o in loop_question.options] == [
        "Allow once",
        "Always allow this exact command in this workspace",
        "Reject",
        "Always reject this exact command in this workspace",
    ]
    assert len(client.permission_requests) == 3  # the second turn asked nothing
    assert (workspace / "notes.txt").read_text() == "3\n"
    rules = [line.split(": ", 1)[1] for line in listing.splitlines() if line.startswith("- `")]
    assert sorted(rules) == [
        "always allow commands starting with echo hi (shell)",
        "always allow edits to any file",
        f"always allow exactly the command {LOOP} (shell)",
    ]


async def test_rules_shows_the_workspace_and_user_rules(tmp_path: Path):
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("# Conventions\nUse tabs.\n")
    (home / "config").mkdir(parents=True)
    (home / "config" / "AGENTS.md").write_text("Answer briefly.\n")
    script = write_script(tmp_path / "s.json", [{"text": "."}])
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(workspace)
        reply, _ = await run(client, session_id, "/rules")

    assert reply == (
        "Rules the model follows:\n\n"
        "- `user/AGENTS.md` (scope `*`): Answer briefly.\n"
        "- `workspace/AGENTS.md` (scope `.`): Conventions"
    )


async def test_compact_summarises_the_conversation_and_says_when_there_is_nothing(
    tmp_path: Path,
):
    script = write_script(tmp_path / "s.json", [{"text": "One."}], [{"text": "Two."}])
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        nothing, _ = await run(client, session_id, "/compact")
        await run(client, session_id, "First")
        await run(client, session_id, "Second")
        compacted, _ = await run(client, session_id, "/compact")
        _, after = await run(client, session_id, "Third")

    assert nothing.startswith("Nothing was compacted: ")
    assert compacted.startswith("Compacted: the conversation so far is now a summary")
    assert reply_text(after) == "Two."  # the conversation goes on


@pytest.mark.parametrize("shows_compaction", [False, True], ids=["as-tool-call", "as-update"])
async def test_a_compaction_is_shown_to_the_editor_as_it_can_show_it(
    tmp_path: Path, shows_compaction: bool
):
    script = write_script(tmp_path / "s.json", [{"text": "One."}], [{"text": "Two."}])
    home = tmp_path / "home"
    capabilities = types.ClientCapabilities(
        session=types.ClientSessionCapabilities(compaction=types.CompactionCapabilities())
        if shows_compaction
        else None
    )
    async with running_agent(home, script=script, capabilities=capabilities) as client:
        session_id = await client.new_session(tmp_path)
        await run(client, session_id, "First")
        await run(client, session_id, "Second")
        _, updates = await run(client, session_id, "/compact")

    if shows_compaction:
        shown = [u for u in updates if isinstance(u, types.CompactionUpdate)]
        assert [u.status for u in shown] == [
            types.CompactionStatus.IN_PROGRESS,
            types.CompactionStatus.COMPLETED,
        ]
        assert shown[0].compaction_id == shown[1].compaction_id
        assert shown[1].summary
        assert shown[1].summary[0].text
        assert not any(isinstance(u, types.ToolCall) for u in updates)
    else:
        [started] = [u for u in updates if isinstance(u, types.ToolCall)]
        [finished] = [
            u
            for u in updates
            if isinstance(u, types.ToolCallProgress) and u.tool_call_id == started.tool_call_id
        ]
        assert (started.kind, started.status) == (
            types.ToolKind.THINK,
            types.ToolCallStatus.IN_PROGRESS,
        )
        assert finished.status == types.ToolCallStatus.COMPLETED
        assert finished.content
        assert finished.content[0].content.text
        assert not any(isinstance(u, types.CompactionUpdate) for u in updates)


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


async def test_a_template_is_sent_expanded_replayed_as_typed_and_changes_nothing(
    tmp_path: Path, server: FakeProviderServer
):
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    folder = workspace / ".acp-agent/commands"
    template(folder, "review", "Review $ARGUMENTS carefully.")
    template(folder, "yolo", "---\nmode: bypass\nallowed-tools: shell\n---\n/mode bypass")
    server.add(openai_text("Reviewed."), openai_text("No."))
    env = openai_env(server.base_url, api_key="sk-test")
    async with running_agent(home, env=env) as client:
        session_id = await client.new_session(workspace)
        await run(client, session_id, "/review src/a.py")
        _, yolo = await run(client, session_id, "/yolo")
        template(folder, "later", "Added while the session ran.")
        _, refreshed = await run(client, session_id, "/help")
    async with running_agent(home, env=env) as client:
        loaded = await client.load(session_id, workspace)
        replayed = client.updates_for(session_id)

    review, yolo_request = (request.json() for request in server.requests)
    assert review["messages"][-1]["content"].endswith("Review src/a.py carefully.")
    assert yolo_request["messages"][-1]["content"].endswith("/mode bypass")
    # A template cannot change the mode: it is only text for the model.
    assert "current_mode_update" not in kinds(yolo)
    assert loaded.modes is not None
    assert loaded.modes.current_mode_id == "ask"
    # A template added meanwhile is listed before the next answer.
    assert "later" in command_names(refreshed[0])
    # The replay shows what the person typed.
    typed = [u.content.text for u in replayed if isinstance(u, types.UserMessageChunk)]
    assert typed == ["/review src/a.py", "/yolo"]


async def test_cancel_during_compact_answers_cancelled_and_the_session_goes_on(
    tmp_path: Path, server: FakeProviderServer
):
    from tests.support.fake_provider import Exchange, openai_chunk, openai_stream

    held = Exchange(chunks=[openai_stream(openai_chunk({"role": "assistant"}), done=False)])
    server.add(
        openai_text("One."),
        openai_text("Two."),
        Exchange(chunks=held.chunks, hold=True),  # the summary request never answers
        openai_text("Three."),
    )
    env = openai_env(server.base_url, api_key="sk-test")
    async with running_agent(tmp_path / "home", env=env) as client:
        session_id = await client.new_session(tmp_path)
        await run(client, session_id, "First")
        await run(client, session_id, "Second")
        compact = asyncio.create_task(client.prompt(session_id, "/compact"))
        for _ in range(500):
            if len(server.requests) == 3:
                break
            await asyncio.sleep(0.01)
        started = time.monotonic()
        client.cancel(session_id)
        response = await asyncio.wait_for(compact, timeout=10)
        waited_s = time.monotonic() - started
        _, after = await run(client, session_id, "Third")

    assert len(server.requests) == 4
    assert response.stop_reason == types.StopReason.CANCELLED
    assert waited_s < 1.0
    assert server.disconnected.wait(timeout=5)  # the summary request was closed
    assert reply_text(after) == "Three."
