"""A restart never repeats a side effect: SIGKILL mid-tool-run, restart, `session/load`.

The killed process leaves a call that started and has no result. The next
process rebuilds the session: the call gets a terminal result, "interrupted by
restart; not re-run", the replay shows it failed with that text, and its
side effect (a line in a counter file) happened once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pytest

from protocol import methods, types
from tests.adapters.acp.support import calls_of
from tests.support import running_agent, write_script
from tests.support.messages import unnamed

pytestmark = pytest.mark.e2e

COMMAND = "echo $$ > pid.txt; echo ran >> counter.txt; sleep 30"


def has_content(path: Path) -> bool:
    return path.exists() and bool(path.read_text())


async def wait_for_file(path: Path, *, timeout_s: float = 10.0) -> None:
    """Wait for a file the agent's command writes (polled: nothing else tells us)."""
    async with asyncio.timeout(timeout_s):
        while not has_content(path):  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_sigkill_during_a_tool_run_then_load_shows_it_interrupted_and_never_reruns_it(
    tmp_path: Path,
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    counter, pid_file = workspace / "counter.txt", workspace / "pid.txt"
    home = tmp_path / "home"
    script = write_script(
        tmp_path / "restart.json",
        [
            {"text": "Counting."},
            {"tool_call": {"name": "shell", "arguments": {"command": COMMAND}, "id": "k1"}},
        ],
        [{"text": "After the restart."}],
    )
    try:
        async with running_agent(home, script=script) as client:
            session_id = await client.new_session(workspace)
            client.answers = ["allow_once"]
            turn = asyncio.create_task(client.prompt(session_id))
            await wait_for_file(counter)  # the side effect happened; the call is running
            await client.wait_for_update(
                session_id,
                lambda u: getattr(u, "status", None) == types.ToolCallStatus.IN_PROGRESS,
            )
            assert client.process is not None
            client.process.send_signal(signal.SIGKILL)
            with pytest.raises(Exception):  # noqa: B017, PT011 - the agent is gone
                await asyncio.wait_for(turn, timeout=10)

        async with running_agent(home, script=script) as client:
            response = await client.request(
                methods.SESSION_LOAD,
                types.LoadSessionRequest(session_id=session_id, cwd=str(workspace), mcp_servers=[]),
            )
            replayed = list(client.updates_for(session_id))
            after_load = await client.prompt(session_id)
            later = client.updates_for(session_id)[len(replayed) :]
    finally:
        if pid_file.exists():  # the killed agent's command, orphaned: stop it
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)

    # The load answers with the session's settings (its mode as recorded before the kill).
    assert response.modes is not None
    assert response.modes.current_mode_id == "ask"
    assert unnamed(replayed)[0] == types.UserMessageChunk(content=types.TextContent(text="Go"))
    assert unnamed(replayed)[1] == types.AgentMessageChunk(
        content=types.TextContent(text="Counting.")
    )
    # The call once, in its last state: failed, interrupted by the restart.
    [call] = calls_of(replayed, "k1")
    assert isinstance(call, types.ToolCall)
    assert call.status == types.ToolCallStatus.FAILED
    assert call.raw_input == {"command": COMMAND}
    text = call.content[0].content.text  # type: ignore[index,union-attr]
    assert text.startswith("Interrupted: the agent stopped while this ran")
    # The loaded session goes on with the next reply; the call never ran again.
    assert after_load.stop_reason == types.StopReason.END_TURN
    assert types.AgentMessageChunk(content=types.TextContent(text="After the restart.")) in unnamed(
        later
    )
    assert calls_of(later, "k1") == []
    assert counter.read_text() == "ran\n"
