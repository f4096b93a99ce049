"""The shell tool given a policy: its commands run locally in the sandbox, even where the
editor offers terminals (what the editor runs cannot be confined); without one, as before."""

from __future__ import annotations

import pytest

from acp_agent.tools import ShellTool
from tests.sandbox.conftest import Play
from tests.tools.editor import EditorBridge
from tests.tools.support import Session

pytestmark = pytest.mark.anyio


async def test_a_sandboxed_shell_runs_locally_confined_even_with_editor_terminals(
    play: Play,
) -> None:
    command = f"echo in > inside.txt && echo out > {play.outside}/x"
    async with EditorBridge() as editor:
        session = Session([play.workspace], editor)
        confined = await session.run(ShellTool(sandbox=play.policy()), {"command": command})
        free = await session.run(ShellTool(), {"command": "echo hi"})

    assert confined.raw_output["via"] == "local"
    assert confined.raw_output["exit_code"] == 1
    assert "Read-only file system" in confined.model_text
    assert (play.workspace / "inside.txt").read_text() == "in\n"
    assert not (play.outside / "x").exists()
    assert free.raw_output["via"] == "client"  # no policy: the editor's terminal, as before
