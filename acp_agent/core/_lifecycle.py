"""Closing that starts once and belongs to its owner, not to whoever asked.

`CloseOnce` runs a close body at most once, shielded, in a task of the
owner's task group (the scope doing the closing). Any number of callers may
await it; a caller that stops waiting (cancelled, timed out) cancels
nothing, so a window closing never leaves resources without an owner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

import anyio

__all__ = ("CloseOnce", "TaskSpawner")


class TaskSpawner(Protocol):
    """Anything that can own a fire-and-forget task: a task group or a `Scope`."""

    def start_soon(
        self, func: Callable[[], Coroutine[Any, Any, Any]], /, *, name: object = None
    ) -> None: ...


class CloseOnce:
    """A close body that runs once, shielded, owned by the closing scope."""

    def __init__(self, body: Callable[[], Awaitable[None]], *, name: str) -> None:
        self._body = body
        self._name = name
        self._started = False
        self._done = anyio.Event()
        self._error: Exception | None = None

    @property
    def started(self) -> bool:
        """The close was asked for (it may still be running)."""
        return self._started

    @property
    def done(self) -> bool:
        """The close body has finished (successfully or not)."""
        return self._done.is_set()

    def start(self, owner: TaskSpawner) -> None:
        """Start the close in `owner` unless it has already started."""
        if not self._started:
            self._started = True
            owner.start_soon(self._run, name=f"close {self._name}")

    async def wait(self) -> None:
        """Wait until the close has finished; re-raises its error for every waiter."""
        await self._done.wait()
        if self._error is not None:
            raise self._error

    async def close(self, owner: TaskSpawner) -> None:
        """Start the close (once) and wait for it."""
        self.start(owner)
        await self.wait()

    async def close_here(self) -> None:
        """Run the close in the calling task, or wait for the one already running.

        Only for a caller that is itself a close body (shielded, waiting to the
        end): it saves the task `close()` starts, which adds up when a runtime
        closes thousands of sessions at once.
        """
        if self._started:
            await self.wait()
            return
        self._started = True
        await self._run()
        if self._error is not None:
            raise self._error

    async def _run(self) -> None:
        try:
            with anyio.CancelScope(shield=True):
                await self._body()
        except Exception as exc:
            self._error = exc
        finally:
            self._done.set()
