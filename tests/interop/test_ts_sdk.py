"""Interop with the official TypeScript SDK (`@agentclientprotocol/sdk` 2.4.0, the draft
the v2 schema was vendored from): its own client code drives the real agent.

- over stdio in ACP v2 (`ts_sdk_v2_client.mjs`): initialize, a session, a prompt whose
  tool call asks permission, the turn read to its `stop`, and a resume replaying from
  the start, each accepted by the SDK's parsers;
- over the app server's WebSocket in ACP v1 (`ts_sdk_ws_client.mjs`), with the SDK's
  WebSocket stream: an oracle for the server's WebSocket framing that no code of ours
  wrote.

The SDK is not a dependency of the project: the tests look for it where
`ACP_AGENT_TS_SDK` points (a `node_modules` folder), else in
`~/.cache/acp-agent/interop/node_modules`, and skip saying so when it or node is missing.
To install it there (`.ci/run` does, within a time limit): `npm install --prefix
~/.cache/acp-agent/interop @agentclientprotocol/sdk@2.4.0 zod@4 ws@8`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent import agent_env, write_script
from tests.support.app_server import running_server

HERE = Path(__file__).resolve().parent
SDK_VERSION = "2.4.0"


def sdk_folder() -> Path | None:
    """The SDK 2.4.0's package folder, if installed where the tests look."""
    root = os.environ.get("ACP_AGENT_TS_SDK") or str(
        Path.home() / ".cache" / "acp-agent" / "interop" / "node_modules"
    )
    package = Path(root) / "@agentclientprotocol" / "sdk"
    try:
        version = json.loads((package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None
    return package if version == SDK_VERSION else None


def node_and_sdk() -> tuple[str, Path]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    sdk = sdk_folder()
    if sdk is None:
        pytest.skip(
            f"@agentclientprotocol/sdk {SDK_VERSION} is not installed (ACP_AGENT_TS_SDK, or "
            "~/.cache/acp-agent/interop/node_modules; see this module's docstring)"
        )
    return node, sdk


def run_node(script: str, *args: str, env: dict[str, str]) -> dict[str, Any]:
    """Run a node script of this folder; its one JSON summary line, parsed."""
    node, _ = node_and_sdk()
    done = subprocess.run(
        [node, str(HERE / script), *args],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    return _summary(script, done.stdout, done.stderr)


def token_in(path: str) -> str:
    """The server's token, from the file it named."""
    return Path(path).read_text().strip()


def _summary(script: str, stdout: bytes, stderr: bytes) -> dict[str, Any]:
    lines = [line for line in stdout.decode().splitlines() if line.startswith("{")]
    assert lines, f"no summary from {script}; stderr: {stderr.decode()[-2000:]}"
    summary: dict[str, Any] = json.loads(lines[-1])
    assert summary.get("ok"), summary
    return summary


@pytest.mark.timeout(90)
def test_the_ts_sdk_v2_client_over_stdio(tmp_path: Path) -> None:
    _, sdk = node_and_sdk()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = write_script(
        tmp_path / "script.json",
        [
            {"text": "Running."},
            {"tool_call": {"name": "shell", "arguments": {"command": "echo hi"}, "id": "c1"}},
        ],
        [{"text": "Done."}],
    )
    agent = [sys.executable, "-m", "acp_agent", "--home", str(tmp_path / "home")]
    summary = run_node(
        "ts_sdk_v2_client.mjs",
        str(sdk),
        str(workspace),
        *agent,
        "--script",
        str(script),
        env=agent_env(),
    )
    assert summary["protocolVersion"] == 2
    assert summary["messageId"].startswith("turn_")
    assert summary["permissions"] == 1
    assert summary["stopReasons"] == ["end_turn"]
    assert summary["texts"] == ["Running.", "Done."]
    assert summary["kinds"][:2] == ["state_update", "user_message_chunk"]
    assert summary["kinds"].count("tool_call_update") == 4  # pending, running, shown, done
    assert {"terminal_update", "terminal_output_chunk"} <= set(summary["kinds"])
    assert "help" in {c["name"] for c in summary["resumeResult"]["availableCommands"]}
    assert {"user_message_chunk", "tool_call_update"} <= set(summary["replayed"])


@pytest.mark.timeout(90)
async def test_the_ts_sdk_v1_client_over_the_servers_websocket(tmp_path: Path) -> None:
    node, sdk = node_and_sdk()
    modules = sdk.parent.parent
    if not (modules / "ws" / "wrapper.mjs").is_file():
        pytest.skip(f"the ws package is not installed beside the SDK ({modules})")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    script = write_script(home / "script.json", [{"text": "Over"}, {"text": " the web."}])
    args = ["--listen", "ws://127.0.0.1:0"]
    async with running_server(home, script=script, args=args) as server:
        text = "".join(server.stderr)
        found = re.search(r"listening on (ws://\S+) \(the token is in (\S+)\)", text)
        assert found is not None, text
        url, token = found.group(1), token_in(found.group(2))
        process = await asyncio.create_subprocess_exec(
            node,
            str(HERE / "ts_sdk_ws_client.mjs"),
            str(modules),
            url,
            token,
            str(workspace),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(60):
            stdout, stderr = await process.communicate()
    summary = _summary("ts_sdk_ws_client.mjs", stdout, stderr)
    assert summary["protocolVersion"] == 1
    assert summary["stopReason"] == "end_turn"
    assert "".join(summary["texts"]) == "Over the web.", summary
