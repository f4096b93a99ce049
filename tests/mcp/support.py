"""Helpers for the MCP tests: real test servers, a tool context, an event recorder."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs

from acp_agent.mcp import (
    McpEvent,
    McpServerManager,
    ServerState,
    ServerStatusChanged,
    StdioServerConfig,
    ToolSetChanged,
)
from acp_agent.toolkit import NO_CLIENT, ContentPart, ToolContext

__all__ = (
    "SERVERS",
    "EventLog",
    "HttpServer",
    "RecordingProgress",
    "http_server",
    "process_alive",
    "stdio_server",
    "tool_context",
)

SERVERS = Path(__file__).parent / "servers"

#: How long a test waits for something that should happen soon, before failing.
WAIT_S = 20.0


def stdio_server(name: str, script: str = "tools_server.py", **fields: Any) -> StdioServerConfig:
    """A config that runs one of `tests/mcp/servers/` with this interpreter."""
    return StdioServerConfig(
        name=name, command=sys.executable, args=(str(SERVERS / script),), **fields
    )


@attrs.define
class HttpServer:
    """A running `http_server.py`."""

    url: str
    process: subprocess.Popen[str]

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@contextmanager
def http_server(transport: str) -> Iterator[HttpServer]:
    """Run `http_server.py` over `transport` ("http" or "sse") on 127.0.0.1."""
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "http_server.py"), transport],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        path = "mcp" if transport == "http" else "sse"
        yield HttpServer(f"http://127.0.0.1:{port}/{path}", process)
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


@attrs.define
class RecordingProgress:
    """A progress sink that keeps what it was given."""

    updates: list[tuple[ContentPart, ...]] = attrs.field(factory=list)

    async def content(self, parts: Sequence[ContentPart]) -> None:
        self.updates.append(tuple(parts))

    async def terminal_output(self, terminal_id: str, data: str) -> None:
        raise AssertionError("MCP tools have no terminals")


def tool_context(cwd: Path, progress: RecordingProgress | None = None) -> ToolContext:
    return ToolContext(
        session_id="s1",
        branch_id="main",
        call_id="call-1",
        roots=(cwd,),
        client=NO_CLIENT,
        progress=progress or RecordingProgress(),
    )


class EventLog:
    """Every event a manager emits, in order, and a way to wait for one."""

    def __init__(self, manager: McpServerManager) -> None:
        self.events: list[McpEvent] = []
        self._arrived = anyio.Event()
        manager.subscribe(self._record)

    def _record(self, event: McpEvent) -> None:
        self.events.append(event)
        arrived, self._arrived = self._arrived, anyio.Event()
        arrived.set()

    def states(self, server: str) -> list[ServerState]:
        """The states `server` went through, in order."""
        return [
            event.status.state
            for event in self.events
            if isinstance(event, ServerStatusChanged) and event.status.name == server
        ]

    def tool_sets(self) -> list[ToolSetChanged]:
        return [event for event in self.events if isinstance(event, ToolSetChanged)]

    async def wait_for(self, predicate: Callable[[McpEvent], bool]) -> McpEvent:
        """The first event (past or future) matching `predicate`."""
        seen = 0
        with anyio.fail_after(WAIT_S):
            while True:
                arrived = self._arrived
                for event in self.events[seen:]:
                    if predicate(event):
                        return event
                seen = len(self.events)
                await arrived.wait()

    async def wait_for_state(self, server: str, state: ServerState) -> ServerStatusChanged:
        event = await self.wait_for(
            lambda e: (
                isinstance(e, ServerStatusChanged)
                and e.status.name == server
                and e.status.state is state
            )
        )
        assert isinstance(event, ServerStatusChanged)
        return event


def process_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting to be reaped counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
