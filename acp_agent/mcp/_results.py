"""An MCP tool result as our `ToolResult`: content for the editor, text for the model.

Text stays text; images stay images for the editor (the model reads a line
naming each one); embedded text resources become their text, binary ones
and audio a line naming them; resource links a Markdown link. Structured
content is the raw output, and the model's text when nothing else says it.
What each copy may cost is capped later, for every tool alike
(`capabilities.result_budget`).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp.types as mcp_types

from acp_agent.toolkit import ContentPart, ImageContent, TextContent, ToolResult
from jsonbounds import TOO_DEEP, nesting_exceeds

__all__ = ("error_result", "to_tool_result")


def error_result(text: str, raw_output: Any = None) -> ToolResult:
    """A failed call, said the same way to the person and the model."""
    return ToolResult(
        content=(TextContent(text),), model_text=text, is_error=True, raw_output=raw_output
    )


def _decoded_size(data: str) -> int | None:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return None


def _size_note(data: str) -> str:
    size = _decoded_size(data)
    return f"{size} bytes" if size is not None else "undecodable base64"


def _part(block: Any) -> tuple[ContentPart, str]:
    """The editor's part and the model's text for one MCP content block."""
    if isinstance(block, mcp_types.TextContent):
        return TextContent(block.text), block.text
    if isinstance(block, mcp_types.ImageContent):
        note = f"[image: {block.mime_type}, {_size_note(block.data)}; shown to the user]"
        return ImageContent(data=block.data, mime_type=block.mime_type), note
    if isinstance(block, mcp_types.AudioContent):
        note = f"[audio: {block.mime_type}, {_size_note(block.data)}]"
        return TextContent(note), note
    if isinstance(block, mcp_types.ResourceLink):
        text = f"[{block.title or block.name}]({block.uri})"
        if block.description:
            text += f": {block.description}"
        return TextContent(text), text
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            text = f"{resource.uri}:\n{resource.text}"
            return TextContent(text), text
        mime = resource.mime_type or "application/octet-stream"
        note = f"[resource {resource.uri}: {mime}, {_size_note(resource.blob)}]"
        return TextContent(note), note
    note = f"[unsupported MCP content: {getattr(block, 'type', type(block).__name__)}]"
    return TextContent(note), note


def to_tool_result(result: mcp_types.CallToolResult) -> ToolResult:
    """The `ToolResult` for an MCP `CallToolResult` (its `is_error` carried over)."""
    parts: list[ContentPart] = []
    texts: list[str] = []
    for block in result.content:
        part, text = _part(block)
        parts.append(part)
        texts.append(text)
    structured = result.structured_content
    if nesting_exceeds(structured):
        return error_result(f"The tool's structured result is {TOO_DEEP}; it was not used.")
    model_text = "\n".join(texts)
    if structured is not None and not any(
        isinstance(block, mcp_types.TextContent) for block in result.content
    ):
        rendered = json.dumps(structured, ensure_ascii=False, indent=2)
        parts.append(TextContent(f"```json\n{rendered}\n```"))
        model_text = "\n".join([*texts, rendered])
    if not parts:
        empty = "(the tool returned an error and no content)" if result.is_error else "(no output)"
        parts.append(TextContent(empty))
        model_text = empty
    return ToolResult(
        content=tuple(parts), model_text=model_text, is_error=result.is_error, raw_output=structured
    )
