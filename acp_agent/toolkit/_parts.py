"""The content parts a tool call shows: text, diffs, terminals, images, the plan; and places.

What a `ToolResult` (and a call's progress) holds for the editor, in terms no
protocol owns: the ACP adapter turns each into a tool call content block (a
plan into a `plan` update), and the executor records them
(`acp_agent.capabilities.execution` keeps their recorded JSON form).
"""

from __future__ import annotations

import enum
from typing import TypeAlias

import attrs

from acp_agent.records import Record

__all__ = (
    "ContentPart",
    "DiffContent",
    "ImageContent",
    "Location",
    "PlanContent",
    "PlanEntry",
    "PlanPriority",
    "PlanStatus",
    "TerminalContent",
    "TextContent",
)


@attrs.frozen
class Location(Record):
    """A place a call touches, so the editor can follow along (absolute path, 1-based line)."""

    path: str
    line: int | None = None


@attrs.frozen
class TextContent(Record):
    """Text for the person and the model (Markdown in editors)."""

    text: str


@attrs.frozen
class DiffContent(Record):
    """A change to one file: whole old and new texts; `old_text` None for a new file."""

    path: str
    old_text: str | None
    new_text: str


@attrs.frozen
class TerminalContent(Record):
    """A live terminal shown inside the call.

    Usually one the client created (`terminal/create`). With `local_cwd` set it
    is a command the agent runs itself, shown through Zed's `_meta` extension
    (only offered when `ClientBridge.streams_terminal_output`): the adapter
    announces it as `_meta.terminal_info {terminal_id, cwd}`, streams what
    `ProgressSink.terminal_output` appends as `_meta.terminal_output`, and ends
    it with `_meta.terminal_exit {terminal_id, exit_code, signal}` taken from the
    result's `raw_output` keys `exit_code` and `signal`.
    """

    terminal_id: str
    #: Set for a locally run command: its working directory (absolute).
    local_cwd: str | None = None


@attrs.frozen
class ImageContent(Record):
    """An image (base64 data)."""

    data: str
    mime_type: str


class PlanPriority(enum.StrEnum):
    """How much a plan entry matters (ACP `PlanEntryPriority`)."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class PlanStatus(enum.StrEnum):
    """Where a plan entry stands (ACP `PlanEntryStatus`)."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


@attrs.frozen
class PlanEntry(Record):
    """One task of the agent's plan."""

    content: str
    priority: PlanPriority
    status: PlanStatus


@attrs.frozen
class PlanContent(Record):
    """The agent's complete plan, every entry, as the `plan` tool last set it.

    Not tool-call content: the adapter sends it as an ACP `plan` update, which
    replaces the whole plan the editor shows (so it is always the complete list),
    and leaves it out of the call's `content`.
    """

    entries: tuple[PlanEntry, ...]


ContentPart: TypeAlias = TextContent | DiffContent | TerminalContent | ImageContent | PlanContent
