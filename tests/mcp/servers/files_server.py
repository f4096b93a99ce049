"""A stdio MCP server for the sandbox tests: it writes and reads files and reports its
environment, so a test sees what a server started in the sandbox may do.

Tools: `write` (a text to a path; returns "written" or the error), `read` (a path's text, or
the error), `env` (the value of a variable, or "unset").
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("test-files")


@server.tool()
def write(path: str, text: str) -> str:
    """Write `text` to `path`."""
    try:
        Path(path).write_text(text)
    except OSError as exc:
        return f"error: {exc}"
    return "written"


@server.tool()
def read(path: str) -> str:
    """The text at `path`."""
    try:
        return Path(path).read_text()
    except OSError as exc:
        return f"error: {exc}"


@server.tool()
def env(name: str) -> str:
    """The value of environment variable `name`."""
    return os.environ.get(name, "unset")


if __name__ == "__main__":
    server.run()
