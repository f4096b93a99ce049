"""psycopg's errors as the store error tree, and which of them a retry may cure.

One table by SQLSTATE class, so every PostgreSQL failure reaches the runtime
as the same classes the SQLite store raises:

    connection lost, server shutting down or restarting   LOST       retried, then StoreUnavailable
    serialization failure, deadlock                       RETRY      retried, then StoreUnavailable
    disk full (53100)                                     StoreFull
    unique or foreign key violation (23…)                 StoreConflict
    data or index corrupted (XX001, XX002)                StoreCorrupt
    everything else                                       StoreUnavailable

A message is cleaned of URL credentials before it is shown (libpq quotes the
host, never the password, but a URL may be in a message all the same).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

from acp_agent.core import StoreConflict, StoreCorrupt, StoreError, StoreFull, StoreUnavailable
from acp_agent.store._location import redact_store_url

if TYPE_CHECKING:
    import psycopg

__all__ = ("Failure", "classify", "translate")


class Failure(enum.Enum):
    """What a failed statement means for trying it again."""

    #: The connection is gone (or the server is going): a new one may succeed, and a
    #: commit sent on the old one may or may not have happened.
    LOST = "lost"
    #: The server rolled the transaction back to keep transactions apart: run it again.
    RETRY = "retry"
    #: Trying again gives the same answer.
    FINAL = "final"


#: SQLSTATEs of a server that is going away or not yet there (class 57's shutdowns).
_GOING: Final = frozenset({"57P01", "57P02", "57P03", "57P05"})
#: SQLSTATEs of a transaction the server rolled back so another could go on.
_RETRYABLE: Final = frozenset({"40001", "40P01"})


def classify(exc: psycopg.Error) -> Failure:
    """Whether `exc` may pass with a new connection, a new transaction, or not at all."""
    import psycopg

    state = exc.sqlstate
    if state in _RETRYABLE:
        return Failure.RETRY
    if state in _GOING or (state or "").startswith("08"):
        return Failure.LOST
    if state is None and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        # No SQLSTATE: libpq's own failure (no server, the socket closed, a closed
        # connection used again).
        return Failure.LOST
    return Failure.FINAL


def translate(exc: psycopg.Error, what: str, *, location: str) -> StoreError:
    """The store error for `exc`, saying `what` failed; `location` is the redacted URL."""
    state = exc.sqlstate or ""
    message = f"{what}: {redact_store_url(_first_line(exc))}"
    if state == "53100":
        return StoreFull(message, location=location)
    if state.startswith("23"):
        return StoreConflict(message)
    if state in ("XX001", "XX002"):
        return StoreCorrupt(message)
    if classify(exc) is Failure.LOST:
        return StoreUnavailable(f"{message} (the PostgreSQL server at {location} is unreachable)")
    return StoreUnavailable(message)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
