"""An editor half gone: it closed the agent's stdout but keeps its stdin open.

With nothing to write, the agent still notices (it watches the pipe, it does not
wait for its next write to fail) and stops as it does when its stdin closes,
with status 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import agent_env

pytestmark = pytest.mark.e2e

#: How long the test waits for the exit; only a failing test waits this long.
EXIT_WAIT_S = 10.0


def test_the_agent_stops_when_its_stdout_is_closed_while_its_stdin_stays_open(
    tmp_path: Path,
) -> None:
    command = [sys.executable, "-m", "acp_agent", "--home", str(tmp_path / "home")]
    agent = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=agent_env(),
    )
    assert agent.stdin is not None
    assert agent.stdout is not None
    try:
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": 1},
        }
        agent.stdin.write(json.dumps(request).encode() + b"\n")
        agent.stdin.flush()
        assert json.loads(agent.stdout.readline())["id"] == 1
        # Nothing more to say until asked: the editor stops reading, stdin stays open.
        agent.stdout.close()
        returncode = agent.wait(timeout=EXIT_WAIT_S)
        _, stderr = agent.communicate(timeout=EXIT_WAIT_S)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()

    assert returncode == 0
    assert b"the peer closed its end" in stderr
    assert b"Traceback" not in stderr
