"""The names the model calls MCP tools by: `mcp__<server>__<tool>`, within providers' rules.

Providers accept tool names matching `^[a-zA-Z0-9_-]{1,64}$`. A server and
tool whose names already fit keep them exactly. Otherwise each other
character becomes `_`; a name still too long is shortened and marked with a
digest of the original pair. Names are assigned to a whole tool set at once,
so they are collision-safe: when two pairs would share a name, a pair whose
name was used exactly as given keeps it and the others take the digest form
(`mcp__<server>__<tool>_<10 hex>`). The same set always gets the same names.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Final

__all__ = ("MAX_TOOL_NAME_LENGTH", "TOOL_NAME_PATTERN", "assign_tool_names")

#: What providers accept as a tool name.
TOOL_NAME_PATTERN: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_TOOL_NAME_LENGTH: Final = 64

_PREFIX: Final = "mcp__"
_SEPARATOR: Final = "__"
_OTHER_CHARACTERS: Final = re.compile(r"[^a-zA-Z0-9_-]")
_SERVER_PART_IN_DIGEST_FORM: Final = 20
_DIGEST_LENGTHS: Final = (10, 16, 32)


def _clean(part: str) -> str:
    return _OTHER_CHARACTERS.sub("_", part) or "_"


def _exact(server: str, tool: str) -> str | None:
    name = f"{_PREFIX}{server}{_SEPARATOR}{tool}"
    return name if TOOL_NAME_PATTERN.match(name) else None


def _cleaned(server: str, tool: str) -> str | None:
    name = f"{_PREFIX}{_clean(server)}{_SEPARATOR}{_clean(tool)}"
    return name if len(name) <= MAX_TOOL_NAME_LENGTH else None


def _digest_form(server: str, tool: str, digest_length: int) -> str:
    digest = hashlib.sha256(f"{server}\x00{tool}".encode()).hexdigest()[:digest_length]
    server_part = _clean(server)[:_SERVER_PART_IN_DIGEST_FORM]
    room = MAX_TOOL_NAME_LENGTH - len(_PREFIX) - len(server_part) - len(_SEPARATOR) - 1
    tool_part = _clean(tool)[: room - digest_length]
    return f"{_PREFIX}{server_part}{_SEPARATOR}{tool_part}_{digest}"


def assign_tool_names(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """A distinct, valid model-facing name for each `(server, tool)` pair.

    Deterministic for a given set of pairs, whatever their order.
    """
    unique = sorted(set(pairs))
    exact = {pair: _exact(*pair) for pair in unique}
    names: dict[tuple[str, str], str] = {
        pair: exact[pair] or _cleaned(*pair) or _digest_form(*pair, _DIGEST_LENGTHS[0])
        for pair in unique
    }
    for digest_length in (*_DIGEST_LENGTHS, None):
        holders: defaultdict[str, list[tuple[str, str]]] = defaultdict(list)
        for pair, name in names.items():
            holders[name].append(pair)
        shared = [group for group in holders.values() if len(group) > 1]
        if not shared:
            return names
        if digest_length is None:
            break
        for group in shared:
            keepers = [pair for pair in group if exact[pair] == names[pair]]
            keeper = keepers[0] if len(keepers) == 1 else None
            for pair in group:
                if pair != keeper:
                    names[pair] = _digest_form(*pair, digest_length)
    # Only pairs whose sha256 digests agree in 32 hex digits could get here.
    raise AssertionError("tool names still collide after the longest digest")
