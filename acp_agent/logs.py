"""Logging for the agent process: stderr for the editor, a rotating file for details.

stdout belongs to the protocol, so no handler ever writes there. The file
takes records at the chosen level (default INFO); stderr, which editors
show to users, takes WARNING and above (or the chosen level if stricter).
A log file that cannot be written (a full disk, a lost mount) is reported
once on stderr, in one line, and then no longer written until the agent
restarts; stderr logging goes on.

Records name methods and ids, never message bodies: those carry file
contents and possibly credentials. Every formatted record, ours and the
libraries' (httpx and the MCP SDK log URLs), has the userinfo of its URLs
shown as `***` (`acp_agent.url_credentials`).
"""

from __future__ import annotations

import contextlib
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
        to_file = _LogFile(log_file, maxBytes=5 * 1024 * 1024, backupCount=3, encoding="utf-8")
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


class _LogFile(logging.handlers.RotatingFileHandler):
    """The rotating log file, given up for good on the first write that fails (`OSError`).

    `logging.Handler.handleError` prints a full traceback to stderr for every
    failing record: on a full disk that is a traceback per record, burying what
    the editor shows. Instead the first failure is one warning (through the
    other handlers, so on stderr) and the file is closed. It stays closed until
    restart rather than retrying after a while: a disk rarely frees itself
    during an editor session, each retry would cost an exception per record,
    and a file with holes in it misleads more than one that stops where it says.
    """

    failed = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.failed:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            # A record that cannot be formatted is a bug in its call, not the file's fault.
            super().handleError(record)
            return
        if self.failed:
            return
        self.failed = True
        with contextlib.suppress(OSError, ValueError):
            self.close()  # its buffer cannot be flushed either
        logging.getLogger(__name__).warning(
            "Cannot write the log file %s (%s); it is no longer written until acp-agent "
            "restarts, stderr still is",
            self.baseFilename,
            error,
        )
