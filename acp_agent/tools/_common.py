"""Small pieces every tool uses: results for refusals, short titles (fenced text is the
tool kit's: `acp_agent.toolkit.fenced`)."""

from __future__ import annotations

from typing import Any

from acp_agent.toolkit import Location, TextContent, ToolResult
from acp_agent.tools._textfile import FileRefusal

__all__ = ("refusal_result", "short", "text_result")


def short(text: str, limit: int = 80) -> str:
    """The first line of `text`, at most `limit` characters (an ellipsis marks a truncation)."""
    first, _, rest = text.strip().partition("\n")
    if len(first) > limit:
        return first[: limit - 1] + "…"
    return first + ("…" if rest else "")


def text_result(
    text: str,
    *,
    is_error: bool = False,
    raw_output: Any = None,
    locations: tuple[Location, ...] | None = None,
) -> ToolResult:
    """A result whose content and model text are the same text."""
    return ToolResult(
        content=(TextContent(text),),
        model_text=text,
        is_error=is_error,
        raw_output=raw_output,
        locations=locations,
    )


def refusal_result(refusal: FileRefusal, **details: Any) -> ToolResult:
    """An error result for a refusal: what happened for the person, that and what to do
    for the model, its code in `raw_output`."""
    return ToolResult(
        content=(TextContent(refusal.message),),
        model_text=refusal.model_text,
        is_error=True,
        raw_output={"error": refusal.code, "message": refusal.message, **details},
    )
