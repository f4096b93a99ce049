"""The sandboxed mode end to end: the real agent over stdio in its default mode, a scripted
model, real bubblewrap, real files, a real SQLite store.

One session plays a small coding session: commands run in the sandbox with no question and
write only inside the roots; a write outside is kept in and said plainly; leaving the
sandbox is asked, saying why, and an "always" answer keeps a command rule that lets the next
such command out unasked until `/permissions revoke`; a rewind takes back what the sandboxed
commands changed; background jobs and a branch's commands are sandboxed too. A second agent,
with no bwrap on its PATH, asks before every command and says why, once.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol import types
from tests.support import EditorClient, default_mode_env, running_agent, write_script

pytestmark = pytest.mark.e2e

REWIND = "_acp-agent/rewind"


def shell(call_id: str, command: str, **more: Any) -> dict[str, Any]:
    return {
        "tool_call": {"name": "shell", "arguments": {"command": command, **more}, "id": call_id}
    }


def sandboxed_of(updates: list[types.SessionUpdate]) -> dict[str, bool]:
    """Call id -> `_meta["acp-agent"].sandboxed` of its finished update."""
    return {
        str(u.tool_call_id): u.meta["acp-agent"]["sandboxed"]
        for u in updates
        if isinstance(u, types.ToolCallProgress)
        and u.meta is not None
        and "acp-agent" in u.meta
        and u.status in (types.ToolCallStatus.COMPLETED, types.ToolCallStatus.FAILED)
    }


def result_texts(updates: list[types.SessionUpdate], call_id: str) -> str:
    """The text content of `call_id`'s finished update."""
    for u in updates:
        if (
            isinstance(u, types.ToolCallProgress)
            and u.tool_call_id == call_id
            and u.status in (types.ToolCallStatus.COMPLETED, types.ToolCallStatus.FAILED)
        ):
            return "\n".join(
                part.content.text
                for part in u.content or ()
                if isinstance(part, types.Content) and isinstance(part.content, types.TextContent)
            )
    raise AssertionError(f"no result for {call_id}")


def question_text(request: types.RequestPermissionRequest) -> str:
    [part] = request.tool_call.content or []
    assert isinstance(part, types.Content)
    assert isinstance(part.content, types.TextContent)
    return part.content.text


def names_in(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def agent_text(updates: list[types.SessionUpdate]) -> str:
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, types.AgentMessageChunk) and isinstance(u.content, types.TextContent)
    )


async def test_a_coding_session_runs_confined_unasked_and_asks_only_to_leave(
    tmp_path: Path, outside: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "gone.txt").write_text("delete me\n")
    script = write_script(
        tmp_path / "session.json",
        # Turn 1: work inside; a write outside is kept in; leaving is asked (always), and
        # then a command the rule covers leaves unasked.
        [
            {"text": "Working."},
            shell(
                "s1", "echo changed > a.txt && mkdir -p sub && echo bee > sub/b.txt && rm gone.txt"
            ),
            shell("s2", f"cp a.txt {outside}/copied.txt"),
        ],
        [shell("s3", f"cp a.txt {outside}/copied.txt", outside_sandbox=True)],
        [shell("s4", f"cp sub/b.txt {outside}/b.txt", outside_sandbox=True)],
        [{"text": "Turn one done."}],
        # After the rule is revoked, leaving is asked again.
        [shell("s5", f"cp a.txt {outside}/again.txt", outside_sandbox=True)],
        [{"text": "Turn two done."}],
        # After the rewind: a background job and a branch, both confined.
        [
            shell("j1", f"echo job > job.txt; touch {outside}/job-escape", background=True),
            {"tool_call": {"name": "branch", "arguments": {"task": "Mark", "title": "mark"}}},
        ],
        [{"tool_call": {"name": "branch_wait", "arguments": {"all": True, "timeout_s": 30}}}],
        [{"text": "Turn three done."}],
        branches=[
            {
                "title": "mark",
                "replies": [
                    [shell("b1", f"echo branch > branch.txt; touch {outside}/branch-escape")],
                    [{"text": "Marked."}],
                ],
            }
        ],
    )
    client = EditorClient(unstable=True)
    async with running_agent(
        tmp_path / "home", script=script, env=default_mode_env(), client=client, unstable=True
    ) as client:
        session_id = await client.new_session(workspace)
        client.answers = ["allow_always"]
        first = await client.prompt(session_id, "Change a")
        after_first = {p.name: p.read_text() for p in sorted(workspace.rglob("*")) if p.is_file()}
        await client.prompt(session_id, "/permissions")
        [rule_id] = re.findall(r"`(rule_[0-9a-f]+)`", agent_text(client.updates_for(session_id)))
        await client.prompt(session_id, f"/permissions revoke {rule_id}")
        client.answers = ["reject_once"]
        await client.prompt(session_id, "Copy again")
        assert first.meta is not None
        rewound = await client.request_raw(
            REWIND,
            {"sessionId": session_id, "messageId": first.meta["acp-agent"]["messageId"]},
        )
        asked_before_jobs = len(client.permission_requests)
        await client.prompt(session_id, "A job and a branch")
        with anyio.fail_after(20):
            while not (workspace / "job.txt").exists():  # noqa: ASYNC110 - a file, not our state
                await anyio.sleep(0.05)
        updates = client.updates_for(session_id)

    # Inside the roots: no question, the work done, the files named in the result.
    assert after_first == {"a.txt": "changed\n", "b.txt": "bee\n"}
    s1 = result_texts(updates, "s1")
    assert "Files it changed (a rewind takes them back):" in s1
    assert f"{workspace}/a.txt" in s1
    assert f"{workspace}/sub/b.txt (new)" in s1
    assert f"{workspace}/gone.txt (removed)" in s1
    # The write outside: kept in, said plainly; nothing written there by a confined command.
    assert (
        f"The sandbox kept it in: {outside}/copied.txt is read-only in the sandbox. The agent "
        "may ask you to run it outside the sandbox."
    ) in result_texts(updates, "s2")
    # Leaving: asked once, saying why; the "always" answer let s4 out unasked; after the
    # revoke, s5 was asked again (and refused).
    asked = [r.tool_call.tool_call_id for r in client.permission_requests[:asked_before_jobs]]
    assert asked == ["s3", "s5"]
    why = question_text(client.permission_requests[0])
    assert (
        "Run outside the sandbox, with all your rights. When it ran in the sandbox, the "
        f"sandbox kept it in: {outside}/copied.txt is read-only in the sandbox."
    ) in why
    labels = [option.name for option in client.permission_requests[0].options]
    assert "Always allow commands starting with cp outside the sandbox in this workspace" in labels
    assert client.permission_requests[0].tool_call.title.endswith("outside the sandbox")
    assert names_in(outside) == ["b.txt", "copied.txt"]
    # The call's _meta says where it ran.
    flags = sandboxed_of(updates)
    assert {call: flags[call] for call in ("s1", "s2", "s3", "s4", "j1")} == {
        "s1": True,
        "s2": True,
        "s3": False,
        "s4": False,
        "j1": True,
    }
    # The rewind took back what the sandboxed command changed; the copies outside stay.
    result = rewound["result"]
    assert result["rewound"] is True
    assert result["restored"] == [str(workspace / "a.txt"), str(workspace / "gone.txt")]
    assert result["removed"] == [str(workspace / "sub" / "b.txt")]
    [s1_effect] = [line for line in result["notUndone"] if line.startswith("Run `echo changed")]
    assert s1_effect.endswith(
        "(sandboxed: the files it changed are restored; .git and ignored files stay)"
    )
    assert f"Run `cp a.txt {outside}/copied.txt` outside the sandbox" in result["notUndone"]
    assert (workspace / "a.txt").read_text() == "alpha\n"
    assert (workspace / "gone.txt").read_text() == "delete me\n"
    assert not (workspace / "sub").exists()
    # A background job and a branch's command: confined too, and unasked.
    assert len(client.permission_requests) == asked_before_jobs
    assert (workspace / "job.txt").read_text() == "job\n"
    assert (workspace / "branch.txt").read_text() == "branch\n"
    assert not (outside / "job-escape").exists()
    assert not (outside / "branch-escape").exists()


async def test_without_bwrap_every_command_is_asked_and_the_first_question_says_why(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    path = tmp_path / "bin"  # bash, and no bwrap
    path.mkdir()
    bash = shutil.which("bash")
    assert bash is not None
    (path / "bash").symlink_to(bash)
    script = write_script(
        tmp_path / "two.json",
        [shell("c1", "echo one > one.txt")],
        [shell("c2", "echo two > two.txt")],
        [{"text": "Both ran."}],
    )
    client = EditorClient()
    notices = types.ClientCapabilities(
        session=types.ClientSessionCapabilities(notices=types.NoticeCapabilities())
    )
    async with running_agent(
        tmp_path / "home",
        script=script,
        env=default_mode_env(PATH=str(path)),
        client=client,
        capabilities=notices,
    ) as client:
        session_id = await client.new_session(workspace)
        client.answers = ["allow_once", "allow_once"]
        await client.prompt(session_id)
        updates = client.updates_for(session_id)

    first, second = (question_text(request) for request in client.permission_requests)
    assert first.startswith("`shell` asks for:")
    assert (
        "Commands cannot run in the sandbox here: not installed: no bwrap on PATH. So every "
        "command is asked about, and runs with all your rights. `acp-agent doctor` says how "
        "to enable it (install bubblewrap: apt install bubblewrap"
    ) in first
    assert "Asked because commands cannot run in the sandbox here." in second
    assert "doctor" not in second  # said once per session
    # A client that takes notices is told once, as a warning, before the first question.
    [notice] = [u for u in updates if isinstance(u, types.Notice)]
    assert (notice.severity, notice.title) == (
        types.NoticeSeverity.WARNING,
        "Commands cannot run in the sandbox here",
    )
    assert (notice.description or "").startswith("not installed: no bwrap on PATH. So every")
    assert (workspace / "one.txt").read_text() == "one\n"
    assert (workspace / "two.txt").read_text() == "two\n"
    assert sandboxed_of(updates) == {"c1": False, "c2": False}  # nothing pretends
