"""Tool-call content as it is recorded: plain JSON objects, read back without the tool.

`ToolResultRecorded.content` and `ToolCallProgressed.content` hold these, so
a replay (`session/load`) shows a call exactly, with no tool loaded:

    {"type": "text", "text": ...}
    {"type": "diff", "path": abs, "old_text": str | None, "new_text": str}
    {"type": "terminal", "terminal_id": ..., "local_cwd": abs | None}
    {"type": "image", "data": base64, "mime_type": ...}
    {"type": "plan", "entries": [{"content", "priority", "status"}, ...]}

Locations are `{"path": abs, "line": int | None}`.

Tool and MCP output is outside text: `with_valid_text` replaces every lone
surrogate in a result with U+FFFD before it is kept (`acp_agent.lone_surrogates`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from acp_agent.lone_surrogates import replace_in_json, replace_lone_surrogates
from acp_agent.toolkit import (
    ContentPart,
    DiffContent,
    ImageContent,
    Location,
    PlanContent,
    TerminalContent,
    TextContent,
    ToolResult,
)
from jsonbounds import TOO_DEEP, nesting_exceeds

__all__ = (
    "decode_locations",
    "encode_locations",
    "encode_parts",
    "json_safe",
    "text_part",
    "valid_parts",
    "with_valid_text",
)

logger = logging.getLogger(__name__)


def text_part(text: str) -> dict[str, Any]:
    """A stored text part."""
    return {"type": "text", "text": text}


def encode_parts(parts: Iterable[ContentPart]) -> list[dict[str, Any]]:
    """Content parts in their stored form."""
    encoded: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextContent):
            encoded.append(text_part(part.text))
        elif isinstance(part, DiffContent):
            encoded.append(
                {
                    "type": "diff",
                    "path": part.path,
                    "old_text": part.old_text,
                    "new_text": part.new_text,
                }
            )
        elif isinstance(part, TerminalContent):
            encoded.append(
                {"type": "terminal", "terminal_id": part.terminal_id, "local_cwd": part.local_cwd}
            )
        elif isinstance(part, ImageContent):
            encoded.append({"type": "image", "data": part.data, "mime_type": part.mime_type})
        elif isinstance(part, PlanContent):
            encoded.append(
                {
                    "type": "plan",
                    "entries": [
                        {
                            "content": entry.content,
                            "priority": entry.priority.value,
                            "status": entry.status.value,
                        }
                        for entry in part.entries
                    ],
                }
            )
    return encoded


def encode_locations(locations: Iterable[Location]) -> list[dict[str, Any]]:
    """Locations in their stored form."""
    return [{"path": location.path, "line": location.line} for location in locations]


def decode_locations(stored: Sequence[Mapping[str, Any]] | None) -> tuple[Location, ...]:
    """Stored locations back as `Location`s (malformed ones are skipped)."""
    locations = []
    for item in stored or ():
        path, line = item.get("path"), item.get("line")
        if isinstance(path, str) and (line is None or isinstance(line, int)):
            locations.append(Location(path, line))
    return tuple(locations)


def json_safe(value: Any) -> Any:
    """`value` if JSON can hold it, else a short note (a tool's raw output must not break a
    batch, nor, nested too deep, every later update and replay that shows it)."""
    if nesting_exceeds(value):
        logger.warning("a tool's raw output is %s; recording a note instead", TOO_DEEP)
        return f"(the raw output is {TOO_DEEP}; not kept)"
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        logger.warning("a tool's raw output is not JSON; recording its repr")
        return repr(value)[:10_000]
    return value


def with_valid_text(result: ToolResult) -> ToolResult:
    """`result` with each lone surrogate in its text replaced by U+FFFD (itself if none)."""
    content = valid_parts(result.content)
    model_text = replace_lone_surrogates(result.model_text)
    raw_output = replace_in_json(result.raw_output)
    if (
        content is result.content
        and model_text is result.model_text
        and raw_output is result.raw_output
    ):
        return result
    return attrs.evolve(result, content=content, model_text=model_text, raw_output=raw_output)


def valid_parts(parts: tuple[ContentPart, ...]) -> tuple[ContentPart, ...]:
    """`parts` with each lone surrogate in their text replaced (the same tuple if none)."""
    repaired = tuple(_valid_part(part) for part in parts)
    return parts if all(a is b for a, b in zip(repaired, parts, strict=True)) else repaired


def _valid_part(part: ContentPart) -> ContentPart:
    if isinstance(part, TextContent):
        text = replace_lone_surrogates(part.text)
        return part if text is part.text else attrs.evolve(part, text=text)
    if isinstance(part, DiffContent):
        old = None if part.old_text is None else replace_lone_surrogates(part.old_text)
        new, path = replace_lone_surrogates(part.new_text), replace_lone_surrogates(part.path)
        if old is part.old_text and new is part.new_text and path is part.path:
            return part
        return DiffContent(path, old, new)
    return part  # images, terminals and plans carry no outside text of their own
