"""The in-memory store keeps the store contract."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from acp_agent.store import MemoryDatabase, MemoryStore

from .contract import StoreContract


class MemoryStores:
    """Handles on one shared in-memory database, one per simulated process."""

    def __init__(self) -> None:
        self.database = MemoryDatabase()

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[MemoryStore]:
        store = MemoryStore(self.database)
        try:
            yield store
        finally:
            await store.aclose()

    def open_other_writer(self) -> contextlib.AbstractAsyncContextManager[MemoryStore]:
        return self.open()


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def stores(self) -> MemoryStores:
        return MemoryStores()
