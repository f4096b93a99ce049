"""Reading what an agent wrote without trusting its shape.

Everything here comes from a program under test: any member may be missing or of
any type. `Reply` reads one response message and `dig` a path into any value;
neither raises, whatever they are given, so a reply of the wrong shape becomes
evidence (`Reply.problem`), never an exception in the checker.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ("STOP_REASONS", "Reply", "dig", "short")

#: The stop reasons a prompt's response may carry (the schema's `StopReason`).
STOP_REASONS: Final = frozenset(
    {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
)


def dig(value: Any, *keys: str) -> Any:
    """`value[k1][k2]...`, or None where a step is not an object or lacks the key."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def short(value: Any, limit: int = 100) -> str:
    """`value` as compact JSON (a string as it is), truncated to `limit` characters."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        words = value
    else:
        try:
            words = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):
            words = f"(a JSON {type(value).__name__} too deep to show)"
    return words if len(words) <= limit else words[:limit] + "…"


class Reply:
    """One response message, read defensively."""

    def __init__(self, message: Any) -> None:
        #: The message as it came (a dict with this id; anything else in it).
        self.message = message

    @property
    def result(self) -> dict[str, Any] | None:
        """The result, when it is an object (the only shape an ACP result has)."""
        result = dig(self.message, "result")
        return result if isinstance(result, dict) else None

    @property
    def ok(self) -> bool:
        return self.result is not None and "error" not in self.message

    def get(self, *keys: str) -> Any:
        """A member of the result, or None (see `dig`)."""
        return dig(self.result, *keys)

    @property
    def error_code(self) -> Any:
        return dig(self.message, "error", "code")

    def problem(self) -> str:
        """Why this is not a usable result, in a phrase ("" when it is one)."""
        message = self.message
        if not isinstance(message, dict):
            return f"not a JSON-RPC response: {short(message)}"
        has_result, has_error = "result" in message, "error" in message
        if has_result and has_error:
            return f"both result and error: {short(message)}"
        if has_error:
            error = message["error"]
            if not isinstance(error, dict):
                return f"an error that is not an object: {short(error)}"
            return f"an error: {short(error.get('code'), 20)} {short(error.get('message'), 100)}"
        if not has_result:
            return f"neither result nor error: {short(message)}"
        if self.result is None:
            return f"a result that is not an object: {short(message['result'])}"
        return ""

    def describe(self) -> str:
        """The reply in a phrase: its problem, or the result itself."""
        return self.problem() or f"result {short(self.result)}"
