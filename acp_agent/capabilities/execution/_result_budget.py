"""One budget for what a tool result may cost, whatever produced it.

Built-in tools, MCP servers and whatever comes later hand the executor a
`ToolResult`; before it is recorded (and so stored, sent to the editor,
replayed on load and read by the model) `ResultBudget.apply` caps each copy:

================  ====================================================  ===========
copy              what is kept                                          default cap
================  ====================================================  ===========
the model's       `model_text`: its head and tail, with a note of how   100,000
                  much was left out and where the rest is               characters
the editor's      the text parts (and diffs) together: head and tail    200,000
                  of each in proportion, with the same note             characters
raw output        `raw_output` when its JSON fits; else a short note    64 KiB
images            each image's base64 data when it fits; else a note    8 MiB
================  ====================================================  ===========

Nothing is sent twice: a raw output that only repeats a text part (an MCP
server's `structuredContent` of a string result) is dropped. When anything
was truncated, the full text is kept once, in the session's store
(`FullResults`), so it follows the session to another machine and the model
reads it with `read_result`; the notes say so, naming the call. Truncating is
linear in the result's size, and costs no copy of it: the store is given the
result's own texts, encoded a chunk at a time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import attrs

from acp_agent.capabilities.execution._full_results import FullResults
from acp_agent.toolkit import (
    ContentPart,
    DiffContent,
    ImageContent,
    TextContent,
    ToolResult,
    truncate_middle,
)
from acp_agent.values import Value

__all__ = ("ResultBudget", "ResultLimits")

#: Text parts shorter than this are never compared with the raw output.
_DUPLICATE_MIN_CHARS: Final = 1024


@attrs.frozen
class ResultLimits(Value):
    """The caps of `ResultBudget` (see the module docstring)."""

    model_chars: int = 100_000
    editor_chars: int = 200_000
    raw_output_bytes: int = 64 * 1024
    image_bytes: int = 8 * 1024 * 1024


@attrs.define
class _Truncation:
    """The full text to keep for what `apply` left out (the longest copy truncated),
    as the pieces it is made of: they are never joined in memory."""

    pieces: Sequence[str] = ()
    #: Its length once joined, newlines between the pieces included.
    chars: int = -1

    @property
    def happened(self) -> bool:
        return self.chars >= 0

    def keep(self, pieces: Sequence[str]) -> None:
        """A copy that was truncated: `pieces` joined by newlines."""
        chars = sum(len(piece) for piece in pieces) + max(0, len(pieces) - 1)
        if chars > self.chars:
            self.pieces, self.chars = pieces, chars


class ResultBudget:
    """Caps a result's copies; keeps the full text of a truncated result (`results`).

    **Parameters:**

    * `results`: where full results are kept (None: not kept; the notes then say the
      rest is not kept).
    * `limits`: the caps.
    """

    def __init__(self, results: FullResults | None, limits: ResultLimits | None = None) -> None:
        self.results = results
        self.limits = limits if limits is not None else ResultLimits()

    async def apply(self, result: ToolResult, *, session_id: str, call_id: str) -> ToolResult:
        """`result` with every copy within its cap (the full text kept when truncated)."""
        if not self._over(result):
            return result
        keeps = self.results is not None and self.results.store is not None
        truncation = _Truncation()
        note = "{omitted} characters left out"
        if keeps:
            quoted = call_id.replace("{", "{{").replace("}", "}}")
            note += f'; the whole result is kept: read_result with call_id "{quoted}" reads it'
        model_text = self._model_text(result.model_text, note, truncation)
        content = self._content(result.content, note, truncation)
        raw_output = self._raw_output(result.raw_output, result.content, truncation)
        if truncation.happened and self.results is not None:
            await self.results.keep(session_id, call_id, truncation.pieces)
        return attrs.evolve(result, content=content, model_text=model_text, raw_output=raw_output)

    # --- the copies -----------------------------------------------------------------------

    def _over(self, result: ToolResult) -> bool:
        """A quick look: is anything possibly over its cap?"""
        limits = self.limits
        if len(result.model_text) > limits.model_chars:
            return True
        if _content_chars(result.content) > limits.editor_chars:
            return True
        if any(
            isinstance(part, ImageContent) and len(part.data) > limits.image_bytes
            for part in result.content
        ):
            return True
        return result.raw_output is not None and not isinstance(
            result.raw_output, bool | int | float
        )

    def _model_text(self, text: str, note: str, truncation: _Truncation) -> str:
        if len(text) <= self.limits.model_chars:
            return text
        truncation.keep((text,))
        return truncate_middle(text, self.limits.model_chars, note)

    def _content(
        self, parts: Sequence[ContentPart], note: str, truncation: _Truncation
    ) -> tuple[ContentPart, ...]:
        total = _content_chars(parts)
        limits = self.limits
        kept: list[ContentPart] = []
        for part in parts:
            if isinstance(part, ImageContent) and len(part.data) > limits.image_bytes:
                size = len(part.data) * 3 // 4
                kept.append(TextContent(f"[an image of about {size} bytes, too large to show]"))
                continue
            chars = _content_chars([part])
            # Over the cap, each text or diff gets its share of it, by its size.
            share = max(1024, limits.editor_chars * chars // total) if total else chars
            if total <= limits.editor_chars or chars <= share:
                kept.append(part)
            elif isinstance(part, TextContent):
                truncation.keep([p.text for p in parts if isinstance(p, TextContent)])
                kept.append(TextContent(truncate_middle(part.text, share, note)))
            elif isinstance(part, DiffContent):
                kept.append(
                    TextContent(
                        f"The change to {part.path} is too large to show as a diff "
                        f"({chars} characters); open the file to see it."
                    )
                )
            else:
                kept.append(part)
        return tuple(kept)

    def _raw_output(self, raw: Any, content: Sequence[ContentPart], truncation: _Truncation) -> Any:
        if raw is None or isinstance(raw, bool | int | float):
            return raw
        texts = {
            part.text
            for part in content
            if isinstance(part, TextContent) and len(part.text) >= _DUPLICATE_MIN_CHARS
        }
        if texts and _repeats(raw, texts):
            return None  # the same text is in the content already
        limit = self.limits.raw_output_bytes
        if _rough_size(raw, limit) <= limit:
            try:
                size = len(json.dumps(raw, ensure_ascii=False).encode("utf-8"))
            except (TypeError, ValueError, RecursionError):
                return None
            if size <= limit:
                return raw
        return {"omitted": f"the raw output is larger than {limit} bytes; see the content"}


def _content_chars(parts: Sequence[ContentPart]) -> int:
    chars = 0
    for part in parts:
        if isinstance(part, TextContent):
            chars += len(part.text)
        elif isinstance(part, DiffContent):
            chars += len(part.old_text or "") + len(part.new_text)
    return chars


def _rough_size(value: Any, limit: int) -> int:
    """A lower bound of `value`'s JSON size, walked iteratively; stops once past `limit`."""
    size, stack = 0, [value]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, dict):
            size += 2 + 2 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            size += 2 + len(item)
            stack.extend(item)
        else:
            size += 4
    return size


def _repeats(raw: Any, texts: set[str]) -> bool:
    """Whether `raw` only wraps one of `texts`: the text itself, or `{"result": text}`."""
    if isinstance(raw, str):
        return raw in texts
    if isinstance(raw, dict) and len(raw) == 1:
        (value,) = raw.values()
        return _repeats(value, texts)
    return False
