"""A session's notices on their way to the editor: `notice` updates, during prompts only.

The runtime hands the session's notices (`acp_agent.toolkit.Notice`: what the
person should know that no reply says) to its `NoticeOutbox`, the session's
`FrontEnd.notices`. For a client that advertised `session.notices`, each goes
out as a `notice` update on the session, but only while a prompt of the
session is open: one that comes between a prompt's answer and the next prompt
waits for that prompt's start (nothing reaches the editor between prompts),
where the held ones go out first, in order, each once. A client that did not
advertise notices gets none (the log has each). Notices are never recorded, so
a `session/load` never replays them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Final

from acp_agent.adapters.acp._stream import SessionStream
from acp_agent.toolkit import Notice, NoticeSeverity
from protocol import types

__all__ = ("NoticeOutbox", "notice_update")

logger = logging.getLogger(__name__)

#: How many notices wait for the next prompt at most (the oldest give way).
MAX_HELD: Final = 32
_LOG_LEVELS: Final = {
    NoticeSeverity.INFO: logging.INFO,
    NoticeSeverity.WARNING: logging.WARNING,
    NoticeSeverity.ERROR: logging.ERROR,
}


def notice_update(notice: Notice) -> types.Notice:
    """The `notice` update of one notice."""
    return types.Notice(
        severity=types.NoticeSeverity(notice.severity.value),
        title=notice.title,
        description=notice.description,
    )


class NoticeOutbox:
    """One session's notices (see the module docstring).

    **Parameters:**

    * `stream`: the session's update stream.
    * `shown`: the client advertised `session.notices` (else every notice is dropped).
    """

    def __init__(self, stream: SessionStream, *, shown: bool) -> None:
        self._stream = stream
        self.shown = shown
        #: Prompts of the session open now (a second one may wait for the first's turn).
        self._open_prompts = 0
        self._held: list[Notice] = []

    def post(self, notice: Notice) -> None:
        """Send `notice` now if a prompt is open, else at the next prompt's start."""
        logger.log(
            _LOG_LEVELS.get(notice.severity, logging.INFO),
            "notice for the person: %s%s",
            notice.title,
            f" ({notice.description})" if notice.description else "",
        )
        if not self.shown:
            return
        if self._open_prompts:
            self._stream.send(notice_update(notice))
            return
        if notice in self._held:
            return  # said once is enough until the person can read it
        self._held.append(notice)
        del self._held[:-MAX_HELD]

    @contextlib.contextmanager
    def prompt_open(self) -> Iterator[None]:
        """While a prompt of the session runs: the notices held go out as it starts, and
        the ones posted meanwhile at once. Leave it before the prompt is answered."""
        self._open_prompts += 1
        held, self._held = self._held, []
        for notice in held:
            self._stream.send(notice_update(notice))
        try:
            yield
        finally:
            self._open_prompts -= 1
