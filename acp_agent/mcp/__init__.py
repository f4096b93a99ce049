"""MCP tool servers, on the far side of the core: configs, trust, connections, tools.

Servers come from the editor (`session/new`, `load`, `resume`: the adapter
converts ACP's `McpServer*` into `StdioServerConfig` / `HttpServerConfig` /
`SseServerConfig` with origin `EDITOR`), from the user's config file, and
from the project's `.acp-agent/config.toml`, whose servers stay disabled
until the user enables them (`load_configured_servers`; the file formats
are documented in `acp_agent.mcp._settings`).

`McpServerManager` connects a session's servers in the background (never
delaying the session), reports their statuses, offers their tools as
`McpTool`s (the `Tool` contract of `acp_agent.toolkit`) named
`mcp__<server>__<tool>` in numbered generations, and reconnects crashed
servers with bounded backoff. `register_mcp` makes them part of every
session: its tool generations, its guide and its notifications.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from acp_agent.lazy_face import lazy_face as _lazy_face
from acp_agent.mcp._config import (
    DEFAULT_STARTUP_TIMEOUT_S,
    DEFAULT_TOOL_TIMEOUT_S,
    HttpServerConfig,
    McpOrigin,
    McpServerConfig,
    SseServerConfig,
    StdioServerConfig,
    Transport,
    declaration_hash,
)
from acp_agent.mcp._names import TOOL_NAME_PATTERN, assign_tool_names
from acp_agent.mcp._session import (
    MCP_BRANCH,
    MCP_GUIDE_ENTRY,
    MCP_SESSION,
    McpSessionTools,
    McpSettings,
    register_mcp,
    status_report,
)
from acp_agent.mcp._settings import (
    CONFIG_FILE_NAME,
    PROJECT_CONFIG_PATH,
    ConfiguredServers,
    DisabledServer,
    enablement_entry,
    load_configured_servers,
    with_editor_servers,
)

__all__ = (
    "CONFIG_FILE_NAME",
    "DEFAULT_STARTUP_TIMEOUT_S",
    "DEFAULT_TOOL_TIMEOUT_S",
    "MCP_BRANCH",
    "MCP_GUIDE_ENTRY",
    "MCP_SESSION",
    "PROJECT_CONFIG_PATH",
    "SUPPORTED_TRANSPORTS",
    "TOOL_NAME_PATTERN",
    "ConfiguredServers",
    "DisabledServer",
    "HttpServerConfig",
    "McpEvent",
    "McpListener",
    "McpOrigin",
    "McpServerConfig",
    "McpServerManager",
    "McpSessionTools",
    "McpSettings",
    "McpTool",
    "McpToolSet",
    "ReconnectPolicy",
    "ServerState",
    "ServerStatus",
    "ServerStatusChanged",
    "SseServerConfig",
    "StdioServerConfig",
    "ToolSetChanged",
    "Transport",
    "assign_tool_names",
    "declaration_hash",
    "enablement_entry",
    "load_configured_servers",
    "register_mcp",
    "status_report",
    "to_tool_result",
    "with_editor_servers",
)

#: The transports `McpServerManager` connects (what `mcpCapabilities` may advertise).
SUPPORTED_TRANSPORTS: frozenset[Transport] = frozenset({"stdio", "http", "sse"})

if TYPE_CHECKING:
    from acp_agent.mcp._connection import McpTool
    from acp_agent.mcp._manager import (
        McpEvent,
        McpListener,
        McpServerManager,
        McpToolSet,
        ReconnectPolicy,
        ServerState,
        ServerStatus,
        ServerStatusChanged,
        ToolSetChanged,
    )
    from acp_agent.mcp._results import to_tool_result

#: Names whose modules import the MCP SDK (about half a second): loaded on first use.
_SDK_NAMES: Final = {
    "McpTool": "_connection",
    "McpEvent": "_manager",
    "McpListener": "_manager",
    "McpServerManager": "_manager",
    "McpToolSet": "_manager",
    "ReconnectPolicy": "_manager",
    "ServerState": "_manager",
    "ServerStatus": "_manager",
    "ServerStatusChanged": "_manager",
    "ToolSetChanged": "_manager",
    "to_tool_result": "_results",
}


__getattr__, __dir__ = _lazy_face(__name__, _SDK_NAMES)
