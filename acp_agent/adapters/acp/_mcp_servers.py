"""The editor's `mcpServers` (ACP `McpServer*`), as a session starts them.

stdio, HTTP and SSE servers are converted to `acp_agent.mcp` server configs
(all three are advertised in `mcpCapabilities`); an `acp`-transport server
(unstable, MCP over the ACP connection) is not supported and is left out with
a warning. `connect_mcp` has the session handle start them in the
background: no answer waits for them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from acp_agent.agent import (
    HttpServerConfig,
    McpOrigin,
    McpServerConfig,
    SessionHandle,
    SseServerConfig,
    StdioServerConfig,
)
from protocol import types

__all__ = ("connect_mcp", "editor_mcp_servers")

logger = logging.getLogger(__name__)


def editor_mcp_servers(servers: Sequence[types.McpServer] | None) -> list[McpServerConfig]:
    """Configs (origin `EDITOR`) for the servers a `session/new`, `load` or `resume` names."""
    configs: list[McpServerConfig] = []
    for server in servers or ():
        if isinstance(server, types.McpServerStdio):
            configs.append(
                StdioServerConfig(
                    name=server.name,
                    origin=McpOrigin.EDITOR,
                    command=server.command,
                    args=tuple(server.args),
                    env=tuple((variable.name, variable.value) for variable in server.env),
                )
            )
        elif isinstance(server, types.McpServerHttp):
            configs.append(
                HttpServerConfig(
                    name=server.name,
                    origin=McpOrigin.EDITOR,
                    url=server.url,
                    headers=tuple((header.name, header.value) for header in server.headers),
                )
            )
        elif isinstance(server, types.McpServerSse):
            configs.append(
                SseServerConfig(
                    name=server.name,
                    origin=McpOrigin.EDITOR,
                    url=server.url,
                    headers=tuple((header.name, header.value) for header in server.headers),
                )
            )
        else:
            logger.warning("MCP server %r: the %r transport is not supported", server.name, "acp")
    return configs


async def connect_mcp(session: SessionHandle, servers: Sequence[types.McpServer] | None) -> None:
    """Start the session's MCP servers in the background (this never waits for them)."""
    await session.connect_mcp(editor_mcp_servers(servers))
