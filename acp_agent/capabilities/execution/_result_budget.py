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
was truncated, the full text is saved once as
`<results dir>/<session id>/<call id>.txt`, so the person can open it and
the model can read it (outside the workspace, it asks first); the notes
name that file. Truncating is linear in the result's size, and costs no copy of
it: the file is written from the result's own texts, a slice at a time.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.to_thread
import attrs

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

logger = logging.getLogger(__name__)

#: Text parts shorter than this are never compared with the raw output.
_DUPLICATE_MIN_CHARS: Final = 1024
#: A saved result is written this many characters at a time.
_WRITE_CHARS: Final = 1 << 20


@attrs.frozen
class ResultLimits(Value):
    """The caps of `ResultBudget` (see the module docstring)."""

    model_chars: int = 100_000
    editor_chars: int = 200_000
    raw_output_bytes: int = 64 * 1024
    image_bytes: int = 8 * 1024 * 1024


@attrs.define
class _Truncation:
    """The full text to save for what `apply` left out (the longest copy truncated),
    as the pieces it is made of: they are joined only in the file, never in memory."""

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
    """Caps a result's copies; saves the full text of a truncated result under `results_dir`.

    **Parameters:**

    * `results_dir`: where full results are kept, per session (None: not kept;
      the notes then say the rest is not kept).
    * `limits`: the caps.
    """

    def __init__(self, results_dir: Path | None, limits: ResultLimits | None = None) -> None:
        self.results_dir = results_dir
        self.limits = limits if limits is not None else ResultLimits()

    def saved_path(self, session_id: str, call_id: str) -> Path | None:
        """Where a truncated result of the call is kept (whether or not one was)."""
        if self.results_dir is None:
            return None
        return self.results_dir / _safe(session_id) / f"{_safe(call_id)}.txt"

    async def apply(self, result: ToolResult, *, session_id: str, call_id: str) -> ToolResult:
        """`result` with every copy within its cap (the full text saved when truncated)."""
        if not self._over(result):
            return result
        path = self.saved_path(session_id, call_id)
        truncation = _Truncation()
        note = "{omitted} characters left out"
        if path is not None:
            note += f"; the whole result is in {path}"
        model_text = self._model_text(result.model_text, note, truncation)
        content = self._content(result.content, note, truncation)
        raw_output = self._raw_output(result.raw_output, result.content, truncation)
        if truncation.happened and path is not None:
            try:
                await anyio.to_thread.run_sync(_write, path, truncation.pieces)
            except OSError as exc:
                logger.warning("the full result of %s could not be kept: %s", call_id, exc)
        return attrs.evolve(result, content=content, model_text=model_text, raw_output=raw_output)

    async def forget_session(self, session_id: str) -> None:
        """Delete what was kept for a session (it was deleted)."""
        if self.results_dir is None:
            return
        folder = self.results_dir / _safe(session_id)
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(folder, ignore_errors=True))

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


def _safe(name: str) -> str:
    """An id as a file name: no separators, no leading dots."""
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return cleaned.lstrip(".") or "_"


def _write(path: Path, pieces: Sequence[str]) -> None:
    """`pieces` joined by newlines into `path`, encoded a slice at a time (a whole
    result encoded at once would be one more copy of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as file:
        for number, piece in enumerate(pieces):
            if number:
                file.write("\n")
            for start in range(0, len(piece), _WRITE_CHARS):
                file.write(piece[start : start + _WRITE_CHARS])
