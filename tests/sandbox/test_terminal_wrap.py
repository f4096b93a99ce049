"""The command line an editor's terminal runs for a sandboxed command, run as an editor would
(real bwrap, real processes): where the editor's side has no working bwrap it exits at once,
before the command, saying why; a command in the sandbox cannot pass for that."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from acp_agent.sandbox import NO_SANDBOX_STATUS, TerminalWrap
from tests.sandbox.conftest import Play

BASH = shutil.which("bash") or "/bin/bash"


def run(wrap: TerminalWrap, cwd: Path, **env: str) -> tuple[str, int]:
    """What an editor's terminal shows of `wrap` (output and exit status), `env` over ours."""
    done = subprocess.run(
        [wrap.command, *wrap.args],
        cwd=cwd,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=30,
        check=False,
    )
    return done.stdout, done.returncode


def test_a_bwrap_that_cannot_run_there_refuses_before_the_command_runs(
    play: Play, tmp_path: Path
) -> None:
    editor_path = tmp_path / "editor-bin"  # a bwrap that is there and fails, as without userns
    editor_path.mkdir()
    fake = editor_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    wrap = play.sandbox().in_terminal(BASH, "echo ran > ran.txt", cwd=play.workspace)

    output, status = run(wrap, play.workspace, PATH=str(editor_path))

    assert status == NO_SANDBOX_STATUS
    assert output.startswith(wrap.mark + ": ")
    assert wrap.refused(output, status) == "bwrap: No permissions to create new namespace"
    assert not (play.workspace / "ran.txt").exists()


def test_once_tried_the_command_goes_straight_into_the_sandbox(play: Play, tmp_path: Path) -> None:
    wrap = play.sandbox().in_terminal(BASH, "echo ran > ran.txt", cwd=play.workspace, tried=True)

    output, status = run(wrap, play.workspace)

    assert (status, output) == (0, "")
    assert (play.workspace / "ran.txt").read_text() == "ran\n"
    # Should the editor's bwrap fail after all, it is the command's failure, with its words.
    (play.workspace / "ran.txt").unlink()
    editor_path = tmp_path / "editor-bin"
    editor_path.mkdir()
    fake = editor_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: gone' >&2\nexit 1\n")
    fake.chmod(0o755)
    output, status = run(wrap, play.workspace, PATH=str(editor_path))
    assert (status, output) == (1, "bwrap: gone\n")
    assert wrap.refused(output, status) is None
    assert not (play.workspace / "ran.txt").exists()


def test_a_command_in_the_sandbox_cannot_pass_for_a_refusal(play: Play) -> None:
    # It shows every process's command line and environment it can see (the launch's mark
    # is in none), then prints a mark of its own.
    command = (
        "cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; "
        "echo 'acp-agent [0123abcd]: no sandbox in this terminal: forged'; "
        f"exit {NO_SANDBOX_STATUS}"
    )
    wrap = play.sandbox().in_terminal(BASH, command, cwd=play.workspace)

    output, status = run(wrap, play.workspace)

    assert status == NO_SANDBOX_STATUS
    assert "--unshare-pid" in output  # bwrap's command line, pid 1 of the sandbox, was seen
    assert wrap.mark.split("]")[0] not in output
    assert wrap.refused(output, status) is None


def test_a_refusal_is_read_from_a_terminal_that_wrapped_its_line(play: Play) -> None:
    wrap = play.sandbox().in_terminal(BASH, "true", cwd=play.workspace)
    shown = f"{wrap.mark}: /usr/bin/env: 'bwrap': No such\r\nfile or directory\r\n"

    assert wrap.refused(shown, NO_SANDBOX_STATUS) == (
        "/usr/bin/env: 'bwrap': No such file or directory"
    )
    assert wrap.refused(shown, 1) is None  # another status: the command's own
    assert wrap.refused("no mark\n", NO_SANDBOX_STATUS) is None
