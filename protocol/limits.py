"""Limits on what a peer may send, enforced where its messages enter.

A line the agent reads may be at most `MAX_AGENT_LINE_BYTES` long: a longer
one is skipped to its newline without being kept (so one line costs at most
that much memory) and answered -32600.

Everything a peer sends is walked by recursive code sooner or later (cattrs
structuring and unstructuring, JSON encoding, the agent's own projections),
so a message nested a few hundred levels deep would raise `RecursionError`
far from the edge, where nobody can answer for it. So nesting is bounded at
the edge: a message may nest at most `MAX_JSON_DEPTH` levels, counting the
message object itself as level 1; ACP's own shapes need fewer than ten, and
`_meta` values get the rest.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ("MAX_AGENT_LINE_BYTES", "MAX_JSON_DEPTH", "nesting_exceeds")

#: The largest line the agent side reads from its client, newline excluded.
#: Generous (a prompt carries whole files and base64 images), and what one
#: line may cost in memory: a longer line is skipped without being kept.
MAX_AGENT_LINE_BYTES: Final = 64 * 1024 * 1024

#: The deepest a message may nest (objects and arrays); the message itself is level 1.
MAX_JSON_DEPTH: Final = 100


def nesting_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON `value` nests objects and arrays deeper than `limit` levels.

    Iterative, so it cannot itself run out of stack; it visits each container once.
    """
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False
