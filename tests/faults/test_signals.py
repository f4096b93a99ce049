"""SIGTERM and SIGHUP end the agent the way closing its stdin does.

A turn runs the `shell` tool (a `sleep` in a process group of its own) in a
session with a real MCP stdio server, and then the agent is told to stop:
its stdin is closed, or it gets SIGTERM, SIGHUP or SIGINT. Whichever way, it
answers the running prompt, exits with status 0, leaves neither the
command's process group nor the MCP server behind, and a new agent on the
same home loads the session with the call failed as interrupted, never run
again. Once shutdown is under way, another stop signal ends the process at
once, by that signal. Each agent starts with the signals it is sent at their
default action, so this holds however the suite itself was started (under
`nohup`, in the background); a re-run of them in such a suite checks that.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from protocol import methods, types
from protocol.errors import RequestCancelled
from tests.adapters.acp.support import calls_of
from tests.mcp.support import SERVERS
from tests.support import WireValidator, agent_env, running_agent, write_script
from tests.support.messages import unnamed
from tests.support.processes import alive, children_of, group_members
from tests.support.raw_agent import RawAgent

pytestmark = pytest.mark.e2e

COMMAND = "echo $$ > pid.txt; echo ran >> counter.txt; sleep 300"
#: How long the test waits for the agent to exit at all; only a failing test waits this long.
EXIT_WAIT_S = 10.0
#: How long it waits for something the agent or its children should do soon.
WAIT_S = 10.0

#: How the agent is told to stop: None closes its stdin.
STOPS: dict[str, signal.Signals | None] = {
    "stdin_closed": None,
    "SIGTERM": signal.SIGTERM,
    "SIGHUP": signal.SIGHUP,
    "SIGINT": signal.SIGINT,
}
#: What each agent here starts with at the default action, whatever the suite started
#: with: under `nohup` (and in the background) the suite ignores SIGHUP and SIGINT, and
#: the agent rightly keeps an ignore it inherits.
SENT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


async def wait_for(condition: Callable[[], object], *, timeout_s: float = WAIT_S) -> None:
    """Poll `condition` until it holds (nothing else tells us about files and processes)."""
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


def mcp_server(name: str, script: str = "tools_server.py") -> types.McpServerStdio:
    return types.McpServerStdio(
        name=name, command=sys.executable, args=[str(SERVERS / script)], env=[]
    )


def shell_script(tmp_path: Path) -> Path:
    return write_script(
        tmp_path / "script.json",
        [
            {"text": "Sleeping."},
            {"tool_call": {"name": "shell", "arguments": {"command": COMMAND}, "id": "k1"}},
        ],
        [{"text": "After the restart."}],
    )


def kill_leftovers(pid_file: Path, pids: list[int]) -> None:
    """Stop what a failing test left running (the command's group, MCP servers)."""
    if pid_file.exists() and pid_file.read_text().strip():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("stop", list(STOPS))
async def test_stopping_the_agent_mid_tool_run_ends_its_children_and_records_the_call(
    tmp_path: Path, stop: str
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    counter, pid_file = workspace / "counter.txt", workspace / "pid.txt"
    home = tmp_path / "home"
    script = shell_script(tmp_path)
    mcp_pids: list[int] = []
    try:
        async with running_agent(home, script=script, default_signals=SENT_SIGNALS) as client:
            response = await client.request(
                methods.SESSION_NEW,
                types.NewSessionRequest(cwd=str(workspace), mcp_servers=[mcp_server("tools")]),
            )
            session_id = str(response.session_id)
            agent = client.process
            assert agent is not None

            def mcp_started() -> bool:
                # The pids that satisfied the wait (a second look could miss a server
                # between its gate and its exec).
                mcp_pids[:] = children_of(agent.pid, command_contains="tools_server.py")
                return mcp_pids != []

            await wait_for(mcp_started)
            client.answers = ["allow_once"]
            turn = asyncio.create_task(client.prompt(session_id))
            await wait_for(lambda: counter.exists() and pid_file.read_text().endswith("\n"))
            await client.wait_for_update(
                session_id,
                lambda u: getattr(u, "status", None) == types.ToolCallStatus.IN_PROGRESS,
            )
            pgid = int(pid_file.read_text())
            assert group_members(pgid) != []

            signum = STOPS[stop]
            if signum is None:
                assert agent.stdin is not None
                agent.stdin.close()
            else:
                agent.send_signal(signum)
            returncode = await asyncio.wait_for(agent.wait(), EXIT_WAIT_S)

            # Still there right after the exit: the agent reaped what it ended.
            leftovers = (group_members(pgid), [pid for pid in mcp_pids if alive(pid)])
            [answer] = await asyncio.gather(turn, return_exceptions=True)

        async with running_agent(home, script=script) as client:
            await client.request(
                methods.SESSION_LOAD,
                types.LoadSessionRequest(session_id=session_id, cwd=str(workspace), mcp_servers=[]),
            )
            replayed = list(client.updates_for(session_id))
            after_load = await client.prompt(session_id)
            later = client.updates_for(session_id)[len(replayed) :]
    finally:
        kill_leftovers(pid_file, mcp_pids)

    assert mcp_pids != []
    assert leftovers == ([], [])
    assert returncode == 0
    assert isinstance(answer, RequestCancelled)
    # The call once, in its last state: failed, recorded by the shutdown itself, not
    # settled by the next load ("by restart").
    [call] = calls_of(replayed, "k1")
    assert call.status == types.ToolCallStatus.FAILED
    text = call.content[0].content.text  # type: ignore[index,union-attr]
    assert text.startswith("Interrupted: the turn was cancelled while this ran")
    assert after_load.stop_reason == types.StopReason.END_TURN
    assert types.AgentMessageChunk(content=types.TextContent(text="After the restart.")) in unnamed(
        later
    )
    assert calls_of(later, "k1") == []
    assert counter.read_text() == "ran\n"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_only_protocol_lines_reach_stdout_while_a_signal_shuts_the_agent_down(
    tmp_path: Path, signum: signal.Signals
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    pid_file = workspace / "pid.txt"
    command = [
        sys.executable,
        "-m",
        "acp_agent",
        "--home",
        str(tmp_path / "home"),
        "--script",
        str(shell_script(tmp_path)),
    ]
    agent = RawAgent(command, env=agent_env(), default_signals=SENT_SIGNALS)
    try:
        agent.send_json(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        )
        agent.read_message()
        agent.send_json(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": methods.SESSION_NEW,
                "params": {"cwd": str(workspace), "mcpServers": []},
            }
        )
        session_id = next_with_id(agent, 2)["result"]["sessionId"]
        agent.send_json(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": methods.SESSION_SET_MODE,
                "params": {"sessionId": session_id, "modeId": "bypass"},
            }
        )
        next_with_id(agent, 3)
        agent.send_json(
            {
                "jsonrpc": "2.0",
                "id": "prompt",
                "method": methods.SESSION_PROMPT,
                "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "Go"}]},
            }
        )
        while True:  # bypass mode: the call runs without a question
            message = agent.read_message()
            assert "id" not in message, message
            update = message["params"]["update"]  # type: ignore[index]
            if update.get("status") == "in_progress":
                break
        for _ in range(1000):
            if pid_file.exists() and pid_file.read_text().endswith("\n"):
                break
            time.sleep(0.01)

        agent.process.send_signal(signum)
        returncode, _ = agent.wait_for_exit(EXIT_WAIT_S)
    finally:
        agent.stop()
        kill_leftovers(pid_file, [])

    assert returncode == 0
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in agent.received)
    assert WireValidator().problems(agent.sent, agent.received) == []
    answer = json.loads(agent.received[-1])
    assert answer["id"] == "prompt"
    assert answer["error"]["code"] == RequestCancelled.CODE
    assert b"Traceback" not in agent.stderr


def next_with_id(agent: RawAgent, msg_id: object) -> dict[str, object]:
    """Read until the answer to `msg_id` (notifications before it are skipped)."""
    while True:
        message = agent.read_message()
        if message.get("id") == msg_id and "method" not in message:
            return message


async def test_a_second_signal_during_shutdown_ends_the_agent_at_once_by_that_signal(
    tmp_path: Path,
):
    # A server that never answers and ignores SIGTERM and the end of its stdin:
    # stopping it takes the agent seconds, time enough for a second signal.
    stubborn = tmp_path / "stubborn_server.py"
    stubborn.write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "for _line in sys.stdin:\n"
        "    pass\n"
        "time.sleep(300)\n"
    )
    script = write_script(tmp_path / "slow.json", [{"text": "Thinking."}, {"sleep_ms": 300000}])
    server = types.McpServerStdio(
        name="stubborn", command=sys.executable, args=[str(stubborn)], env=[]
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    server_pids: list[int] = []
    try:
        # The prompt goes on without waiting for the server, which never answers.
        env = agent_env(ACP_AGENT_MCP_STARTUP_WAIT_S="0")
        async with running_agent(
            tmp_path / "home", script=script, env=env, default_signals=SENT_SIGNALS
        ) as client:
            agent = client.process
            assert agent is not None
            response = await client.request(
                methods.SESSION_NEW,
                types.NewSessionRequest(cwd=str(workspace), mcp_servers=[server]),
            )
            await wait_for(lambda: children_of(agent.pid, command_contains="stubborn_server.py"))
            server_pids = children_of(agent.pid, command_contains="stubborn_server.py")
            turn = asyncio.create_task(client.prompt(str(response.session_id)))
            await client.wait_for_update(str(response.session_id))

            agent.send_signal(signal.SIGTERM)
            # The prompt's answer says shutdown is under way; the stubborn server holds it up.
            with pytest.raises(RequestCancelled):
                await turn
            agent.send_signal(signal.SIGTERM)
            returncode = await asyncio.wait_for(agent.wait(), EXIT_WAIT_S)
    finally:
        kill_leftovers(tmp_path / "none", server_pids)

    assert returncode == -signal.SIGTERM


#: The signal tests whose agents would keep an ignore the suite inherited: the first
#: runs by default, the rest are slow.
_IGNORED_BY_THE_SUITE = (
    "test_only_protocol_lines_reach_stdout_while_a_signal_shuts_the_agent_down[SIGHUP]",
    "test_stopping_the_agent_mid_tool_run_ends_its_children_and_records_the_call[SIGHUP]",
    "test_stopping_the_agent_mid_tool_run_ends_its_children_and_records_the_call[SIGINT]",
)


def _ignore_hangups_and_interrupts() -> None:
    """What `nohup cmd &` gives a suite: SIGHUP and SIGINT ignored."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    "names",
    [
        pytest.param(_IGNORED_BY_THE_SUITE[:1], id="sample"),
        pytest.param(_IGNORED_BY_THE_SUITE[1:], id="rest", marks=pytest.mark.slow),
    ],
)
def test_the_signal_tests_pass_in_a_suite_that_ignores_sighup_and_sigint(names: tuple[str, ...]):
    here = Path(__file__).resolve()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",  # one process: the suite's own workers would only add start-up time
            "-p",
            "no:cacheprovider",
            *(f"{here}::{name}" for name in names),
        ],
        cwd=here.parents[2],
        capture_output=True,
        timeout=300,
        preexec_fn=_ignore_hangups_and_interrupts,
    )

    output = result.stdout.decode(errors="replace")
    assert result.returncode == 0, output[-4000:]
    assert f"{len(names)} passed" in output, output[-4000:]
