"""Sessions answered before they are assembled: `session/new` waits only for the write.

Assembling a session (its services, branches, tools and MCP servers, and the imports
they need) was most of what a process's first `session/new` cost, and an editor waits
for that answer at every start, while the person types the first prompt long after.
So the answer goes out once the session is stored (a crash from then on leaves it
loadable), and its assembly runs behind it, started once the answer is written: its
updates (the commands) follow the answer, as ACP requires. A request about the
session waits for the assembly (`ready`) and, if it failed, is answered with why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

__all__ = ("OpeningSessions",)

logger = logging.getLogger(__name__)


class OpeningSessions:
    """The sessions of this process whose assembly is still running, or failed."""

    def __init__(self) -> None:
        self._opening: dict[str, asyncio.Future[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def assemble(self, session_id: str, assembly: Callable[[], Awaitable[None]]) -> None:
        """Run `assembly` for `session_id`, now answered: call it once the answer is
        written, before the loop takes another request (an `after_response` callback)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        # A failure is told to the requests that wait; none may ever come.
        done.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._opening[session_id] = done
        task = loop.create_task(
            self._run(session_id, assembly, done), name=f"assembling session {session_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def ready(self, session_id: str) -> None:
        """Return once `session_id` is assembled, at once if it is not being assembled;
        raise what made its assembly fail."""
        done = self._opening.get(session_id)
        if done is not None:
            await asyncio.shield(done)

    async def settled(self, session_id: str) -> None:
        """Like `ready`, but a failed assembly is not an error (closing, deleting)."""
        with contextlib.suppress(Exception):
            await self.ready(session_id)

    async def aclose(self) -> None:
        """Stop the assemblies still running (at shutdown) and wait for them."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task

    async def _run(
        self,
        session_id: str,
        assembly: Callable[[], Awaitable[None]],
        done: asyncio.Future[None],
    ) -> None:
        try:
            await assembly()
        except asyncio.CancelledError:
            done.cancel()
            raise
        except Exception as exc:
            logger.exception("session %s could not be assembled", session_id)
            done.set_exception(exc)
        else:
            done.set_result(None)
            # Assembled: requests find it open from now on. A failure stays, to be told.
            del self._opening[session_id]
