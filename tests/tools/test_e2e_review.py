"""Review before it happens: a change is shown in its permission question, as it will be written.

The real agent over stdio with a scripted model, with an editor serving `fs/*`
and with none (the `mode` fixture of the e2e tool tests).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from protocol import types
from tests.tools.test_e2e_tools import call, mode, scripted_session, workspace

__all__ = ("mode", "workspace")  # the fixtures, used by name

pytestmark = pytest.mark.e2e


def asked_diffs(request: types.RequestPermissionRequest) -> list[dict[str, Any]]:
    return [
        {"path": part.path, "oldText": part.old_text, "newText": part.new_text}
        for part in request.tool_call.content or []
        if isinstance(part, types.Diff)
    ]


def question_for(agent: Any, call_id: str) -> types.RequestPermissionRequest:
    [request] = [r for r in agent.client.permission_requests if r.tool_call.tool_call_id == call_id]
    return request


async def test_an_edit_and_a_write_are_asked_with_the_diff_they_then_write(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    (workspace / "a.py").write_text("x = 1\ny = 2\n")
    (workspace / "b.txt").write_text("old\r\ntext\r\n")
    replies = [
        [call("read_a", "read", path="a.py"), call("read_b", "read", path="b.txt")],
        [call("edit_a", "edit", path="a.py", old_text="y = 2", new_text="y = 20")],
        [call("write_b", "write", path="b.txt", content="new\ntext\n")],
    ]
    async with scripted_session(tmp_path, workspace, mode, replies) as agent:
        response = await agent.prompt()

    assert response.stop_reason == types.StopReason.END_TURN
    edit = question_for(agent, "edit_a")
    assert asked_diffs(edit) == [
        {"path": str(workspace / "a.py"), "oldText": "x = 1\ny = 2\n", "newText": "x = 1\ny = 20\n"}
    ]
    write = question_for(agent, "write_b")
    [diff] = asked_diffs(write)
    # Exactly what is written: byte for byte, line endings kept.
    assert (workspace / "a.py").read_bytes() == b"x = 1\ny = 20\n"
    assert diff["newText"].encode() == (workspace / "b.txt").read_bytes()
    assert diff["oldText"] == "old\r\ntext\r\n"
    # The question still says what asks, in words.
    texts = [p for p in edit.tool_call.content or [] if isinstance(p, types.Content)]
    assert texts


async def test_an_edit_that_cannot_apply_fails_without_a_question(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    replies = [
        [call("read", "read", path="a.py")],
        [call("miss", "edit", path="a.py", old_text="nothing like this", new_text="z")],
        [call("unread", "write", path="c.txt", content="fine\n")],
    ]
    (workspace / "c.txt").write_text("was here\n")
    async with scripted_session(tmp_path, workspace, mode, replies) as agent:
        await agent.prompt()

    asked = {r.tool_call.tool_call_id for r in agent.client.permission_requests}
    assert asked == set()  # nobody was asked to approve what cannot happen
    assert agent.final("miss")["status"] == "failed"
    assert agent.final("miss")["rawOutput"]["error"] == "no_match"
    assert agent.final("unread")["rawOutput"]["error"] == "file_not_read"
    assert (workspace / "a.py").read_text() == "x = 1\n"
    assert (workspace / "c.txt").read_text() == "was here\n"


async def test_a_file_changed_while_the_person_decides_is_not_overwritten(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    file = workspace / "a.py"
    file.write_text("x = 1\n")

    def change_then_allow(request: types.RequestPermissionRequest) -> str:
        file.write_text("x = 2  # changed meanwhile\n")
        return "allow_once"

    replies = [
        [call("read", "read", path="a.py")],
        [call("edit", "edit", path="a.py", old_text="x = 1", new_text="x = 10")],
    ]
    async with scripted_session(
        tmp_path, workspace, mode, replies, decide=change_then_allow
    ) as agent:
        await agent.prompt()

    assert asked_diffs(question_for(agent, "edit"))[0]["newText"] == "x = 10\n"
    ended = agent.final("edit")
    assert ended["status"] == "failed"
    assert "file_modified_since_read" in str(ended)
    assert file.read_text() == "x = 2  # changed meanwhile\n"


def asked_texts(request: types.RequestPermissionRequest) -> list[str]:
    return [
        part.content.text
        for part in request.tool_call.content or []
        if isinstance(part, types.Content) and isinstance(part.content, types.TextContent)
    ]


async def test_a_delete_and_a_move_are_asked_showing_what_they_remove_and_create(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    (workspace / "old.txt").write_text("gone soon\n")
    (workspace / "a.txt").write_text("moving\n")
    (workspace / "dir").mkdir()
    for name in ("one.txt", "two.txt"):
        (workspace / "dir" / name).write_text(name)
    replies = [
        [call("read", "read", path="old.txt")],
        [call("delete_file", "delete", path="old.txt")],
        [call("delete_dir", "delete", path="dir", recursive=True)],
        [call("move", "move", source="a.txt", destination="sub/b.txt")],
    ]
    async with scripted_session(tmp_path, workspace, mode, replies) as agent:
        await agent.prompt()

    # A text file's deletion is its text going to nothing, asked as it then shows.
    deleted = question_for(agent, "delete_file")
    removal = {"path": str(workspace / "old.txt"), "oldText": "gone soon\n", "newText": ""}
    assert asked_diffs(deleted) == [removal]
    assert agent.final("delete_file")["content"][0] == {"type": "diff", **removal}
    # A directory's lists what goes with it.
    [*_, listing] = asked_texts(question_for(agent, "delete_dir"))
    assert listing == ("Deletes the directory dir and the 2 file(s) in it.\n- one.txt\n- two.txt")
    # A move: the text leaves the old path and arrives at the new one.
    assert asked_diffs(question_for(agent, "move")) == [
        {"path": str(workspace / "a.txt"), "oldText": "moving\n", "newText": ""},
        {"path": str(workspace / "sub" / "b.txt"), "oldText": None, "newText": "moving\n"},
    ]
    assert not (workspace / "old.txt").exists()
    assert not (workspace / "dir").exists()
    assert (workspace / "sub" / "b.txt").read_text() == "moving\n"


async def test_a_delete_or_move_that_cannot_happen_fails_without_a_question(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    (workspace / "full").mkdir()
    (workspace / "full" / "f.txt").write_text("f")
    (workspace / "a.txt").write_text("a")
    (workspace / "b.txt").write_text("b")
    replies = [
        [call("not_recursive", "delete", path="full")],
        [call("missing", "delete", path="nope.txt")],
        [call("onto", "move", source="a.txt", destination="b.txt")],
    ]
    async with scripted_session(tmp_path, workspace, mode, replies) as agent:
        await agent.prompt()

    assert agent.client.permission_requests == []
    errors = {c: agent.final(c)["rawOutput"]["error"] for c in ("not_recursive", "missing", "onto")}
    assert errors == {
        "not_recursive": "directory_not_empty",
        "missing": "not_found",
        "onto": "destination_exists",
    }
    assert (workspace / "full" / "f.txt").exists()
    assert (workspace / "b.txt").read_text() == "b"


@pytest.mark.parametrize("command", ["ls -1", "sleep 1; echo tick; sleep 1; echo tock"])
async def test_a_terminal_is_shown_before_it_is_awaited_and_never_after_release(
    tmp_path: Path, workspace: Path, command: str
) -> None:
    (workspace / "a.txt").write_text("a\n")
    replies = [[call("run", "shell", command=command)]]
    async with scripted_session(tmp_path, workspace, "editor", replies) as agent:
        await agent.prompt()

    assert agent.editor is not None
    [terminal] = agent.editor.terminals
    terminal_id = terminal.terminal_id
    order: list[str] = []
    for message in agent.client.messages:
        method = message.get("method")
        if method == "session/update":
            content = message["params"]["update"].get("content")
            parts = content if isinstance(content, list) else []
            if any(part.get("terminalId") == terminal_id for part in parts):
                order.append("embed")
        elif (
            method in ("terminal/wait_for_exit", "terminal/release") or method == "$/cancel_request"
        ):
            order.append(method)
    assert order[0] == "embed"
    assert order.index("embed") < order.index("terminal/wait_for_exit")
    assert order[-1] == "terminal/release"  # no update embeds a released terminal
    assert "$/cancel_request" not in order
    assert agent.final("run")["status"] == "completed"
