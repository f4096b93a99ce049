"""The MCP servers a session in the workspace would start, started once to see them work.

The servers are what the runtime would take from the config files
(`acp_agent.mcp.load_configured_servers`: the user's, and the project's ones the
user enabled); the editor may add its own per session, which doctor cannot see.
Each enabled server is started once (`_mcp_start`). Disabled servers, and the
project's that are not enabled, are listed without being started, the latter
with the entry that would enable them.

A broken MCP server does not stop a prompt (the session goes on without its
tools), so no check here gates the exit status.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from acp_agent.adapters.doctor._redaction import redact_check
from acp_agent.adapters.doctor._report import Check, DetailValue, Status
from acp_agent.adapters.doctor._setup import DoctorSetup, is_secret
from acp_agent.mcp import (
    PROJECT_CONFIG_PATH,
    ConfiguredServers,
    DisabledServer,
    McpOrigin,
    McpServerConfig,
    StdioServerConfig,
    load_configured_servers,
)

__all__ = ("check_mcp", "command_line", "configured_servers", "declaration", "declared_in")


def configured_servers(setup: DoctorSetup) -> ConfiguredServers:
    """The servers the config files give a session in the workspace."""
    return load_configured_servers(setup.paths.config_dir, setup.cwd)


async def check_mcp(setup: DoctorSetup, configured: ConfiguredServers) -> list[Check]:
    """One check per server of `configured` (and one for unusable declarations)."""
    checks: list[Check] = []
    if configured.problems:
        count = len(configured.problems)
        checks.append(
            Check(
                "mcp:config",
                Status.PROBLEM,
                f"{count} declaration{'s' if count > 1 else ''} cannot be used: "
                f"{configured.problems[0]}",
                "fix the file it names; the other servers still start",
                {"problems": list(configured.problems)},
            )
        )
    if not configured.servers and not configured.disabled:
        checks.append(
            Check(
                "mcp",
                Status.OK,
                "no MCP servers configured (an editor may add its own to each session)",
            )
        )
        return checks
    if configured.servers:
        # Only now: the MCP SDK costs a second or two of imports.
        from acp_agent.adapters.doctor._mcp_start import check_started

        checks.extend(await check_started(configured.servers, setup))
    checks.extend(_disabled(entry, setup) for entry in configured.disabled)
    secrets = _secrets(configured)
    return [redact_check(check, secrets) for check in checks]


def _disabled(entry: DisabledServer, setup: DoctorSetup) -> Check:
    config = entry.config
    name = f"mcp:{config.name}"
    details = declaration(config, setup)
    if entry.enable_with is None:
        return Check(name, Status.OK, f"not started: {entry.reason}", details=details)
    details["enable with"] = entry.enable_with.rstrip("\n")
    return Check(
        name,
        Status.WARNING,
        f"not started: {entry.reason}",
        f"to run it, add the 'enable with' entry below to {setup.config_file}",
        details,
    )


def declaration(config: McpServerConfig, setup: DoctorSetup) -> dict[str, DetailValue]:
    """Where a server is declared and what it runs (or reaches)."""
    details: dict[str, DetailValue] = {"declared in": str(declared_in(config, setup))}
    if isinstance(config, StdioServerConfig):
        details["command"] = command_line(config)
    else:
        details["url"] = f"{config.url} ({config.transport})"
    return details


def declared_in(config: McpServerConfig, setup: DoctorSetup) -> Path:
    """The file that declares `config`."""
    if config.origin is McpOrigin.PROJECT:
        return setup.cwd / PROJECT_CONFIG_PATH
    return setup.config_file


def command_line(config: StdioServerConfig) -> str:
    """The server's command, as a shell would take it."""
    return shlex.join([config.command, *config.args])


def _secrets(configured: ConfiguredServers) -> list[str]:
    """Header values and secret-looking environment values of every declaration."""
    found: set[str] = set()
    every = [*configured.servers, *(entry.config for entry in configured.disabled)]
    for config in every:
        if isinstance(config, StdioServerConfig):
            found.update(value for key, value in config.env if is_secret(key, value))
        else:
            for _, value in config.headers:
                found.add(value)
                found.update(part for part in value.split() if len(part) >= 8)
    return sorted(found, key=len, reverse=True)
