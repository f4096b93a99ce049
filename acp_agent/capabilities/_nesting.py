"""How deep JSON from outside the agent may nest: model tool arguments, tool outputs.

The same bound as the ACP edge (`protocol.limits`, which the capabilities may
not import): JSON that a provider or a tool server hands us is walked by
recursive code later (recording, projection, the editor's updates), and a
structure a few hundred levels deep would fail there, far from its cause. So
it is refused where it enters, with a result the model reads.
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

    Iterative, so it cannot itself run out of stack; tuples count as arrays.
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
