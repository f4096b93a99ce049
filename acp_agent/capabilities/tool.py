"""What a tool is to the runtime: a definition, a presentation, a permission need, a run.

Built-in tools (`acp_agent.tools`) and MCP tools (`acp_agent.mcp`) both
implement `Tool`; the tool executor binds them to model requests, asks
permission for what they need, runs them with a `ToolContext` and records
their `ToolResult`. Nothing here knows ACP: the adapter turns presentations,
progress and results into `tool_call` / `tool_call_update` notifications.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeAlias, runtime_checkable

import attrs

from acp_agent.capabilities.client_bridge import ClientBridge

__all__ = (
    "ContentPart",
    "DiffContent",
    "Effect",
    "ImageContent",
    "Location",
    "PermissionNeed",
    "ProgressSink",
    "TerminalContent",
    "TextContent",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolInputError",
    "ToolKind",
    "ToolPresentation",
    "ToolResult",
)


class ToolKind(enum.StrEnum):
    """How an editor should show a call (icons, grouping); mirrors ACP's tool kinds."""

    READ = "read"
    EDIT = "edit"
    DELETE = "delete"
    MOVE = "move"
    SEARCH = "search"
    EXECUTE = "execute"
    THINK = "think"
    FETCH = "fetch"
    SWITCH_MODE = "switch_mode"
    OTHER = "other"


class Effect(enum.StrEnum):
    """What running a call would do to the world; permission modes decide by it."""

    #: Reads inside the workspace; changes nothing (read, list, grep, plan).
    READ_ONLY = "read_only"
    #: Changes files (edit, write, delete, move).
    EDIT = "edit"
    #: Runs a command.
    EXECUTE = "execute"
    #: Talks to the network (fetch).
    NETWORK = "network"
    #: Anything else with side effects (an MCP tool we know nothing about).
    OTHER = "other"


@attrs.frozen
class ToolDefinition:
    """What the model is told about a tool."""

    #: The name the model calls it by (provider name rules: `[A-Za-z0-9_-]{1,64}`).
    name: str
    description: str
    #: JSON Schema of the arguments object.
    input_schema: Mapping[str, Any]
    kind: ToolKind = ToolKind.OTHER


@attrs.frozen
class Location:
    """A place a call touches, so the editor can follow along (absolute path, 1-based line)."""

    path: str
    line: int | None = None


@attrs.frozen
class ToolPresentation:
    """How a call is shown before it runs: in the pending tool call and the permission prompt."""

    #: Names the target, e.g. "Edit src/app.py" or "Run `pytest -q`".
    title: str
    kind: ToolKind
    locations: tuple[Location, ...] = ()


@attrs.frozen
class PermissionNeed:
    """What a call needs permission for, decided from its arguments before it runs.

    `target` is shown in full to the person (the whole command, the path) and is
    what "always allow" rules match: a command prefix, a path glob.
    """

    effect: Effect
    target: str
    #: Paths outside the session's roots: always asked, whatever the mode.
    outside_workspace: tuple[str, ...] = ()
    #: Shown next to the question, e.g. why a path is outside the workspace.
    note: str | None = None


@attrs.frozen
class TextContent:
    """Text for the person and the model (Markdown in editors)."""

    text: str


@attrs.frozen
class DiffContent:
    """A change to one file: whole old and new texts; `old_text` None for a new file."""

    path: str
    old_text: str | None
    new_text: str


@attrs.frozen
class TerminalContent:
    """A live terminal the client created (`terminal/create`), shown inside the call."""

    terminal_id: str


@attrs.frozen
class ImageContent:
    """An image (base64 data)."""

    data: str
    mime_type: str


ContentPart: TypeAlias = TextContent | DiffContent | TerminalContent | ImageContent


@attrs.frozen
class ToolResult:
    """What a call produced: content for the editor, text for the model, raw output."""

    #: Shown in the editor (replaces the call's content collection).
    content: tuple[ContentPart, ...]
    #: What the model reads as the result of the call.
    model_text: str
    is_error: bool = False
    #: The tool's structured output (ACP `rawOutput`), JSON-serialisable.
    raw_output: Any = None
    #: Places the call touched, if they differ from its presentation's.
    locations: tuple[Location, ...] | None = None


class ToolInputError(ValueError):
    """The model's arguments do not fit the tool; becomes an error result the model sees."""


class ProgressSink(Protocol):
    """Where a running call reports progress (streamed as `tool_call_update`)."""

    async def content(self, parts: Sequence[ContentPart]) -> None:
        """Replace the call's visible content (e.g. the output so far)."""

    async def terminal_output(self, terminal_id: str, data: str) -> None:
        """Append output of a locally run command (Zed's `terminal_output` extension)."""


@attrs.frozen
class ToolContext:
    """What a running call may use: its session's roots, the editor, progress."""

    session_id: str
    branch_id: str
    call_id: str
    #: The session's root and any additional directories, absolute and resolved.
    roots: tuple[Path, ...]
    client: ClientBridge
    progress: ProgressSink

    @property
    def cwd(self) -> Path:
        """The session's working directory (the first root)."""
        return self.roots[0]


@runtime_checkable
class Tool(Protocol):
    """A callable capability offered to the model."""

    @property
    def definition(self) -> ToolDefinition: ...

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        """How the call looks before it runs; must not fail on bad arguments."""
        ...

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        """What the call needs permission for; raises `ToolInputError` for bad arguments."""
        ...

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Do the work. Raise `ToolInputError` for bad arguments; other errors become
        error results too, but are logged as tool failures."""
        ...
