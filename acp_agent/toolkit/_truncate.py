"""Text truncated to a size with its head and tail kept, saying how much was left out.

Every cap on text the agent shows or sends (a tool result's copies, a
progress report, a message too long for a summary request) is truncated the same
way: the first two thirds and the last third of what fits, around a note.
"""

from __future__ import annotations

__all__ = ("truncate_middle",)


def truncate_middle(text: str, limit: int, note: str) -> str:
    """`text` if it fits in `limit` characters, else its head and tail around `note`.

    `note` may name `{omitted}`, the number of characters left out.
    """
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(note) - 32)
    head, tail = keep * 2 // 3, keep // 3
    omitted = len(text) - head - tail
    marker = "\n[... " + note.format(omitted=omitted) + " ...]\n"
    return text[:head] + marker + (text[-tail:] if tail else "")
