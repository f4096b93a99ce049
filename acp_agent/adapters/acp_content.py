"""Content parts as ACP's content, and back: the edge both ACP front ends share.

The agent's side (`acp_agent.adapters.acp`) takes a prompt's content blocks
as parts (`part_of`) and shows the parts its events hold as ACP content
blocks, tool call content, plans and locations; the headless front end reads
what an agent sent back into parts, for its transcript. A block's
annotations and `_meta` survive the round trip, so a replay shows what was
sent; what ACP has and the parts lack (a tool call content's own `_meta`) is
not kept.

A public sub-API of the adapters: a module, not a package's private one,
because two front ends (`acp`, `headless`) import it and neither owns it.

    part_of(types.TextContent(text="Hi"))          # TextContent("Hi")
    acp_tool_content(DiffContent(path, old, new))  # types.Diff(path=..., ...)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, TypeVar, cast

from acp_agent.content import (
    Annotations,
    ContentPart,
    DiffContent,
    ImageContent,
    Location,
    PlanContent,
    PlanEntry,
    PlanPriority,
    PlanStatus,
    ResourceContent,
    ResourceLinkContent,
    TerminalContent,
    TextContent,
)
from protocol import types
from protocol.converter import shared_converter

__all__ = (
    "acp_block",
    "acp_locations",
    "acp_plan",
    "acp_tool_content",
    "part_from_json",
    "part_of",
    "part_of_tool_content",
    "plan_from_json",
    "plan_part_of",
    "tool_part_from_json",
)

_Wire = TypeVar("_Wire")
_PRIORITIES: Final = {priority.value: priority for priority in types.PlanEntryPriority}
_STATUSES: Final = {status.value: status for status in types.PlanEntryStatus}


def part_of(block: types.ContentBlock) -> ContentPart:
    """An ACP content block as a part; `TypeError` for audio, which no part holds."""
    annotations = _annotations(block.annotations)
    if isinstance(block, types.TextContent):
        return TextContent(block.text, annotations, block.meta)
    if isinstance(block, types.ImageContent):
        return ImageContent(block.data, block.mime_type, block.uri, annotations, block.meta)
    if isinstance(block, types.ResourceLink):
        return ResourceLinkContent(
            uri=block.uri,
            name=block.name,
            title=block.title,
            description=block.description,
            mime_type=block.mime_type,
            size=block.size,
            annotations=annotations,
            meta=block.meta,
        )
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        return ResourceContent(
            uri=resource.uri,
            text=resource.text if isinstance(resource, types.TextResourceContents) else None,
            blob=resource.blob if isinstance(resource, types.BlobResourceContents) else None,
            mime_type=resource.mime_type,
            resource_meta=resource.meta,
            annotations=annotations,
            meta=block.meta,
        )
    raise TypeError(f"no content part holds {getattr(block, 'type', type(block).__name__)}")


def part_of_tool_content(content: types.ToolCallContent) -> ContentPart:
    """Tool call content as a part (a terminal's, as the client's: ACP says no more)."""
    if isinstance(content, types.Diff):
        return DiffContent(content.path, content.old_text, content.new_text)
    if isinstance(content, types.Terminal):
        return TerminalContent(content.terminal_id)
    return part_of(content.content)


def plan_part_of(entries: Iterable[types.PlanEntry]) -> PlanContent:
    """A `plan` update's entries as the plan part."""
    return PlanContent(
        tuple(
            PlanEntry(
                entry.content, PlanPriority(entry.priority.value), PlanStatus(entry.status.value)
            )
            for entry in entries
        )
    )


def part_from_json(data: Any) -> ContentPart | None:
    """A content block as an agent wrote it (JSON) as a part; None when it does not fit
    ACP's schema, or no part holds it (audio)."""
    block = _wire(data, cast(Any, types.ContentBlock))
    try:
        return None if block is None else part_of(block)
    except TypeError:
        return None


def tool_part_from_json(data: Any) -> ContentPart | None:
    """Tool call content as an agent wrote it (JSON) as a part; None as for `part_from_json`."""
    content = _wire(data, cast(Any, types.ToolCallContent))
    try:
        return None if content is None else part_of_tool_content(content)
    except TypeError:
        return None


def plan_from_json(entries: Iterable[Any]) -> PlanContent:
    """A `plan` update's entries as an agent wrote them (JSON); one that does not fit ACP's
    schema is left out."""
    read = (_wire(entry, types.PlanEntry) for entry in entries)
    return plan_part_of(entry for entry in read if entry is not None)


def _wire(data: Any, wire_type: type[_Wire]) -> _Wire | None:
    try:
        read: _Wire = shared_converter().structure(data, wire_type)
    except Exception:
        return None
    return read


def _annotations(annotations: types.Annotations | None) -> Annotations | None:
    if annotations is None:
        return None
    return Annotations(
        audience=(
            None
            if annotations.audience is None
            else tuple(role.value for role in annotations.audience)
        ),
        priority=annotations.priority,
        last_modified=annotations.last_modified,
        meta=annotations.meta,
    )


def acp_tool_content(part: ContentPart) -> types.ToolCallContent:
    """A part as tool call content (a plan is not: it is a `plan` update, `acp_plan`)."""
    if isinstance(part, DiffContent):
        return types.Diff(path=part.path, old_text=part.old_text, new_text=part.new_text)
    if isinstance(part, TerminalContent):
        return types.Terminal(terminal_id=part.terminal_id)
    if isinstance(part, PlanContent):
        raise TypeError("a plan is a `plan` update, not tool call content")
    return types.Content(content=acp_block(part))


def acp_block(
    part: TextContent | ImageContent | ResourceContent | ResourceLinkContent,
) -> types.ContentBlock:
    """A part as an ACP content block, with the annotations and `_meta` it came with."""
    annotations = _acp_annotations(part.annotations)
    if isinstance(part, TextContent):
        return types.TextContent(text=part.text, annotations=annotations, meta=part.meta)
    if isinstance(part, ImageContent):
        return types.ImageContent(
            data=part.data,
            mime_type=part.mime_type,
            uri=part.uri,
            annotations=annotations,
            meta=part.meta,
        )
    if isinstance(part, ResourceLinkContent):
        return types.ResourceLink(
            uri=part.uri,
            name=part.name,
            title=part.title,
            description=part.description,
            mime_type=part.mime_type,
            size=part.size,
            annotations=annotations,
            meta=part.meta,
        )
    resource: types.EmbeddedResourceResource
    if part.text is not None:
        resource = types.TextResourceContents(
            uri=part.uri, text=part.text, mime_type=part.mime_type, meta=part.resource_meta
        )
    else:
        resource = types.BlobResourceContents(
            uri=part.uri, blob=part.blob or "", mime_type=part.mime_type, meta=part.resource_meta
        )
    return types.EmbeddedResource(resource=resource, annotations=annotations, meta=part.meta)


def _acp_annotations(annotations: Annotations | None) -> types.Annotations | None:
    if annotations is None:
        return None
    return types.Annotations(
        audience=(
            None
            if annotations.audience is None
            else [types.Role(role) for role in annotations.audience]
        ),
        priority=annotations.priority,
        last_modified=annotations.last_modified,
        meta=annotations.meta,
    )


def acp_plan(plan: PlanContent) -> types.Plan:
    """The plan as the `plan` update that replaces the one the editor shows."""
    return types.Plan(
        entries=[
            types.PlanEntry(
                content=entry.content,
                priority=_PRIORITIES[entry.priority.value],
                status=_STATUSES[entry.status.value],
            )
            for entry in plan.entries
        ]
    )


def acp_locations(locations: Iterable[Location]) -> list[types.ToolCallLocation]:
    """The places as ACP locations (one whose line is not 1-based is left out)."""
    return [
        types.ToolCallLocation(path=location.path, line=location.line)
        for location in locations
        if location.line is None or location.line >= 1
    ]
