"""MCP tool servers, on the far side of the core: configs and tool names so far."""

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

__all__ = (
    "DEFAULT_STARTUP_TIMEOUT_S",
    "TOOL_NAME_PATTERN",
    "HttpServerConfig",
    "McpOrigin",
    "McpServerConfig",
    "SseServerConfig",
    "StdioServerConfig",
    "Transport",
    "assign_tool_names",
    "declaration_hash",
)
