"""The shell tool given a sandbox in its context (as the sandboxed mode gives it): its commands
run in the sandbox, in the editor's terminal when it offers one (the command line the editor
runs is the sandbox around the command) and locally otherwise, or when the editor's side cannot
start the sandbox; without the agent's keys either way; what the sandbox kept in is said
plainly. Without one, as before."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from acp_agent.toolkit import NO_CLIENT, ClientBridge
from acp_agent.tools import ShellTool
from tests.sandbox.conftest import Play
from tests.tools.editor import EditorBridge
from tests.tools.support import Session

pytestmark = pytest.mark.anyio

SHELL = ShellTool()
BASH = shutil.which("bash")

#: Quotes of both kinds, a pipe, word splitting, `$VARS`, arithmetic, a command
#: substitution, an escaped dollar, a tab and a here-document.
TRICKY = (
    "X='a  b'; printf '[%s]\\n' $X \"$X\" \"it's\" | tr a-z A-Z; "
    'echo "$((2 + 3))" `echo back` \\$HOME "${UNSET_IN_TEST:-fallback}"; '
    "echo 'single $X' \"tab\tend\"; cat <<'EOF'\nhere $X\nEOF"
)


async def test_a_sandboxed_shell_runs_in_the_editors_terminal_wrapped_and_confined(
    play: Play,
) -> None:
    command = f"echo in > inside.txt && echo out > {play.outside}/x"
    async with EditorBridge() as editor:
        confined = await Session([play.workspace], editor, sandbox=play.sandbox()).run(
            SHELL, {"command": command}
        )
        free = await Session([play.workspace], editor).run(SHELL, {"command": "echo hi"})

    assert (confined.raw_output["via"], free.raw_output["via"]) == ("client", "client")
    assert (confined.raw_output["sandboxed"], free.raw_output["sandboxed"]) == (True, False)
    # The editor ran the sandbox around the command, the command itself one argument of it;
    # let out (no sandbox), the command as before.
    wrapped, plain = editor.launched
    assert wrapped[0] == "/bin/sh"
    assert {"bwrap", "--unshare-net", "--die-with-parent", "--new-session"} <= set(wrapped)
    assert wrapped[wrapped.index("--") + 1 :] == []  # the command follows the check's
    assert command in wrapped
    assert "ANTHROPIC_API_KEY" in wrapped  # taken out on the editor's side
    assert plain == [BASH, "-c", "echo hi"]
    assert confined.raw_output["exit_code"] == 1
    assert (play.workspace / "inside.txt").read_text() == "in\n"
    assert not (play.outside / "x").exists()
    kept_in = f"{play.outside}/x is read-only in the sandbox"
    assert confined.raw_output["kept_in"] == kept_in
    assert f"The sandbox kept it in: {kept_in}." in confined.model_text
    assert "`outside_sandbox: true`" in confined.model_text  # the model learns how to leave
    shown = "\n".join(part.text for part in confined.content if hasattr(part, "text"))
    assert f"The sandbox kept it in: {kept_in}. The agent may ask you" in shown


@pytest.mark.parametrize("through_shell", [False, True], ids=["argv", "shell-line"])
async def test_quotes_pipes_and_variables_reach_the_sandboxed_shell_intact(
    play: Play, through_shell: bool
) -> None:
    async with EditorBridge(through_shell=through_shell) as editor:
        in_terminal = await Session([play.workspace], editor, sandbox=play.sandbox()).run(
            SHELL, {"command": TRICKY}
        )
    local = await Session([play.workspace], sandbox=play.sandbox()).run(SHELL, {"command": TRICKY})

    assert in_terminal.raw_output["via"] == "client"
    assert local.raw_output["via"] == "local"
    expected = "[A]\n[B]\n[A  B]\n[IT'S]\n5 back $HOME fallback\nsingle $X tab\tend\nhere $X\n"
    assert f"Exit code 0.\n```\n{expected}```" in local.model_text
    assert in_terminal.model_text == local.model_text


@pytest.mark.parametrize("where", ["local", "editor"])
async def test_a_sandboxed_command_gets_no_provider_key_and_an_unconfined_one_does(
    play: Play, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    secret = "sk-ant-secret-value-1234"
    # The agent's environment, and the editor's (its terminals inherit this process's).
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    monkeypatch.setenv("MY_OWN_SETTING", "kept")
    # Every process of the sandbox, bwrap's own (pid 1 inside) included.
    command = "env; cat /proc/1/environ | tr '\\0' '\\n'"

    async with EditorBridge() as editor:
        client: ClientBridge = editor if where == "editor" else NO_CLIENT
        confined = await Session([play.workspace], client, sandbox=play.sandbox()).run(
            SHELL, {"command": command}
        )
        free = await Session([play.workspace], client).run(SHELL, {"command": command})

    assert confined.raw_output["via"] == free.raw_output["via"] == where.replace("editor", "client")
    assert confined.raw_output["exit_code"] == 0
    assert secret not in confined.model_text
    assert "MY_OWN_SETTING=kept" in confined.model_text
    assert secret in free.model_text


async def test_where_the_editors_side_has_no_bwrap_the_command_runs_in_the_local_sandbox(
    play: Play, tmp_path: Path
) -> None:
    no_bwrap = tmp_path / "editor-path"  # the editor's PATH: nothing on it
    no_bwrap.mkdir()
    command = f"echo in > inside.txt; echo out > {play.outside}/x"
    async with EditorBridge(terminal_env={"PATH": str(no_bwrap)}) as editor:
        result = await Session([play.workspace], editor, sandbox=play.sandbox()).run(
            SHELL, {"command": command}
        )

    [terminal] = editor.terminals  # tried once, given up at once
    assert terminal.released
    assert (result.raw_output["via"], result.raw_output["sandboxed"]) == ("local", True)
    why = result.raw_output["terminal_refused"]
    assert "bwrap" in why
    assert "No such file or directory" in why
    note = (
        f"The editor's terminal could not start the sandbox ({why}), so this command ran in "
        "the agent's own sandbox instead, as this session's next commands will."
    )
    shown = "\n".join(part.text for part in result.content if hasattr(part, "text"))
    assert shown.count(note) == 1
    assert (play.workspace / "inside.txt").read_text() == "in\n"  # it ran once, confined
    assert not (play.outside / "x").exists()
    assert result.raw_output["kept_in"] == f"{play.outside}/x is read-only in the sandbox"


async def test_where_the_editor_refuses_a_terminal_the_command_runs_in_the_local_sandbox(
    play: Play,
) -> None:
    # acpx without --approve-all answers terminal/create with an error.
    async with EditorBridge(refuse_terminals="Permission denied for terminal/create") as editor:
        session = Session([play.workspace], editor, sandbox=play.sandbox())
        first = await session.run(SHELL, {"command": "echo one > one.txt"})
        second = await session.run(SHELL, {"command": "echo two > two.txt"})

    # Each ran once, confined, here; a bare sandbox (no session) tries the editor each time.
    assert len(editor.launched) == 2
    assert (play.workspace / "one.txt").read_text() == "one\n"
    assert (play.workspace / "two.txt").read_text() == "two\n"
    for result in (first, second):
        assert (result.raw_output["via"], result.raw_output["sandboxed"]) == ("local", True)
        assert result.raw_output["exit_code"] == 0
        why = result.raw_output["terminal_refused"]
        assert (
            why == "the editor refused to start a terminal: Permission denied for terminal/create"
        )


async def test_a_place_under_tmp_outside_the_roots_is_said_to_be_out_of_the_sandbox(
    play: Play,
) -> None:
    with tempfile.TemporaryDirectory(prefix="acp-agent-out-") as outside_tmp:
        target = Path(outside_tmp) / "note.txt"
        result = await Session([play.workspace], sandbox=play.sandbox()).run(
            SHELL, {"command": f"echo x > {target}"}
        )

        assert not target.exists()
    assert result.raw_output["kept_in"] == (
        f"{target} is not in the sandbox, whose /tmp is the command's own ($TMPDIR and the "
        "workspace are shared)"
    )
