"""The runtime's log warnings, caught for the check that caused them instead of printed.

Doctor calls the runtime's own loaders, which log what they skip (a malformed
`[lsp.servers.x]`, a template that cannot be read, userinfo ignored in a URL).
On a screen of checks those belong to the check that ran into them, so a handler
on the root logger hands each `acp_agent.*` WARNING (and above) to the collector of
the code running now (a context variable: each asyncio task and worker thread
keeps its own) and drops everything else: other libraries' records, and ours
outside any check, never reach the terminal.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator

from acp_agent.url_credentials import redact_url_credentials

__all__ = ("collected_warnings", "install_warning_capture")

_collector: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "doctor_warnings", default=None
)


class _ToCollector(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        collector = _collector.get()
        if collector is None or not record.name.startswith("acp_agent"):
            return
        try:
            message = redact_url_credentials(record.getMessage())
        except Exception:  # a record that cannot be formatted is not worth a traceback
            return
        if message not in collector:
            collector.append(message)


def install_warning_capture() -> None:
    """Route log records to the collectors from now on, and nowhere else."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = _ToCollector(logging.WARNING)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


@contextlib.contextmanager
def collected_warnings() -> Iterator[list[str]]:
    """The warnings logged inside the block (by this task or thread), in order, once each."""
    found: list[str] = []
    token = _collector.set(found)
    try:
        yield found
    finally:
        _collector.reset(token)
