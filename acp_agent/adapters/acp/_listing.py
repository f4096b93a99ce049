"""`session/list` on the wire: session infos, ISO-8601 times and opaque page cursors.

Sessions list most recently updated first, `PAGE_SIZE` a page. A cursor is
the position of the last session of the page before (`SessionPosition`),
base64url-encoded JSON; the client treats it as opaque, and a cursor that
does not decode is invalid params.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
from typing import TYPE_CHECKING, Final

from protocol import types
from protocol.errors import InvalidParams

if TYPE_CHECKING:
    from acp_agent.agent import Agent, SessionPosition, SessionRecord

__all__ = (
    "PAGE_SIZE",
    "decode_cursor",
    "encode_cursor",
    "iso_time",
    "session_info",
    "session_page",
)

#: Sessions per `session/list` page.
PAGE_SIZE: Final = 50


def iso_time(timestamp: float) -> str:
    """A POSIX time as ISO-8601 in UTC, to the millisecond: `2026-11-29T10:04:05.123Z`."""
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_info(record: SessionRecord) -> types.SessionInfo:
    """A stored session as listed; `additionalDirectories` (the list it was last given, to
    send back on load or resume) is left out when there are none."""
    return types.SessionInfo(
        session_id=record.session_id,
        cwd=record.cwd,
        additional_directories=list(record.additional_directories) or None,
        title=record.title,
        updated_at=iso_time(record.updated_at),
    )


def encode_cursor(position: SessionPosition) -> str:
    text = json.dumps([position.updated_at, position.session_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> SessionPosition:
    """The position a cursor stands for; `InvalidParams` when it is not one of ours."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        updated_at, session_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(updated_at, int | float) or not isinstance(session_id, str):
            raise ValueError("not a position")
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise InvalidParams("Invalid params: cursor: not a cursor from session/list") from None
    from acp_agent.agent import SessionId, SessionPosition

    return SessionPosition(float(updated_at), SessionId(session_id))


async def session_page(
    agent: Agent, *, cwd: str | None, cursor: str | None, owner: str | None
) -> tuple[list[SessionRecord], str | None]:
    """One page of `owner`'s stored sessions (in `cwd`, after `cursor`), and the cursor of
    the next page when there is one: what `session/list` answers in either version."""
    from acp_agent.agent import SessionPosition

    after = None if cursor is None else decode_cursor(cursor)
    records = await agent.list_sessions(cwd=cwd, limit=PAGE_SIZE + 1, after=after, owner=owner)
    page = records[:PAGE_SIZE]
    if len(records) <= PAGE_SIZE:
        return page, None
    return page, encode_cursor(SessionPosition.of(page[-1]))
