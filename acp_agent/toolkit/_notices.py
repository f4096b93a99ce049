"""Notices: what a person should know that is not a reply, told to the front end.

A component that learns something the person should know, and that no reply
or tool call says (a language server lost, an MCP server that failed, the
disk full), hands a `Notice` to the session's `NoticeSink` (the front end's,
given when the session opens; `NO_NOTICES` where there is none). A notice is
live, never recorded: a front end shows it or drops it, and a replay of the
session never shows it again. Its severity is honest: `ERROR` for what stops
work, `WARNING` for what makes it worse, `INFO` for what is only good to know.
"""

from __future__ import annotations

import enum
from typing import Final, Protocol

import attrs

from acp_agent.values import Value

__all__ = ("NO_NOTICES", "Notice", "NoticeSeverity", "NoticeSink")


class NoticeSeverity(enum.StrEnum):
    """How much a notice matters to the person's work."""

    #: Only good to know (a job finished, a server is back).
    INFO = "info"
    #: Work goes on, worse (a server lost, a check cut short, a rule file unread).
    WARNING = "warning"
    #: Work stopped or cannot happen (the disk full, an MCP server that failed).
    ERROR = "error"


@attrs.frozen
class Notice(Value):
    """One notice: a title that stands alone (one line, plain text) and an optional
    description (plain text: detail or what to do)."""

    severity: NoticeSeverity
    title: str
    description: str | None = None


class NoticeSink(Protocol):
    """Takes a notice (never blocks, never raises: a notice is fire and forget)."""

    def __call__(self, notice: Notice) -> None: ...


def _dropped(notice: Notice) -> None:
    return None


#: The sink of a session no front end shows notices for: they are dropped.
NO_NOTICES: Final[NoticeSink] = _dropped
