"""What a tool is to the runtime: a definition, a presentation, a permission need, a run.

Built-in tools (`acp_agent.tools`) and MCP tools (`acp_agent.mcp`) both
implement `Tool`; the tool executor binds them to model requests, asks
permission for what they need, runs them with a `ToolContext` and records
their `ToolResult`. Nothing here knows ACP: the adapter turns presentations,
progress and results into `tool_call` / `tool_call_update` notifications.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs

from acp_agent.content import ContentPart, Location
from acp_agent.toolkit._client_bridge import ClientBridge
from acp_agent.toolkit._command_sandbox import CommandSandbox
from acp_agent.toolkit._file_changes import FileChanges
from acp_agent.toolkit._job_host import JobHost
from acp_agent.values import Value

__all__ = (
    "Effect",
    "MemoryReadStamps",
    "PermissionNeed",
    "PreviewingTool",
    "ProgressSink",
    "ReadStamps",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolInputError",
    "ToolKind",
    "ToolPresentation",
    "ToolPreview",
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
class ToolDefinition(Value):
    """What the model is told about a tool."""

    #: The name the model calls it by (provider name rules: `[A-Za-z0-9_-]{1,64}`).
    name: str
    description: str
    #: JSON Schema of the arguments object.
    input_schema: Mapping[str, Any]
    kind: ToolKind = ToolKind.OTHER


@attrs.frozen
class ToolPresentation(Value):
    """How a call is shown before it runs: in the pending tool call and the permission prompt."""

    #: Names the target, e.g. "Edit src/app.py" or "Run `pytest -q`".
    title: str
    kind: ToolKind
    locations: tuple[Location, ...] = ()


@attrs.frozen
class PermissionNeed(Value):
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
    #: A command that can run in the command sandbox (it did not ask to leave it): the
    #: sandboxed mode runs it there without asking.
    sandboxable: bool = False
    #: The files a change touches when `target` names more than one (a move: its source
    #: and destination): an "always" rule covers the call only if it covers each.
    paths: tuple[str, ...] = ()


@attrs.frozen
class ToolResult(Value):
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
    #: Run once the result is recorded (whatever happens), e.g. to release a client
    #: terminal the result still shows: never released before the last update showing it.
    after_recorded: Callable[[], Awaitable[None]] | None = attrs.field(
        default=None, eq=False, repr=False
    )


class ToolInputError(ValueError):
    """The model's arguments do not fit the tool; becomes an error result the model sees."""


class ProgressSink(Protocol):
    """Where a running call reports progress (streamed as `tool_call_update`)."""

    async def content(self, parts: Sequence[ContentPart]) -> None:
        """Replace the call's visible content (e.g. the output so far)."""

    async def terminal_output(self, terminal_id: str, data: str) -> None:
        """Append output of a locally run command (Zed's `terminal_output` extension)."""

    async def flush(self) -> None:
        """Record what was reported so far now, instead of with the next batch."""


class ReadStamps(Protocol):
    """What one branch has read: a stamp per file, so edits can refuse a stale view.

    Branches share the workspace but not their reads. A file tool records the
    stamp of what it read (or wrote) and, before changing the file, compares
    the file's current stamp with this branch's: a difference is
    `file_modified_since_read` (someone else changed it; read it again first).
    Keys are absolute, resolved paths; a stamp is opaque (a content digest).
    The tool executor passes each branch's own registry in every `ToolContext`.
    """

    def record(self, path: str, stamp: str) -> None:
        """This branch has now seen `path` as `stamp`."""
        ...

    def get(self, path: str) -> str | None:
        """The stamp this branch last saw for `path`, or None if it never read it."""
        ...

    def forget(self, path: str) -> None:
        """`path` is gone (deleted or moved away); a later file there is new to this branch."""
        ...


@attrs.define
class MemoryReadStamps:
    """A branch's read stamps, kept in memory (they do not survive a restart)."""

    _stamps: dict[str, str] = attrs.field(factory=dict)

    def record(self, path: str, stamp: str) -> None:
        self._stamps[path] = stamp

    def get(self, path: str) -> str | None:
        return self._stamps.get(path)

    def forget(self, path: str) -> None:
        self._stamps.pop(path, None)


@attrs.frozen
class ToolContext(Value):
    """What a running call may use: its roots, the editor, progress, its reads, its jobs,
    and where it says what it is about to change."""

    session_id: str
    branch_id: str
    call_id: str
    #: The session's root and any additional directories, absolute and resolved.
    roots: tuple[Path, ...]
    client: ClientBridge
    progress: ProgressSink
    #: The branch's read stamps. Pass the branch's own registry: the default, a
    #: fresh one per context, forgets every read, so edits of existing files
    #: would always be refused as unread.
    read_stamps: ReadStamps = attrs.field(factory=MemoryReadStamps)
    #: Where background work is handed over (None: this context cannot run jobs).
    jobs: JobHost | None = None
    #: Told before each file change, for checkpoints (None: changes are not kept).
    changes: FileChanges | None = None
    #: Where the call's commands run confined (None: they run as they are); set by the
    #: permission mode, never by the call.
    sandbox: CommandSandbox | None = None

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


@attrs.frozen
class ToolPreview(Value):
    """What a call will do, worked out before the person is asked: a dry run.

    Its `content` (a diff of exactly what would be written) goes into the
    permission question, so the person sees the change they approve.
    """

    content: tuple[ContentPart, ...]


@runtime_checkable
class PreviewingTool(Protocol):
    """A tool that can show what a call would do before it runs (edit, write, ...)."""

    async def preview(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolPreview | ToolResult:
        """The change the call would make, read now; a `ToolResult` (an error) when it
        cannot be made: the call then fails without asking anyone. Changes nothing."""
        ...
