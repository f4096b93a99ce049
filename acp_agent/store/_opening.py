"""A store opened in two steps: far enough to write a new session, then whole.

    opening = await open_in_steps(location)
    await opening.write_first(first)   # what a `session/new` answer waits for
    store = opening.store()            # the runtime's, when it opens

The stdio agent answers `session/new` once the session is written and assembles
it behind the answer (`acp_agent.adapters.acp._opening`). For SQLite the first
step is the open file (`SqliteFile`): it writes a new session without the store's
module and the runtime's, which load with the assembly; `store()` is then the
`SqliteStore` over that same file (its connection, its leases). Another store
opens whole in the first step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_agent.store._location import StoreLocation, open_store
from acp_agent.store._sqlite_file import SqliteFile

if TYPE_CHECKING:
    from acp_agent.core import FirstWrite, SessionId, Store

__all__ = ("StoreOpening", "open_in_steps")


class StoreOpening:
    """A store from its first step on (see the module docstring)."""

    def __init__(self, *, file: SqliteFile | None = None, store: Store | None = None) -> None:
        """One of `file` (an SQLite file, the store made of it later) or `store`."""
        if (file is None) == (store is None):
            raise ValueError("a store opening starts from a file or a store")
        self._file = file
        self._store = store

    async def write_first(self, first: FirstWrite) -> None:
        """Write a new session as `first` says (see `acp_agent.core.FirstWrite`)."""
        if self._store is not None:
            from acp_agent.core import write_first

            await write_first(self._store, first)
        else:
            assert self._file is not None
            await self._file.write_first(first)

    async def release_session(self, session_id: SessionId) -> None:
        """Give back a lease `write_first` took (a session that will not be opened)."""
        if self._store is not None:
            await self._store.release_session(session_id)
        else:
            assert self._file is not None
            await self._file.release_session(session_id)

    def store(self) -> Store:
        """The whole store (made of the file on first call: this loads its module)."""
        if self._store is None:
            from acp_agent.store._sqlite import SqliteStore

            assert self._file is not None
            self._store = SqliteStore(self._file)
        return self._store

    async def aclose(self) -> None:
        """Close what is open (the store, or the file it was not made of yet)."""
        if self._store is not None:
            await self._store.aclose()
        elif self._file is not None:
            await self._file.aclose()


async def open_in_steps(location: StoreLocation) -> StoreOpening:
    """Open the store at `location` as far as a new session's first write needs."""
    if location.kind == "sqlite":
        return StoreOpening(file=await SqliteFile.open(location.path))
    return StoreOpening(store=await open_store(location))
