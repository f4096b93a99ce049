"""Content parts: what a person's message and a tool call hold, in terms no protocol owns.

One set for every side. The person's input (`UserInputAdopted` in the core) is
text, images, resources and links to them; what a tool shows (`ToolResult`,
its progress) is text, diffs, terminals, images and the plan; a `Location` is a
place a call touches. The core's events hold these values and its codec stores
them (tagged by `KIND`, in the events' snake_case); the ACP adapter converts
them to and from ACP's content blocks at its edge, and the tool kit offers them
to tools.

`annotations` and `meta` keep what a client attached to a block it sent (who
it is for, how much it matters; its `_meta` extension data, passed through
unread), so a replay shows the block exactly as it was sent. `valid_part` is
the one Unicode policy (`acp_agent.lone_surrogates`) applied to a part that
came from outside.

A leaf: it imports only `acp_agent.values` and `acp_agent.lone_surrogates`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, ClassVar, TypeAlias, TypeVar

import attrs

from acp_agent.lone_surrogates import replace_in_json, replace_lone_surrogates
from acp_agent.values import Value

__all__ = (
    "DEFAULT_PLAN_ID",
    "Annotations",
    "ContentPart",
    "DiffContent",
    "Extension",
    "ImageContent",
    "Location",
    "PlanContent",
    "PlanEntry",
    "PlanKind",
    "PlanPriority",
    "PlanStatus",
    "ResourceContent",
    "ResourceLinkContent",
    "TerminalContent",
    "TextContent",
    "as_sent",
    "valid_part",
)

#: Extension data a client attached (ACP's and MCP's `_meta`): JSON, never read here.
Extension: TypeAlias = dict[str, Any]


@attrs.frozen
class Location(Value):
    """A place a call touches, so the editor can follow along (absolute path, 1-based line)."""

    path: str
    line: int | None = None


@attrs.frozen
class Annotations(Value):
    """What a client said about a block: who it is for (`user`, `assistant`), how much it
    matters (0 to 1), when it last changed (ISO 8601)."""

    audience: tuple[str, ...] | None = None
    priority: float | None = None
    last_modified: str | None = None
    meta: Extension | None = None


@attrs.frozen
class TextContent(Value):
    """Text for the person and the model (Markdown in editors)."""

    KIND: ClassVar[str] = "text"
    text: str
    annotations: Annotations | None = None
    meta: Extension | None = None


@attrs.frozen
class ImageContent(Value):
    """An image (base64 data), and where it came from when the client said."""

    KIND: ClassVar[str] = "image"
    data: str
    mime_type: str
    uri: str | None = None
    annotations: Annotations | None = None
    meta: Extension | None = None


@attrs.frozen
class ResourceContent(Value):
    """A document carried whole: its text, or its bytes (base64 `blob`) when not text."""

    KIND: ClassVar[str] = "resource"
    uri: str
    text: str | None = None
    blob: str | None = None
    mime_type: str | None = None
    #: Extension data of the document itself (`meta` is the block's).
    resource_meta: Extension | None = None
    annotations: Annotations | None = None
    meta: Extension | None = None


@attrs.frozen
class ResourceLinkContent(Value):
    """A link to a document, by URI, with what the client said of it."""

    KIND: ClassVar[str] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    meta: Extension | None = None


@attrs.frozen
class DiffContent(Value):
    """A change to one file: whole old and new texts; `old_text` None for a new file."""

    KIND: ClassVar[str] = "diff"
    path: str
    old_text: str | None
    new_text: str


@attrs.frozen
class TerminalContent(Value):
    """A live terminal shown inside the call.

    Usually one the client created (`terminal/create`). With `local_cwd` set it
    is a command the agent runs itself, shown through Zed's `_meta` extension
    (only offered when `ClientBridge.streams_terminal_output`): the adapter
    announces it as `_meta.terminal_info {terminal_id, cwd}`, streams what
    `ProgressSink.terminal_output` appends as `_meta.terminal_output`, and ends
    it with `_meta.terminal_exit {terminal_id, exit_code, signal}` taken from the
    result's `raw_output` keys `exit_code` and `signal`.
    """

    KIND: ClassVar[str] = "terminal"
    terminal_id: str
    #: Set for a locally run command: its working directory (absolute).
    local_cwd: str | None = None


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
class PlanEntry(Value):
    """One task of the agent's plan."""

    content: str
    priority: PlanPriority
    status: PlanStatus


class PlanKind(enum.StrEnum):
    """What a plan is (ACP's plan operations), or that it was removed."""

    #: A checklist: its entries.
    ITEMS = "items"
    #: A document: Markdown text.
    MARKDOWN = "markdown"
    #: A file of the workspace holds it.
    FILE = "file"
    #: The plan of that id is gone.
    REMOVED = "removed"


#: The id of the plan a call names none for.
DEFAULT_PLAN_ID = "plan"


@attrs.frozen
class PlanContent(Value):
    """One of the agent's plans, whole, as the `plan` tool last set it (or its removal).

    Not tool-call content: the adapter sends it as a plan update, which replaces
    the plan of that id the editor shows (so it is always complete), and leaves
    it out of the call's `content`. `entries` is the checklist of an `ITEMS`
    plan, and the task list a document or file holds (`- [ ]`, `- [x]` lines),
    for an editor that shows plans only as checklists. A plan stored before
    plans had ids reads as the default checklist.
    """

    KIND: ClassVar[str] = "plan"
    entries: tuple[PlanEntry, ...]
    plan_id: str = DEFAULT_PLAN_ID
    kind: PlanKind = PlanKind.ITEMS
    #: A `MARKDOWN` plan's text.
    markdown: str | None = None
    #: A `FILE` plan's file, as a `file://` URI.
    uri: str | None = None


ContentPart: TypeAlias = (
    TextContent
    | ImageContent
    | ResourceContent
    | ResourceLinkContent
    | DiffContent
    | TerminalContent
    | PlanContent
)


def as_sent(
    content: Sequence[ContentPart], sent: Sequence[ContentPart | None]
) -> tuple[ContentPart, ...]:
    """A message's parts as the person sent them: where the agent changed a part (a
    link read into its file, a template expanded), `sent` holds the original at that
    position; elsewhere (None, or past its end) the part is as sent."""
    shown = []
    for index, part in enumerate(content):
        original = sent[index] if index < len(sent) else None
        shown.append(part if original is None else original)
    return tuple(shown)


_Part = TypeVar("_Part")


def valid_part(part: _Part) -> _Part:
    """`part` (a content part, or a piece of one) with each lone surrogate in its text,
    names and extension data replaced by U+FFFD; the same object when there is none."""
    repaired: _Part = _valid(part)
    return repaired


def _valid(value: Any) -> Any:
    if type(value) is str:
        return replace_lone_surrogates(value)
    if isinstance(value, dict):
        return replace_in_json(value)
    if isinstance(value, tuple):
        items = tuple(_valid(item) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    cls: Any = type(value)
    if isinstance(value, Value) and attrs.has(cls):
        changed = {}
        for field in attrs.fields(cls):
            old = getattr(value, field.name)
            new = _valid(old)
            if new is not old:
                changed[field.name] = new
        return attrs.evolve(value, **changed) if changed else value  # type: ignore[misc]
    return value  # numbers, enums, None
