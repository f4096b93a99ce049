"""The stdio command as a bridge (`--connect`, `[server] connect = true`): no server, or
one it starts."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from protocol import methods, types
from tests.support import EditorClient, agent_env, connected, write_script
from tests.support.processes import alive
from tests.test_readme import readme_block

pytestmark = pytest.mark.e2e


async def test_with_no_server_the_bridge_says_how_to_start_one(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acp_agent",
        "--home",
        str(tmp_path / "home"),
        "--connect",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=agent_env(),
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(b""), 30)

    assert process.returncode == 1
    assert stdout == b""
    assert b"no server listens on" in stderr
    assert b"acp-agent server" in stderr


async def test_a_configured_editor_command_starts_the_server_and_bridges_to_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    # The set-up docs/server.md shows: plain `acp-agent` bridges, and starts the server.
    language, config = readme_block("server-config")
    assert language == "toml"
    (home / "config" / "config.toml").write_text(config)
    script = write_script(tmp_path / "script.json", [{"text": "Hello from the server."}])
    # Plain `acp-agent`, as an editor launches it: the config makes it a bridge.
    command = [sys.executable, "-m", "acp_agent", "--home", str(home), "--script", str(script)]
    pid_file = home / "state" / "server" / "server.pid"
    try:
        async with connected(EditorClient(), command, env=agent_env()) as editor:
            await editor.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1))
            session_id = await editor.new_session(tmp_path)
            response = await editor.prompt(session_id, "Hi")
            assert response.stop_reason == types.StopReason.END_TURN
            [chunk] = [
                u for u in editor.updates_for(session_id) if isinstance(u, types.AgentMessageChunk)
            ]
            assert chunk.content == types.TextContent(text="Hello from the server.")
        server_pid = int(pid_file.read_text())
        # The editor is gone; the server it started runs on (its sessions with it).
        assert alive(server_pid)
    finally:
        if pid_file.exists():
            server_pid = int(pid_file.read_text())
            os.kill(server_pid, signal.SIGTERM)
            for _ in range(100):
                if not alive(server_pid):
                    break
                await asyncio.sleep(0.1)
    assert not alive(server_pid)
    assert not (home / "state" / "server" / "acp.sock").exists()
