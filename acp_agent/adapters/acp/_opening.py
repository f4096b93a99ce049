"""Sessions answered before they are assembled: `session/new` waits only for the write.

Assembling a session (its services, branches, tools and MCP servers, and the imports
they need) was most of what a process's first `session/new` cost, and an editor waits
for that answer at every start, while the person types the first prompt long after.
So the answer goes out once the session is stored (a crash from then on leaves it
loadable), and its assembly runs behind it, started once the answer is written, in
the connection's task group: its updates (the commands) follow the answer, as ACP
requires. A request about the session waits for the assembly (`ready`) and, if it
failed, is answered with why: the runtime's errors as `wire_errors` answers them,
anything else as an internal error naming the session and the failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from functools import partial

import anyio

from protocol.connection import StartSoon
from protocol.errors import AcpError, InternalError

__all__ = ("OpeningSessions",)

logger = logging.getLogger(__name__)


class OpeningSessions:
    """The sessions of this process whose assembly is still running, or failed.

    Each assembly runs in `start_soon`'s task group (the connection's), in a cancel
    scope of its own that `aclose` cancels.
    """

    def __init__(self, start_soon: StartSoon) -> None:
        self._start_soon = start_soon
        self._opening: dict[str, asyncio.Future[None]] = {}
        #: The scope of each assembly still running, by session (`aclose` cancels them).
        self._running: dict[str, anyio.CancelScope] = {}

    def assemble(self, session_id: str, assembly: Callable[[], Awaitable[None]]) -> None:
        """Run `assembly` for `session_id`, now answered: call it once the answer is
        written, before the loop takes another request (an `after_response` callback)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # A failure is told to the requests that wait; none may ever come.
        done.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._opening[session_id] = done
        scope = self._running[session_id] = anyio.CancelScope()
        self._start_soon(
            partial(self._run, session_id, assembly, done, scope),
            name=f"assembling session {session_id}",
        )

    @property
    def running(self) -> bool:
        """Whether an assembly is running now."""
        return bool(self._running)

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
        running = list(self._running.items())
        for _, scope in running:
            scope.cancel()
        for session_id, _ in running:
            done = self._opening.get(session_id)
            if done is not None:
                await asyncio.wait({done})

    async def _run(
        self,
        session_id: str,
        assembly: Callable[[], Awaitable[None]],
        done: asyncio.Future[None],
        scope: anyio.CancelScope,
    ) -> None:
        assembled = False
        try:
            with scope:
                await assembly()
                assembled = True
        except Exception as exc:
            logger.exception("session %s could not be assembled", session_id)
            if not isinstance(exc, AcpError):
                told = InternalError(
                    f"Internal error: session {session_id} could not be opened: {exc}"
                )
                told.__cause__ = exc
                exc = told
            done.set_exception(exc)
        finally:
            if self._running.get(session_id) is scope:
                del self._running[session_id]
            if assembled:
                done.set_result(None)
                # Assembled: requests find it open from now on. A failure stays, to be told.
                del self._opening[session_id]
            elif not done.done():
                done.cancel()  # stopped (at shutdown) before it was assembled
