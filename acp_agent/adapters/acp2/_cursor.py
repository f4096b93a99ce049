"""The cursors v2 updates carry: `"<seq>:<part>"`, the app server's form (`"<seq>"`: all
of event `seq`), parsed back from what a client sends in `replayFrom`."""

from __future__ import annotations

import re
from typing import Final

from protocol.errors import InvalidParams

__all__ = ("parse_cursor",)

_CURSOR: Final = re.compile(r"(0|[1-9][0-9]{0,17})(?::(0|[1-9][0-9]{0,8}))?")
#: A part past any event's last: `"<seq>"` covers the whole event.
_WHOLE: Final = 1 << 40


def parse_cursor(text: object) -> tuple[int, int]:
    """(seq, part) of a cursor a client got from an update; -32602 if it is not one."""
    match = _CURSOR.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidParams(f"Invalid params: replayFrom.cursor: not a cursor of ours: {text!r}")
    part = match.group(2)
    return int(match.group(1)), _WHOLE if part is None else int(part)
