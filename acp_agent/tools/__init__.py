"""The built-in tools: files, search, edits with diffs, commands, the web, the plan.

`builtin_tools()` is what the tool executor offers the model. Each tool
implements `acp_agent.capabilities.tool.Tool`; none knows ACP. Paths are
resolved against the session's roots (`_workspace`), files go through the
editor when it offers `fs/*` (`_textfile`), and commands through its
terminals when it offers `terminal/*` (`shell`).
"""

from __future__ import annotations

from acp_agent.capabilities.tool import Tool
from acp_agent.tools.read import ReadTool
from acp_agent.tools.shell import ShellTool
from acp_agent.tools.write import WriteTool

__all__ = ("ReadTool", "ShellTool", "WriteTool", "builtin_tools")


def builtin_tools() -> tuple[Tool, ...]:
    """A fresh set of every built-in tool, in the order the model is told about them."""
    return (ReadTool(), WriteTool(), ShellTool())
