"""A stdio MCP server for the tests, written with the SDK's `MCPServer`.

Tools: `add`, `echo`, `picture` (a PNG), `forecast` (structured content),
`document` (an embedded resource), `crash` (exits mid-call, code 3),
`deep` (structured content nested 150 levels), `dump` (megabytes of log
lines, as text and as structured content, as SDK servers send a string),
`grow_and_wait` (adds the tool `grown`, announces the list change, then
waits for `release`), `count` (reports progress), `pid`, `spawn_child`
(starts a long `sleep` in the server's process group; returns its pid).

With `CRASH_MARKER=<path>` set, `crash` also creates that file, and the
server refuses to start while the file exists (so reconnects keep failing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import anyio
import mcp.types as mcp_types
from mcp.server.mcpserver import Context, Image, MCPServer
from sample_png import PNG

crash_marker = os.environ.get("CRASH_MARKER")
if crash_marker and os.path.exists(crash_marker):
    print("refusing to start: the crash marker is present", file=sys.stderr, flush=True)
    sys.exit(7)

server = MCPServer("test-tools")
_released: list[anyio.Event] = []


def _release_event() -> anyio.Event:
    if not _released:
        _released.append(anyio.Event())
    return _released[0]


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def picture() -> Image:
    """A tiny PNG."""
    return Image(data=PNG, format="png")


@server.tool()
def forecast(city: str) -> dict[str, Any]:
    """Tomorrow's weather, as structured content."""
    return {"city": city, "temperature_c": 21, "sky": "clear"}


@server.tool()
def deep() -> dict[str, Any]:
    """Structured content nested 150 levels deep (deeper than the agent takes)."""
    value: dict[str, Any] = {"leaf": True}
    for _ in range(149):
        value = {"next": value}
    return value


@server.tool()
def dump(megabytes: float) -> str:
    """About `megabytes` MB of log lines (a log or database dump tool)."""
    line = "2026-12-01T10:00:00Z INFO worker[7]: request served in 3 ms, all is well\n"
    return line * max(1, int(megabytes * 1_000_000 / len(line)))


@server.tool()
def document() -> list[mcp_types.EmbeddedResource]:
    """A text file, embedded."""
    return [
        mcp_types.EmbeddedResource(
            resource=mcp_types.TextResourceContents(
                uri="file:///notes/todo.txt", text="buy milk", mime_type="text/plain"
            )
        )
    ]


@server.tool()
def crash() -> str:
    """Exit in the middle of the call."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    if crash_marker:
        open(crash_marker, "w").close()
    os._exit(3)


@server.tool()
async def grow_and_wait(ctx: Context) -> str:
    """Add the tool `grown`, announce the change, then wait for `release`."""

    def grown() -> str:
        """Appeared while grow_and_wait was running."""
        return "grown"

    server.add_tool(grown)
    await ctx.notify_tools_changed()  # 2026-era clients: the subscription
    try:
        await ctx.request_context.session.send_tool_list_changed()  # earlier clients
    except Exception as exc:
        print(f"no legacy list_changed: {exc!r}", file=sys.stderr, flush=True)
    await _release_event().wait()
    return "finished on its original binding"


@server.tool()
def release() -> str:
    """Let grow_and_wait finish."""
    _release_event().set()
    return "released"


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress once per step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return "counted"


@server.tool()
def pid() -> int:
    """The server's own process id."""
    return os.getpid()


@server.tool()
def spawn_child() -> int:
    """Start `sleep 300` as a child (same process group); returns its pid."""
    return subprocess.Popen(["sleep", "300"]).pid


if __name__ == "__main__":
    server.run()
