"""The agent's runtime, hosted in the connection's event loop from first use to exit.

The connection runs one asyncio loop until stdin ends. Once `initialize` is
answered, a task of the connection's task group opens the store as far as a new
session's first write needs (`StoreOpening`: for SQLite, the file alone, without
the store's module), which is all a `session/new` answer waits for. The first
handler that needs the runtime starts the host in that task group
(`start_soon`), which makes the whole store of that opening and opens the
runtime with its handle (`acp_agent.agent.open_agent`) and keeps them open; when the loop shuts
down (`aclose`, from the connection's shutdown) it cancels the host's scope and
waits for it, while it closes every session (each turn still running is
interrupted and recorded as such), then the store and the model source. A
handler waiting for the runtime is told if it could not open.
Once the runtime is open, the objects of the process so far are frozen out
of the garbage collector's generations (`gc.freeze`): they live as long as
the process, and walking them in a full collection paused streamed replies.
The collector's thresholds, raised while the process started (`acp_agent.cli`),
are Python's defaults again from then on.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio

from protocol.connection import StartSoon

if TYPE_CHECKING:
    # The runtime loads with the first session, not with `initialize`.
    from acp_agent.agent import Agent, ServiceRegistry, StoreOpening
    from acp_agent.models import ModelSource

__all__ = ("RuntimeHost", "RuntimeUnavailable")

logger = logging.getLogger(__name__)

#: The collector's thresholds once the runtime is open: Python's defaults.
_SERVING_GC_THRESHOLDS: Final = (700, 10, 10)


class RuntimeUnavailable(RuntimeError):
    """The runtime could not be opened (the store could not be opened, or it closed)."""


class RuntimeHost:
    """Opens the store and the runtime once, on first use, and closes them at exit.

    **Parameters:**

    * `start_soon`: where the host and the store's opening run: the connection's task
      group (`AgentConnection.start_soon`), which waits for them before it ends.
    * `open_store`: opens the store as far as a new session's first write needs
      (`acp_agent.store.open_in_steps`); the runtime gets its whole store.
    * `assemble`: builds the registry of the services every scope assembles; called
      once, on first use (it imports the capabilities: start-up does not pay for them).
    * `models`: the models sessions use and pick from.
    * `config_dir`: the person's config directory (commands, rules).
    * `clock`: wall time (permission rule revocations).
    * `on_close`: awaited after the runtime and the store closed (close the model source).
    """

    def __init__(
        self,
        start_soon: StartSoon,
        open_store: Callable[[], Awaitable[StoreOpening]],
        assemble: Callable[[], ServiceRegistry],
        *,
        models: ModelSource,
        config_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._open_store = open_store
        self._assemble = assemble
        self._models = models
        self._config_dir = config_dir
        self._clock = clock
        self._on_close = on_close
        self._start_soon = start_soon
        self._ready: asyncio.Future[Agent] | None = None
        self._opening: asyncio.Future[StoreOpening] | None = None
        #: The host's scope (cancelled to close the runtime), once it is started.
        self._hosting: anyio.CancelScope | None = None
        #: Set once the host has ended: the runtime, the store and the models closed.
        self._hosted = asyncio.Event()

    def open_store_early(self) -> None:
        """Start opening the store now, in its worker thread (called once `initialize` is
        answered): the first `session/new` then finds SQLite's file work done, or under
        way beside its own, instead of starting it then."""
        if self._opening is None:
            opening: asyncio.Future[StoreOpening] = asyncio.get_running_loop().create_future()
            # Its failure is reported when a session needs the store, not as never retrieved.
            opening.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._opening = opening
            self._start_soon(partial(self._open_store_into, opening), name="opening the store")

    async def _open_store_into(self, opening: asyncio.Future[StoreOpening]) -> None:
        try:
            opening.set_result(await self._open_store())
        except Exception as exc:
            opening.set_exception(exc)
        finally:
            if not opening.done():
                opening.cancel()  # cancelled itself (the connection ended first)

    async def agent(self) -> Agent:
        """The runtime's handle, opening it on first use; `RuntimeUnavailable` if it
        cannot open."""
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._hosting = anyio.CancelScope()
            # The host outlives every handler; `aclose` ends it, from the connection's
            # shutdown, before the connection's group ends.
            self._start_soon(
                partial(self._host, self._ready, self._hosting), name="acp-agent runtime"
            )
        return await asyncio.shield(self._ready)

    async def store(self) -> StoreOpening:
        """The store as far as it is open, opening it if nothing has yet;
        `RuntimeUnavailable` if it cannot open.

        It can be used before the runtime is open: `session/new` writes its session with it.
        """
        self.open_store_early()
        assert self._opening is not None
        try:
            return await asyncio.shield(self._opening)
        except Exception as exc:
            raise RuntimeUnavailable(f"the session store could not be opened: {exc}") from exc

    async def aclose(self) -> None:
        """Close the runtime, then the store and the model source, if they were opened.

        Call it while the loop still runs (`AgentConnection.on_shutdown`): closing
        inside the loop's own teardown, after the main task ended, makes every
        worker-thread call walk all tasks, which turned a large shutdown quadratic.
        """
        hosting = self._hosting
        if hosting is None and self._opening is not None:
            await _discard(self._opening)  # opened early for a session that never came
            return
        if hosting is None or self._hosted.is_set():
            return
        # Closing makes garbage faster than the collector's thresholds expect, and each
        # full collection walks every session still open; nothing here needs one.
        gc.disable()
        hosting.cancel()
        await self._hosted.wait()

    async def _host(self, ready: asyncio.Future[Agent], hosting: anyio.CancelScope) -> None:
        try:
            with hosting:
                await self._open_and_hold(ready)
        finally:
            self._hosted.set()

    async def _open_and_hold(self, ready: asyncio.Future[Agent]) -> None:
        """Open the store and the runtime, hand the runtime's handle to `ready`, and keep
        both open until cancelled; then close them (shielded)."""
        from acp_agent.agent import open_agent

        # The store opens in a worker thread while `assemble` imports the capabilities
        # on this one: SQLite's file work overlaps the imports instead of following them.
        self.open_store_early()
        assert self._opening is not None
        opening = self._opening
        await asyncio.sleep(0)  # let it reach its thread before the imports hold the loop
        try:
            registry = self._assemble()
        except Exception as exc:
            await _discard(opening)
            logger.exception("the runtime could not be assembled")
            ready.set_exception(RuntimeUnavailable(f"the runtime could not be assembled: {exc}"))
            return
        except BaseException:
            await _discard(opening)
            raise
        try:
            store = (await opening).store()
        except Exception as exc:
            logger.exception("the store could not be opened")
            unavailable = RuntimeUnavailable(f"the session store could not be opened: {exc}")
            unavailable.__cause__ = exc  # a full disk is answered as one (`wire_errors`)
            ready.set_exception(unavailable)
            return
        try:
            async with open_agent(
                store,
                registry=registry,
                models=self._models,
                config_dir=self._config_dir,
                clock=self._clock,
            ) as agent:
                # What exists now (modules, classes, the runtime) lives as long as the
                # process: move it out of the collector's generations, so a full
                # collection does not stall a stream for ~100 ms walking it.
                gc.freeze()
                gc.set_threshold(*_SERVING_GC_THRESHOLDS)
                ready.set_result(agent)
                await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await store.aclose()
                except Exception:
                    logger.exception("the store did not close cleanly")
                finally:
                    if self._on_close is not None:
                        await self._on_close()
                if not ready.done():
                    ready.set_exception(RuntimeUnavailable("the runtime closed"))
            logger.info("runtime closed")


async def _discard(opening: asyncio.Future[StoreOpening]) -> None:
    """Close a store that opened for a runtime that will not be (and wait for it to)."""
    with anyio.CancelScope(shield=True):
        await asyncio.wait({opening})
        if opening.cancelled() or opening.exception() is not None:
            return
        with contextlib.suppress(Exception):
            await opening.result().aclose()
