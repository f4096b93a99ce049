"""A few PostgreSQL connections, made on demand and reused, for the store's calls.

At most `size` calls use a connection at once; the others wait for one. A
connection goes back only when it is open and outside any transaction; one a
call left broken, mid-transaction or mid-query (a cancelled call) is closed, so
the next call never inherits half of another's work. After a lost connection
the store calls `discard_idle()`: the others were most likely lost with it
(the server restarted), and a retry should not meet them one by one.

No background task: nothing is made or checked until a call needs it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ("ConnectionPool",)

logger = logging.getLogger(__name__)


class ConnectionPool:
    """Up to `size` connections made by `connect`; create it inside the event loop."""

    def __init__(self, connect: Callable[[], Awaitable[AsyncConnection[Any]]], size: int) -> None:
        self._connect = connect
        self._slots = anyio.Semaphore(size)
        self._idle: list[AsyncConnection[Any]] = []
        self._closed = False

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection for one call, in autocommit mode and outside a transaction."""
        from psycopg.pq import TransactionStatus

        async with self._slots:
            db = self._idle.pop() if self._idle else await self._connect()
            try:
                yield db
            finally:
                reusable = (
                    not self._closed
                    and not db.closed
                    and db.info.transaction_status == TransactionStatus.IDLE
                )
                if reusable:
                    self._idle.append(db)
                else:
                    await _close(db)

    async def discard_idle(self) -> None:
        """Close every idle connection (after one was found lost)."""
        idle, self._idle = self._idle, []
        for db in idle:
            await _close(db)

    async def aclose(self) -> None:
        """Close the idle connections; those in use close when their call ends."""
        self._closed = True
        await self.discard_idle()


async def _close(db: AsyncConnection[Any]) -> None:
    with anyio.CancelScope(shield=True):
        try:
            await db.close()
        except Exception as exc:  # already broken: nothing more to do with it
            logger.debug("closing a broken connection: %s", exc)
