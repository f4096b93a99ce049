"""An MCP stdio server declared with `sandbox = true` starts in the command sandbox: the
session's roots writable, the rest read-only, secrets hidden, the network on unless declared
off; where the sandbox cannot run it does not start, saying why."""

from __future__ import annotations

import os
import sys

import attrs
import pytest

from acp_agent.adapters.doctor._mcp_start import check_started
from acp_agent.adapters.doctor._setup import DoctorSetup
from acp_agent.mcp import McpServerManager, ServerState, StdioServerConfig
from acp_agent.mcp._config import McpOrigin, canonical_declaration, declaration_hash
from acp_agent.mcp._settings import parse_server_table
from acp_agent.sandbox import Sandbox, SandboxSupport, SandboxUnavailable
from tests.mcp.support import SERVERS, tool_context
from tests.sandbox.conftest import Play

pytestmark = pytest.mark.anyio


def files_server(**fields: object) -> StdioServerConfig:
    script = str(SERVERS / "files_server.py")
    return StdioServerConfig(name="files", command=sys.executable, args=(script,), **fields)


async def test_a_sandboxed_server_writes_its_roots_only_and_reads_no_secret(play: Play) -> None:
    async def sandbox(config: StdioServerConfig) -> Sandbox:
        return play.sandbox(network=config.sandbox_network)

    confined = files_server(sandbox=True)
    async with McpServerManager([confined], cwd=play.workspace, sandbox=sandbox) as manager:
        await manager.wait_settled()
        assert manager.status("files").state is ServerState.READY
        tools = manager.tool_set.by_name()
        context = tool_context(play.workspace)

        async def call(tool: str, **arguments: str) -> str:
            return (await tools[f"mcp__files__{tool}"].run(arguments, context)).model_text

        inside = await call("write", path=str(play.workspace / "in.txt"), text="in")
        outside = await call("write", path=str(play.outside / "out.txt"), text="out")
        secret = await call("read", path=str(play.home / ".netrc"))

    assert inside == "written"
    assert (play.workspace / "in.txt").read_text() == "in"
    assert "Read-only file system" in outside
    assert not (play.outside / "out.txt").exists()
    assert secret.startswith("error: [Errno 13] Permission denied")


async def test_where_the_sandbox_cannot_run_the_server_does_not_start(play: Play) -> None:
    async def sandbox(config: StdioServerConfig) -> Sandbox:
        raise SandboxUnavailable(SandboxSupport(None, "not installed: no bwrap on PATH", "fix"))

    async with McpServerManager(
        [files_server(sandbox=True)], cwd=play.workspace, sandbox=sandbox
    ) as manager:
        await manager.wait_settled()
        status = manager.status("files")

    assert status.state is ServerState.FAILED
    assert status.error == (
        "sandbox = true, but commands cannot run sandboxed here: not installed: no bwrap on "
        "PATH (fix)"
    )


def test_the_sandbox_keys_are_read_and_leave_other_declarations_hash_alone() -> None:
    plain = {"command": "server", "args": ["--stdio"]}
    confined = {**plain, "sandbox": True, "sandbox_network": False}

    before, _ = parse_server_table("s", plain, McpOrigin.PROJECT)
    after, _ = parse_server_table("s", confined, McpOrigin.PROJECT)

    assert isinstance(after, StdioServerConfig)
    assert (after.sandbox, after.sandbox_network) == (True, False)
    # A declaration without them hashes as before they existed: enablements still hold.
    assert set(canonical_declaration(before)) == {
        "name",
        "command",
        "args",
        "env",
        "cwd",
        "startup_timeout_s",
        "tool_timeout_s",
        "transport",
    }
    assert declaration_hash(after) != declaration_hash(before)
    with pytest.raises(ValueError, match="sandbox is for command servers"):
        parse_server_table("u", {"url": "https://x", "sandbox": True}, McpOrigin.USER)


async def test_doctor_starts_a_sandboxed_server_in_the_sandbox_or_not_at_all(play: Play) -> None:
    setup = DoctorSetup(
        paths=play.agent, home=None, home_source=None, env=dict(os.environ), cwd=play.workspace
    )
    no_bwrap = attrs.evolve(setup, env={**os.environ, "PATH": str(play.base / "empty-bin")})

    [started] = await check_started([files_server(sandbox=True)], setup)
    [refused] = await check_started([files_server(sandbox=True)], no_bwrap)

    assert (started.status.value, started.summary) == ("ok", "3 tools: env, read, write")
    assert refused.status.value == "problem"
    assert refused.summary.startswith(
        "failed: sandbox = true, but commands cannot run sandboxed here: not installed: no bwrap "
        "on PATH (install bubblewrap: apt install bubblewrap"
    )
