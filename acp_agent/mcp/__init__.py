"""MCP tool servers, on the far side of the core: configs, trust, tool names and results so far.

The config file formats and the project trust rule are documented in
`acp_agent.mcp._settings`.
"""

from __future__ import annotations

from acp_agent.mcp._config import (
    DEFAULT_STARTUP_TIMEOUT_S,
    HttpServerConfig,
    McpOrigin,
    McpServerConfig,
    SseServerConfig,
    StdioServerConfig,
    Transport,
    declaration_hash,
)
from acp_agent.mcp._names import TOOL_NAME_PATTERN, assign_tool_names
from acp_agent.mcp._results import to_tool_result
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
    "PROJECT_CONFIG_PATH",
    "TOOL_NAME_PATTERN",
    "ConfiguredServers",
    "DisabledServer",
    "HttpServerConfig",
    "McpOrigin",
    "McpServerConfig",
    "SseServerConfig",
    "StdioServerConfig",
    "Transport",
    "assign_tool_names",
    "declaration_hash",
    "enablement_entry",
    "load_configured_servers",
    "to_tool_result",
    "with_editor_servers",
)
