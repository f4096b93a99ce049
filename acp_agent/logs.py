"""Logging for the agent process: stderr for the editor, a rotating file for details.

stdout belongs to the protocol, so no handler ever writes there. The file
takes records at the chosen level (default INFO); stderr, which editors
show to users, takes WARNING and above (or the chosen level if stricter).
Records name methods and ids, never message bodies: those carry file
contents and possibly credentials. Every formatted record, ours and the
libraries' (httpx and the MCP SDK log URLs), has the userinfo of its URLs
shown as `***` (`acp_agent.url_credentials`).
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
from pathlib import Path

from acp_agent.url_credentials import redact_url_credentials

__all__ = ("DEFAULT_LEVEL", "configure_logging", "parse_level")

DEFAULT_LEVEL = "INFO"

_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(process)d]: %(message)s"


def parse_level(name: str) -> int:
    """The numeric level for a name such as "debug" or "WARNING"; ValueError if unknown."""
    level = logging.getLevelName(name.strip().upper())
    if not isinstance(level, int):
        raise ValueError(f"unknown log level {name!r}")
    return level


def configure_logging(level: int, log_file: Path | None) -> None:
    """Send records to stderr and, when it can be opened, to `log_file`."""
    root = logging.getLogger()
    root.setLevel(level)
    formatter = _RedactingFormatter(_FORMAT)

    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setLevel(max(level, logging.WARNING))
    to_stderr.setFormatter(formatter)
    root.addHandler(to_stderr)

    # pygls logs every message body at INFO (W9).
    logging.getLogger("pygls").setLevel(max(level, logging.WARNING))

    if log_file is None:
        return
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        to_file = logging.handlers.RotatingFileHandler(
            log_file, maxBytes=5 * 1024 * 1024, backupCount=3, encoding="utf-8"
        )
    except OSError as exc:
        root.warning("Cannot write the log file %s: %s", log_file, exc)
        return
    to_file.setLevel(level)
    to_file.setFormatter(formatter)
    root.addHandler(to_file)


class _RedactingFormatter(logging.Formatter):
    """Formats as usual, then hides URL credentials in the whole text (traceback included)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_url_credentials(super().format(record))
