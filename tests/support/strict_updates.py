"""What a strict client demands of the updates it takes, beyond the schema.

The schema lets `rawInput` and `rawOutput` be any JSON, and says nothing of a
tool call's life; a strict client (Toad types both as objects and drops an
update that is not; Zed keeps one row per tool call) takes an update only if:

- `rawInput` and `rawOutput`, where present, are JSON objects;
- a `tool_call_update` names a tool call the session announced (`tool_call`) before;
- a tool call's status never goes back: once `completed` or `failed`, it is never
  `pending` or `in_progress` again (nor is it announced again).

`strict_problems(received, loads)` checks every `session/update` the agent wrote
(and the tool call of each `session/request_permission`); a `session/load` starts
its session afresh (a client shows the replay as a new conversation), so `loads`
gives, by index into `received`, the sessions loaded from there on. Keys the
schema does not define are the schema check's (`protocol.validation`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ("strict_problems",)

_ENDED: Final = frozenset({"completed", "failed"})
_RAW_FIELDS: Final = ("rawInput", "rawOutput")


def strict_problems(
    received: Iterable[bytes], loads: Mapping[int, set[str]] | None = None
) -> list[str]:
    """Every way the agent's `received` lines would be dropped by a strict client."""
    problems: list[str] = []
    #: (session id, tool call id) -> its last status (None: announced without one).
    calls: dict[tuple[str, str], str | None] = {}
    for number, line in enumerate(received, 1):
        for loaded in (loads or {}).get(number - 1, ()):
            calls = {key: status for key, status in calls.items() if key[0] != loaded}
        message = _decoded(line)
        if message is None:
            continue
        method, params = message.get("method"), message.get("params")
        if not isinstance(params, dict):
            continue
        if method == "session/update" and isinstance(params.get("update"), dict):
            session_id = str(params.get("sessionId"))
            found = _update_problems(session_id, params["update"], calls)
        elif method == "session/request_permission" and isinstance(params.get("toolCall"), dict):
            found = _raw_problems(params["toolCall"])
        else:
            continue
        problems.extend(f"line {number}: {problem}" for problem in found)
    return problems


def _decoded(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None  # the schema check reports it
    return message if isinstance(message, dict) else None


def _raw_problems(update: dict[str, Any]) -> list[str]:
    return [
        f"{field} of {update.get('toolCallId')} is not a JSON object: "
        f"{json.dumps(update[field])[:80]}"
        for field in _RAW_FIELDS
        if field in update and not isinstance(update[field], dict)
    ]


def _update_problems(
    session_id: str, update: dict[str, Any], calls: dict[tuple[str, str], str | None]
) -> list[str]:
    kind = update.get("sessionUpdate")
    if kind not in ("tool_call", "tool_call_update"):
        return []
    problems = _raw_problems(update)
    call_id = str(update.get("toolCallId"))
    key = (session_id, call_id)
    status = update.get("status")
    if kind == "tool_call_update" and key not in calls:
        problems.append(f"tool_call_update of {call_id}, never announced with tool_call")
    before = calls.get(key)
    if before in _ENDED:
        if kind == "tool_call":
            problems.append(f"tool call {call_id} announced again after {before}")
        elif status is not None and status not in _ENDED:
            problems.append(f"tool call {call_id} went from {before} back to {status}")
        return problems  # what a strict client keeps: its end
    if status is not None or key not in calls:
        calls[key] = status if status is not None else before
    return problems
