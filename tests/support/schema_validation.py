"""The schema checker the tests use: `protocol.validation`, shared with `acp-agent check`.

`negotiated_problems` holds each line the agent wrote to the schema that governs
it: the unstable schema for a line of a shape the client negotiated (what it
advertised in `initialize`: `subagents` turns on `subagent_update` and the
`session_message` updates, `plan` the plan operations), the stable one for
every other line, unless the client opted in to all of the unstable schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from protocol.validation import SCHEMA_DIR, WireValidator

__all__ = ("NEGOTIATED_UPDATES", "SCHEMA_DIR", "WireValidator", "negotiated_problems")

#: The `session/update` kinds each client capability (a key of `clientCapabilities`)
#: turns on, whose shapes only the unstable schema has.
NEGOTIATED_UPDATES: Final[Mapping[str, frozenset[str]]] = {
    "subagents": frozenset({"subagent_update", "session_message", "session_message_chunk"}),
    "plan": frozenset({"plan_update", "plan_removed"}),
}


def negotiated_problems(
    sent: Iterable[bytes], received: Iterable[bytes], *, unstable: bool = False
) -> list[str]:
    """Every problem of the `received` lines with the schema that governs each."""
    sent, received = list(sent), list(received)
    stable_schema = WireValidator(unstable=unstable)
    unstable_schema = stable_schema if unstable else WireValidator(unstable=True)
    negotiated = _negotiated_kinds(sent)
    asked = _asked(sent)
    found: list[str] = []
    for number, line in enumerate(received, 1):
        governing = unstable_schema if _update_kind(line) in negotiated else stable_schema
        found.extend(f"line {number}: {p}" for p in governing.line_problems(line, asked))
    return found


def _negotiated_kinds(sent: list[bytes]) -> frozenset[str]:
    """The update kinds the client's `initialize` turned on."""
    kinds: set[str] = set()
    for message in _decoded(sent):
        if message.get("method") != "initialize":
            continue
        capabilities = (message.get("params") or {}).get("clientCapabilities") or {}
        for key, turned_on in NEGOTIATED_UPDATES.items():
            if isinstance(capabilities.get(key), dict):
                kinds |= turned_on
    return frozenset(kinds)


def _asked(sent: list[bytes]) -> dict[Any, str]:
    """The method of each request the client sent, by id (what a response answers)."""
    return {
        message["id"]: message["method"]
        for message in _decoded(sent)
        if isinstance(message.get("method"), str) and isinstance(message.get("id"), int | str)
    }


def _update_kind(line: bytes) -> str | None:
    for message in _decoded([line]):
        if message.get("method") == "session/update":
            update = (message.get("params") or {}).get("update")
            if isinstance(update, dict) and isinstance(update.get("sessionUpdate"), str):
                return str(update["sessionUpdate"])
    return None


def _decoded(lines: Iterable[bytes]) -> list[dict[str, Any]]:
    decoded = []
    for line in lines:
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue  # tests send garbage on purpose; the schema check reports the agent's
        if isinstance(message, dict):
            decoded.append(message)
    return decoded
