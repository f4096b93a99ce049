"""A session's title, derived from its first prompt (the same prompt, the same title).

The first line of the prompt's first text, with runs of white space made one
space and a leading Markdown heading or list mark dropped, truncated at a word
boundary to `MAX_TITLE_CHARS` (an ellipsis marks the truncation). A prompt without
text is titled after its first attachment's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from acp_agent.content import ContentPart, ResourceContent, ResourceLinkContent, TextContent

__all__ = ("MAX_TITLE_CHARS", "title_from_prompt")

#: The longest derived title, ellipsis included.
MAX_TITLE_CHARS: Final = 60


#: How much of a prompt's text is looked at for its first line.
_SCAN_CHARS = 64 * 1024


def title_from_prompt(content: Sequence[ContentPart]) -> str | None:
    """The title for a session whose first prompt is `content` (as the person sent it)."""
    for part in content:
        if isinstance(part, TextContent):
            title = _first_line(part.text)
            if title:
                return _shorten(title)
    for part in content:
        name = _attachment_name(part)
        if name:
            return _shorten(name)
    return None


def _first_line(text: str) -> str:
    # A bounded slice: a prompt may be megabytes, a title is one short line of its start.
    for line in text[:_SCAN_CHARS].splitlines():
        line = " ".join(line.split()).lstrip("#>*-+ ").strip()
        if line:
            return line
    return ""


def _attachment_name(part: ContentPart) -> str:
    if isinstance(part, ResourceLinkContent):
        return part.title or part.name
    if isinstance(part, ResourceContent):
        return part.uri.rstrip("/").rsplit("/", 1)[-1]
    return ""


def _shorten(title: str) -> str:
    if len(title) <= MAX_TITLE_CHARS:
        return title
    short = title[: MAX_TITLE_CHARS - 1]
    if " " in short[MAX_TITLE_CHARS // 2 :]:
        short = short.rsplit(" ", 1)[0]
    return short.rstrip(" ,.;:") + "…"
