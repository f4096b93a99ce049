"""The shell tool given a sandbox in its context (as the sandboxed mode gives it): its commands
run locally in the sandbox, even where the editor offers terminals (what the editor runs cannot
be confined), without the agent's keys; what the sandbox kept in is said plainly. Without one,
as before."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from acp_agent.tools import ShellTool
from tests.sandbox.conftest import Play
from tests.tools.editor import EditorBridge
from tests.tools.support import Session

pytestmark = pytest.mark.anyio

SHELL = ShellTool()


async def test_a_sandboxed_shell_runs_locally_confined_even_with_editor_terminals(
    play: Play,
) -> None:
    command = f"echo in > inside.txt && echo out > {play.outside}/x"
    async with EditorBridge() as editor:
        confined = await Session([play.workspace], editor, sandbox=play.sandbox()).run(
            SHELL, {"command": command}
        )
        free = await Session([play.workspace], editor).run(SHELL, {"command": "echo hi"})

    assert confined.raw_output["via"] == "local"
    assert (confined.raw_output["sandboxed"], free.raw_output["sandboxed"]) == (True, False)
    assert confined.raw_output["exit_code"] == 1
    assert (play.workspace / "inside.txt").read_text() == "in\n"
    assert not (play.outside / "x").exists()
    kept_in = f"{play.outside}/x is read-only in the sandbox"
    assert confined.raw_output["kept_in"] == kept_in
    assert f"The sandbox kept it in: {kept_in}." in confined.model_text
    assert "`outside_sandbox: true`" in confined.model_text  # the model learns how to leave
    shown = "\n".join(part.text for part in confined.content if hasattr(part, "text"))
    assert f"The sandbox kept it in: {kept_in}. The agent may ask you" in shown
    assert free.raw_output["via"] == "client"  # no sandbox: the editor's terminal, as before


async def test_a_sandboxed_command_gets_no_provider_key_and_an_unconfined_one_does(
    play: Play, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-ant-secret-value-1234"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    monkeypatch.setenv("MY_OWN_SETTING", "kept")
    # Every process of the sandbox, bwrap's own (pid 1 inside) included.
    command = "env; cat /proc/1/environ | tr '\\0' '\\n'"

    confined = await Session([play.workspace], sandbox=play.sandbox()).run(
        SHELL, {"command": command}
    )
    free = await Session([play.workspace]).run(SHELL, {"command": command})

    assert confined.raw_output["exit_code"] == 0
    assert secret not in confined.model_text
    assert "MY_OWN_SETTING=kept" in confined.model_text
    assert secret in free.model_text


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
