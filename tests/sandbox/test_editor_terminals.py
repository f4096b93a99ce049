"""Sandboxed commands in the editor's terminals, end to end: the real agent over stdio in its
default mode, a scripted model, an editor whose terminals run real processes, real bubblewrap.

One agent process, two sessions. In the first, the editor's side has bwrap: a command runs
through `terminal/create`, the command line the editor runs being the sandbox around it; it
writes in the workspace and not outside, its change is checkpointed and a rewind takes it
back; a cancel ends the sandbox with every process in it, one that left its group too. In the
second, the editor's terminals have no bwrap on their PATH: the first command runs locally in
the sandbox instead and its result says so, once; the next runs locally from the start.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol import types
from tests.sandbox.test_sandboxed_mode import REWIND, result_texts, sandboxed_of, shell
from tests.support import EditorClient, default_mode_env, running_agent, write_script
from tests.tools.editor import EditorBridge

pytestmark = pytest.mark.e2e

#: The sleeps the cancelled command starts (one in a session of its own), found by their
#: arguments: inside the sandbox their pids are the sandbox's own.
SLEEPS = ("987001", "987002")
REFUSED = "The editor's terminal could not start the sandbox ("


def sleepers() -> list[int]:
    """The live processes running `sleep` on one of `SLEEPS`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:1] == [b"sleep"] and argv[1:2] and argv[1].decode() in SLEEPS:
            found.append(int(entry.name))
    return found


def raw_output_of(updates: list[types.SessionUpdate], call_id: str) -> dict[str, Any]:
    """The `rawOutput` of `call_id`'s finished update."""
    for u in updates:
        if (
            isinstance(u, types.ToolCallProgress)
            and u.tool_call_id == call_id
            and u.status in (types.ToolCallStatus.COMPLETED, types.ToolCallStatus.FAILED)
        ):
            assert isinstance(u.raw_output, dict)
            return u.raw_output
    raise AssertionError(f"no result for {call_id}")


async def test_sandboxed_commands_run_wrapped_in_the_editors_terminal_or_locally_without_bwrap(
    tmp_path: Path, outside: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    other = tmp_path / "other"
    other.mkdir()
    no_bwrap = tmp_path / "editor-path"  # the editor's PATH in the second session: empty
    no_bwrap.mkdir()
    write = (
        'X="it\'s"; echo "$X" | tr a-z A-Z > a.txt && mkdir -p sub && echo bee > sub/b.txt; '
        f"echo out > {outside}/x"
    )
    # Each session plays the replies from the first: the second plays c1, c2 and the text.
    script = write_script(
        tmp_path / "terminals.json",
        [shell("c1", write)],
        [shell("c2", "echo two > two.txt")],
        [{"text": "Written."}],
        [shell("c3", f"setsid sleep {SLEEPS[0]} & sleep {SLEEPS[1]} & wait")],
    )
    async with EditorBridge() as editor:
        client = EditorClient(editor=editor, unstable=True)
        async with running_agent(
            tmp_path / "home", script=script, env=default_mode_env(), client=client, unstable=True
        ) as client:
            first_session = await client.new_session(workspace)
            first = await client.prompt(first_session, "Write")
            after_write = {
                p.relative_to(workspace).as_posix(): p.read_text()
                for p in sorted(workspace.rglob("*"))
                if p.is_file()
            }
            # A cancel while a sandboxed command runs in the editor's terminal.
            turn = asyncio.create_task(client.prompt(first_session, "Sleep"))
            with anyio.fail_after(20):
                while len(sleepers()) < len(SLEEPS):  # noqa: ASYNC110 - processes, not our state
                    await anyio.sleep(0.05)
            client.cancel(first_session)
            cancelled = await asyncio.wait_for(turn, timeout=20)
            with anyio.fail_after(10):
                while sleepers():  # noqa: ASYNC110 - processes, not our state
                    await anyio.sleep(0.05)
            assert first.meta is not None
            rewound = await client.request_raw(
                REWIND,
                {"sessionId": first_session, "messageId": first.meta["acp-agent"]["messageId"]},
            )
            first_updates = client.updates_for(first_session)
            launched_in_first = list(editor.launched)

            # The editor's terminals lose bwrap; a new session learns it from its first command.
            editor.terminal_env["PATH"] = str(no_bwrap)
            second_session = await client.new_session(other)
            await client.prompt(second_session, "Write")
            second_updates = client.updates_for(second_session)

    # The first session: every command went to the editor, wrapped in the sandbox.
    assert len(launched_in_first) == 3
    for launched in launched_in_first:
        assert launched[0] == "/bin/sh"
        assert {"bwrap", "--unshare-net", "--new-session", "--die-with-parent"} <= set(launched)
    assert write in launched_in_first[0]  # the command itself, one argument, as written
    scripts = [launched[2] for launched in launched_in_first]
    assert '"$shell" -c :' in scripts[0]  # the session's first tried the sandbox first
    assert all('"$shell" -c :' not in script for script in scripts[1:])  # later: straight in
    assert raw_output_of(first_updates, "c1")["via"] == "client"
    assert sandboxed_of(first_updates) == {"c1": True, "c2": True}  # c3 was interrupted
    assert client.permission_requests == []  # nothing asked in the sandboxed mode
    # It wrote in the workspace, not outside; the result names its files and the denial.
    assert after_write == {"a.txt": "IT'S\n", "sub/b.txt": "bee\n", "two.txt": "two\n"}
    c1 = result_texts(first_updates, "c1")
    assert f"Files it changed (a rewind takes them back): {workspace}/a.txt" in c1
    assert f"{workspace}/sub/b.txt (new)" in c1
    assert f"The sandbox kept it in: {outside}/x is read-only in the sandbox." in c1
    # The cancel ended the sandbox, its processes with it, and released the terminal.
    assert cancelled.stop_reason == types.StopReason.CANCELLED
    assert all(terminal.released for terminal in editor.terminals[:3])
    # The rewind took the commands' changes back.
    assert rewound["result"]["restored"] == [str(workspace / "a.txt")]
    assert sorted(rewound["result"]["removed"]) == [
        str(workspace / "sub" / "b.txt"),
        str(workspace / "two.txt"),
    ]
    assert [p.name for p in workspace.iterdir()] == ["a.txt"]
    assert (workspace / "a.txt").read_text() == "alpha\n"

    # The second session: its first command was tried in the editor's terminal, ran
    # locally in the sandbox, and said so, once; the next ran locally from the start.
    assert len(editor.launched) == 4
    assert (other / "a.txt").read_text() == "IT'S\n"
    assert (other / "two.txt").read_text() == "two\n"
    raw1, raw2 = raw_output_of(second_updates, "c1"), raw_output_of(second_updates, "c2")
    assert (raw1["via"], raw2["via"]) == ("local", "local")
    assert "bwrap" in raw1["terminal_refused"]
    assert "terminal_refused" not in raw2
    assert result_texts(second_updates, "c1").count(REFUSED) == 1
    assert REFUSED not in result_texts(second_updates, "c2")
    assert f"{other}/a.txt (new)" in result_texts(second_updates, "c1")
    assert sandboxed_of(second_updates) == {"c1": True, "c2": True}
    assert os.listdir(outside) == []
