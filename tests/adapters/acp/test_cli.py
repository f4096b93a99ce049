"""The `acp-agent` command line: flags, their environment twins, home, logs, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import acp_agent
from protocol import types
from tests.adapters.acp.support import text_of_updates
from tests.support import SCRIPTS, running_agent
from tests.support.raw_agent import RawAgent

pytestmark = pytest.mark.e2e

AGENT = [sys.executable, "-m", "acp_agent"]
CONSOLE_SCRIPT = Path(sys.executable).parent / "acp-agent"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENT, *args], capture_output=True, text=True, timeout=30, env=env, check=False
    )


def _initialize(msg_id: int = 1) -> dict[str, object]:
    params = {"protocolVersion": 1}
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}


@pytest.mark.parametrize("command", [AGENT, [str(CONSOLE_SCRIPT)]], ids=["module", "script"])
def test_version_prints_the_version_and_exits_zero(command: list[str]):
    result = subprocess.run(
        [*command, "--version"], capture_output=True, text=True, timeout=30, check=False
    )

    assert (result.returncode, result.stdout) == (0, f"acp-agent {acp_agent.__version__}\n")


def test_a_malformed_script_stops_start_up_with_a_usage_error_on_stderr(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [[{"say": "hi"}]]}))

    result = _run("--home", str(tmp_path), "--script", str(script))

    assert result.returncode == 2
    assert result.stdout == ""
    assert "unknown step 'say'" in result.stderr


def test_an_unknown_log_level_stops_start_up_with_a_usage_error(tmp_path: Path):
    result = _run("--home", str(tmp_path), "--log-level", "chatty")

    assert result.returncode == 2
    assert result.stdout == ""
    assert "unknown log level 'chatty'" in result.stderr


def test_home_holds_the_log_file(tmp_path: Path):
    agent = RawAgent([*AGENT, "--home", str(tmp_path)])
    agent.send_json(_initialize())
    agent.read_message()

    assert agent.stop() == 0
    log = (tmp_path / "logs" / "acp-agent.log").read_text()
    assert "serving ACP on stdio" in log
    assert "input ended; exiting" in log


def test_environment_variables_configure_the_agent_like_the_flags(tmp_path: Path):
    env = {
        **os.environ,
        "ACP_AGENT_HOME": str(tmp_path),
        "ACP_AGENT_SCRIPT": str(SCRIPTS / "greeting.json"),
        "ACP_AGENT_LOG_LEVEL": "debug",
    }
    agent = RawAgent(AGENT, env=env)
    agent.send_json(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": str(tmp_path), "mcpServers": []},
        }
    )
    session_id = agent.read_message()["result"]["sessionId"]
    agent.send_json(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "Hi"}]},
        }
    )
    first_update = agent.read_message()
    while first_update["params"]["update"]["sessionUpdate"] == "available_commands_update":
        first_update = agent.read_message()  # the session's commands, sent after session/new

    assert agent.stop() == 0
    assert first_update["params"]["update"]["content"]["text"] == "The user says hello."
    assert "DEBUG" in (tmp_path / "logs" / "acp-agent.log").read_text()


def test_message_bodies_never_reach_the_logs_even_at_debug(tmp_path: Path):
    secret = "sk-test-0123456789abcdef"
    script = str(SCRIPTS / "greeting.json")  # a session needs a model
    agent = RawAgent([*AGENT, "--home", str(tmp_path), "--log-level", "DEBUG", "--script", script])
    agent.send_json(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": "/tmp", "mcpServers": [], "_meta": {"apiKey": secret}},
        }
    )
    session_id = agent.read_message()["result"]["sessionId"]
    agent.send_json(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": secret}]},
        }
    )
    agent.send_json(
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"x": secret}}
    )
    while agent.read_message().get("id") != 3:
        pass

    assert agent.stop() == 0
    assert secret not in (tmp_path / "logs" / "acp-agent.log").read_text()
    assert secret.encode() not in bytes(agent.stderr)


async def test_a_log_file_on_a_full_disk_is_reported_once_and_the_agent_goes_on(tmp_path: Path):
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    (home / "logs" / "acp-agent.log").symlink_to("/dev/full")  # every write: ENOSPC
    script = SCRIPTS / "greeting.json"

    async with running_agent(home, script=script, args=("--log-level", "DEBUG")) as client:
        session_id = await client.new_session(tmp_path)
        responses = [await client.prompt(session_id, "Hello")]
        # A template named like a built-in command: each later prompt warns about it.
        (tmp_path / ".acp-agent" / "commands").mkdir(parents=True)
        (tmp_path / ".acp-agent" / "commands" / "help.md").write_text("Not the real help.")
        responses += [await client.prompt(session_id, f"Hello {n}") for n in range(2)]
        texts = text_of_updates(client.updates_for(session_id))
    lines = "".join(client.stderr_lines).splitlines()

    assert [response.stop_reason for response in responses] == [types.StopReason.END_TURN] * 3
    assert texts == "Hello, world." + "Second reply." * 2
    assert not [line for line in lines if "Traceback" in line or "Logging error" in line]
    [problem] = [n for n, line in enumerate(lines) if "acp-agent.log" in line]
    assert "No space left on device" in lines[problem]
    # stderr logging goes on after the file stopped.
    assert any("/help is a built-in command" in line for line in lines[problem + 1 :])


def test_a_record_that_cannot_be_formatted_does_not_stop_the_log_file(tmp_path: Path):
    log_file = tmp_path / "logs" / "acp-agent.log"
    program = (
        "import logging, sys, pathlib\n"
        "from acp_agent.logs import configure_logging\n"
        "configure_logging(logging.INFO, pathlib.Path(sys.argv[1]))\n"
        "logging.getLogger('probe').info('%d', 'not a number')\n"
        "logging.getLogger('probe').info('still written')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program, str(log_file)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )

    assert result.returncode == 0
    assert "still written" in log_file.read_text()
    assert "no longer written" not in result.stderr
