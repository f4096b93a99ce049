"""How deep JSON from outside may nest: ACP messages, model tool arguments, tool outputs.

Everything a peer sends is walked by recursive code sooner or later (cattrs
structuring and unstructuring, JSON encoding, the agent's recording and
projections), so a value nested a few hundred levels deep would raise
`RecursionError` far from the edge, where nobody can answer for it. So it is
refused where it enters: at most `MAX_JSON_DEPTH` levels, counting the value
itself as level 1. ACP's own shapes need fewer than ten; `_meta` values and
tool arguments get the rest.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ("MAX_JSON_DEPTH", "TOO_DEEP", "nesting_exceeds")

#: The deepest a JSON value from outside may nest (objects and arrays; the value is level 1).
MAX_JSON_DEPTH: Final = 100
#: How a refusal names the limit.
TOO_DEEP: Final = f"nested deeper than {MAX_JSON_DEPTH} levels (the limit)"


def nesting_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON `value` nests objects and arrays deeper than `limit` levels.

    Iterative, so it cannot itself run out of stack; it visits each container
    once. Tuples count as arrays (what a Python value about to be encoded holds).
    """
    if not isinstance(value, dict | list | tuple):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list | tuple):
                stack.append((child, depth + 1))
    return False
