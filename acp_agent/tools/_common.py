"""Small pieces every tool uses: results for refusals, fenced text, short titles."""

from __future__ import annotations

import re
from typing import Any

from acp_agent.toolkit import Location, TextContent, ToolResult
from acp_agent.tools._textfile import FileRefusal

__all__ = ("fenced", "refusal_result", "short", "text_result")

_BACKTICKS = re.compile(r"`{3,}")


def fenced(text: str, info: str = "") -> str:
    """`text` as a Markdown code block whose fence no line of it can close."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=2)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{body}{fence}"


def short(text: str, limit: int = 80) -> str:
    """The first line of `text`, at most `limit` characters (an ellipsis marks a cut)."""
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
