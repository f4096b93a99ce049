"""Starting a workspace's enabled MCP servers once, to see each one work or fail.

Each server is started by the runtime's own `McpServerManager` (so it runs as a
session would run it: its command, environment and working directory, the
project's cwd), within its `startup_timeout_s` (or `--mcp-timeout`, if shorter),
its tools listed, and stopped again; nothing is reconnected. A server declared
with `sandbox = true` starts in the command sandbox of the person's policy on the
project's cwd, as a session's would (where bwrap cannot run, it fails saying so).
A failure shows the runtime's error: the command not found, the exit status with
the last lines of stderr, the timeout.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Final

import anyio
import attrs

from acp_agent.adapters.doctor._mcp import declaration, declared_in
from acp_agent.adapters.doctor._report import Check, Status
from acp_agent.adapters.doctor._setup import DoctorSetup
from acp_agent.mcp import (
    McpServerConfig,
    McpServerManager,
    ReconnectPolicy,
    ServerState,
    ServerStatus,
    StdioServerConfig,
)
from acp_agent.sandbox import (
    Sandbox,
    SandboxUnavailable,
    load_sandbox_settings,
    probe_sandbox,
    sandbox_policy,
)

__all__ = ("check_started",)

#: How many tool names a summary shows.
_SHOWN_TOOLS: Final = 6
#: Beyond the longest startup timeout, how long to wait for the manager's verdict.
_GRACE_S: Final = 2.0
#: How long stopping the servers may take before they are cut off.
_CLOSE_TIMEOUT_S: Final = 3.0
#: How many of a failed server's last stderr lines are shown.
_STDERR_LINES: Final = 10
#: Where the runtime's error text for a server goes on to its stderr.
_STDERR_MARK: Final = "; its stderr ended with:\n"


async def check_started(servers: Sequence[McpServerConfig], setup: DoctorSetup) -> list[Check]:
    """Start `servers`, then one check per server, in their order."""
    statuses, tools = await _start(servers, setup)
    return [
        _started(config, statuses.get(config.name), tools.get(config.name, []), setup)
        for config in servers
    ]


async def _start(
    servers: Sequence[McpServerConfig], setup: DoctorSetup
) -> tuple[dict[str, ServerStatus], dict[str, list[str]]]:
    """Start every server, wait for each one's first attempt, and stop them again."""
    cap = setup.mcp_timeout_s
    if cap is not None:
        servers = [
            attrs.evolve(config, startup_timeout_s=min(config.startup_timeout_s, cap))
            for config in servers
        ]
    limit = max(config.startup_timeout_s for config in servers) + _GRACE_S

    async def sandbox(config: StdioServerConfig) -> Sandbox:
        support = await anyio.to_thread.run_sync(probe_sandbox, setup.env)
        if not support.available or support.bwrap is None:
            raise SandboxUnavailable(support)
        settings = load_sandbox_settings(setup.config_file)
        policy = sandbox_policy(
            agent_paths=setup.paths,
            settings=settings,
            env=setup.env,
            network=config.sandbox_network,
        )
        return Sandbox(policy, (setup.cwd,), bwrap=support.bwrap)

    manager = McpServerManager(
        servers,
        cwd=setup.cwd,
        reconnect=ReconnectPolicy(delays_s=()),
        close_timeout_s=_CLOSE_TIMEOUT_S,
        sandbox=sandbox,
    )
    async with manager:
        with anyio.move_on_after(limit):
            await manager.wait_started()
        statuses = {status.name: status for status in manager.statuses()}
        tools: dict[str, list[str]] = defaultdict(list)
        for tool in manager.tool_set.tools:
            tools[tool.server].append(tool.tool)
    return statuses, dict(tools)


def _started(
    config: McpServerConfig, status: ServerStatus | None, tools: list[str], setup: DoctorSetup
) -> Check:
    name = f"mcp:{config.name}"
    details = declaration(config, setup)
    state = status.state if status is not None else ServerState.CONNECTING
    if state is ServerState.READY:
        if status is not None and status.server_info:
            details["server"] = status.server_info
        if len(tools) > _SHOWN_TOOLS:
            details["tools"] = sorted(tools)
        return Check(name, Status.OK, _tool_summary(tools), details=details)
    error = (status.error if status is not None else None) or "it did not start in time"
    reason, _, stderr = error.partition(_STDERR_MARK)
    if stderr:
        details["stderr"] = "\n".join(stderr.splitlines()[-_STDERR_LINES:])
    if state is ServerState.DISCONNECTED:
        summary = f"started, then its connection ended: {reason}"
        return Check(name, Status.WARNING, summary, details=details)
    if state is ServerState.CONNECTING:
        reason = f"did not start within {config.startup_timeout_s:g} s"
    return Check(name, Status.PROBLEM, f"failed: {reason}", _fix_for(config, error, setup), details)


def _tool_summary(tools: list[str]) -> str:
    if not tools:
        return "started; it lists no tools"
    names = sorted(tools)
    shown = ", ".join(names[:_SHOWN_TOOLS])
    more = len(names) - _SHOWN_TOOLS
    count = f"{len(names)} tool{'s' if len(names) > 1 else ''}"
    return f"{count}: {shown}" + (f" and {more} more" if more > 0 else "")


def _fix_for(config: McpServerConfig, error: str, setup: DoctorSetup) -> str:
    where = f"[mcp_servers.{config.name}] in {declared_in(config, setup)}"
    if "did not start" in error or "within" in error:
        return (
            "check that it starts on its own; if it is only slow, raise startup_timeout_s "
            f"in {where}"
        )
    if isinstance(config, StdioServerConfig):
        if "No such file or directory" in error or "FileNotFoundError" in error:
            return f"install {config.command!r} or fix command in {where}"
        if "exited with code" in error or "killed by" in error:
            return "run its command by hand to see why"
        return f"check command and args in {where}"
    return f"check the URL (and headers) in {where}, and that the server runs"
