"""The built-in tools: files, search, edits with diffs, commands, the web, the plan.

`builtin_tools()` is what the tool executor offers the model. Each tool
implements `acp_agent.toolkit.Tool`; none knows ACP. Paths are
resolved against the session's roots (`_workspace`), files go through the
editor when it offers `fs/*` (`_textfile`), and commands through its
terminals when it offers `terminal/*` (`shell`). A tool's text goes in a
Markdown code block through the tool kit's `fenced`.

| tool     | kind    | effect    |
| -------- | ------- | --------- |
| `read`   | read    | read_only |
| `list`   | search  | read_only |
| `glob`   | search  | read_only |
| `grep`   | search  | read_only |
| `edit`   | edit    | edit      |
| `write`  | edit    | edit      |
| `delete` | delete  | edit      |
| `move`   | move    | edit      |
| `shell`  | execute | execute   |
| `fetch`  | fetch   | network   |
| `plan`   | think   | read_only |

Every module under this package is private (one per tool: `_read`,
`_search`, `_shell`, ...; helpers: `_workspace`, `_textfile`, ...): this is
its whole public surface. Unlike `acp_agent.models` and `acp_agent.mcp` it
loads eagerly: `builtin_tools()` needs every tool, and the CLI imports this
package only when it assembles the runtime (on the first session request),
never before `initialize`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_agent.toolkit import Tool

from acp_agent.tools._delete import DeleteTool
from acp_agent.tools._edit import EditTool
from acp_agent.tools._fetch import FetchTool
from acp_agent.tools._move import MoveTool
from acp_agent.tools._plan import PlanTool
from acp_agent.tools._read import ReadTool
from acp_agent.tools._search import GlobTool, GrepTool, ListTool
from acp_agent.tools._shell import ShellTool
from acp_agent.tools._walk import walk
from acp_agent.tools._workspace import WorkspacePath, path_need, present_path, resolve_path
from acp_agent.tools._write import WriteTool

__all__ = (
    "DeleteTool",
    "EditTool",
    "FetchTool",
    "GlobTool",
    "GrepTool",
    "ListTool",
    "MoveTool",
    "PlanTool",
    "ReadTool",
    "ShellTool",
    "WorkspacePath",
    "WriteTool",
    "builtin_tools",
    "path_need",
    "present_path",
    "resolve_path",
    "walk",
)


def builtin_tools() -> tuple[Tool, ...]:
    """A fresh set of every built-in tool, in the order the model is told about them."""
    return (
        ReadTool(),
        ListTool(),
        GlobTool(),
        GrepTool(),
        EditTool(),
        WriteTool(),
        DeleteTool(),
        MoveTool(),
        ShellTool(),
        FetchTool(),
        PlanTool(),
    )
