"""Building a `ToolContext` for a test: the workspace, a client, a branch's read stamps."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from acp_agent.toolkit import (
    NO_CLIENT,
    ClientBridge,
    CommandSandbox,
    FileChanges,
    MemoryReadStamps,
    Tool,
    ToolContext,
    ToolResult,
)
from acp_agent.toolkit._tool import ReadStamps
from tests.tools.editor import EditorBridge, RecordingProgress

__all__ = ("CLIENTS", "Session", "open_client")

#: The two editor configurations every file and shell behaviour is checked under.
CLIENTS = ("editor", "no-client")


@contextlib.asynccontextmanager
async def open_client(kind: str) -> AsyncIterator[ClientBridge]:
    """An editor offering fs and terminals ("editor") or a client offering nothing."""
    if kind == "no-client":
        yield NO_CLIENT
        return
    async with EditorBridge() as editor:
        yield editor


class Session:
    """One branch of a session in `roots`: runs tools with its own read stamps."""

    def __init__(
        self,
        roots: Sequence[Path],
        client: ClientBridge = NO_CLIENT,
        *,
        stamps: ReadStamps | None = None,
        branch_id: str = "main",
        sandbox: CommandSandbox | None = None,
        changes: FileChanges | None = None,
    ):
        self.roots = tuple(roots)
        #: What the calls' commands run in (as the sandboxed mode gives it), and where
        #: their file changes are told.
        self.sandbox = sandbox
        self.changes = changes
        self.client = client
        self.stamps = stamps if stamps is not None else MemoryReadStamps()
        self.branch_id = branch_id
        self.progress = RecordingProgress()
        self._calls = 0

    def context(self) -> ToolContext:
        self._calls += 1
        return ToolContext(
            session_id="sess_test",
            branch_id=self.branch_id,
            call_id=f"call_{self._calls}",
            roots=self.roots,
            client=self.client,
            progress=self.progress,
            read_stamps=self.stamps,
            sandbox=self.sandbox,
            changes=self.changes,
        )

    async def run(self, tool: Tool, arguments: Mapping[str, Any]) -> ToolResult:
        """Check the permission need, run the call, then its cleanup after the result
        (as the executor does once the result is recorded)."""
        tool.permission(arguments, self.roots)
        result = await tool.run(arguments, self.context())
        if result.after_recorded is not None:
            await result.after_recorded()
        return result
