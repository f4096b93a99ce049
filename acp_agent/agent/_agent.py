"""The runtime's handle: sessions opened, forked, listed and deleted.

    async with open_agent(store, registry=registry, models=models) as agent:
        session = await agent.load(session_id, FrontEnd(client=editor, prompter=person))
        turn = await session.prompt([TextContent("Hi")])

One `Agent` per runtime, one `SessionHandle` per open session. A session
opens with its front end's side (`FrontEnd`: the editor, who is asked, how
branches are shown), which its services read as they assemble: nothing is
filled in later. A session can be written before the runtime is open
(`create_session`, `_new`: an answer need not wait for the runtime's assembly) and
opened behind the answer (`open_created`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import attrs

from acp_agent.agent._new import NewSession, create_session, other_roots
from acp_agent.agent._session import SessionHandle
from acp_agent.capabilities.controls import SYSTEM_PROMPT_KEY
from acp_agent.core import (
    DEFAULT_TAIL_EVENTS,
    SESSION,
    Assembler,
    Branch,
    Runtime,
    Scope,
    Seq,
    ServiceNotFound,
    ServiceRegistry,
    Session,
    SessionId,
    SessionPosition,
    SessionRecord,
    Store,
    StoreNotFound,
    message_cut,
    open_runtime,
    prompt_cut,
    write_first,
)
from acp_agent.values import Value

if TYPE_CHECKING:
    from acp_agent.capabilities import FrontEnd
    from acp_agent.capabilities.controls import ClientInstructions
    from acp_agent.models import ModelSource

__all__ = (
    "Agent",
    "ForkAnchor",
    "FrontEndMaker",
    "fork_cut",
    "open_agent",
)

logger = logging.getLogger(__name__)

#: Makes the front end's side of a session from its id (a fork's id is made as it opens).
FrontEndMaker = Callable[[SessionId], "FrontEnd"]


@attrs.frozen
class ForkAnchor(Value):
    """Where a fork cuts its source's history: after the turn of prompt n
    (`through_prompt`), after the turn of a message (`message_id`), or just before a
    person's message (`message_id` with `before`)."""

    through_prompt: int | None = None
    message_id: str | None = None
    before: bool = False


class Agent:
    """The runtime's handle (see the module docstring). Made by `open_agent`.

    **Parameters:**

    * `runtime`: the open runtime.
    * `models`: the models sessions use and pick from.
    * `config_dir`: the person's config directory (commands, rules).
    * `clock`: wall time (permission rule revocations).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        models: ModelSource,
        config_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._runtime = runtime
        self._models = models
        self._config_dir = config_dir
        self._clock = clock
        self._handles: dict[SessionId, SessionHandle] = {}

    @property
    def store(self) -> Store:
        return self._runtime.store

    def session(self, session_id: str) -> SessionHandle | None:
        """The handle of a session open here, if it is."""
        handle = self._handles.get(SessionId(session_id))
        return handle if handle is not None and handle.open else None

    # --- opening ----------------------------------------------------------------------

    async def open_created(
        self,
        new: NewSession | SessionRecord,
        front_end: FrontEnd | FrontEndMaker | None = None,
    ) -> SessionHandle:
        """Open a session `create_session` wrote; its lease goes back if it cannot be."""
        record = new.record if isinstance(new, NewSession) else new
        session = await self._runtime.open_created(record, provide=_provider(front_end))
        return self._adopt(session)

    async def new_session(
        self,
        cwd: str,
        front_end: FrontEnd | FrontEndMaker | None = None,
        *,
        additional_directories: Sequence[str] = (),
        instructions: ClientInstructions | None = None,
        mode: str | None = None,
        owner: str | None = None,
    ) -> SessionHandle:
        """Write and open a new session in `cwd`, `owner`'s (None: this process's person;
        default model; the mode `mode` names, else the default: see `create_session`; the
        client's `instructions`, if given)."""
        new = await create_session(
            partial(write_first, self.store),
            cwd,
            models=self._models,
            at=self._clock(),
            mode=mode,
            additional_directories=additional_directories,
            instructions=instructions,
            owner=owner,
        )
        handle = await self.open_created(new, front_end)
        await handle.activate(new.record.additional_directories)
        return handle

    async def load(
        self,
        session_id: str,
        front_end: FrontEnd | FrontEndMaker | None = None,
        *,
        person: str | None = None,
    ) -> SessionHandle:
        """Open a stored session (lease it, rebuild its open branches); the handle of one
        open here already (as it was opened). `StoreNotFound`, `SessionHeld`.

        With `person`, only a session of theirs: another's is `StoreNotFound` (see
        `check_owner`), before anything is leased or opened.
        """
        await self.check_owner(session_id, person)
        handle = self.session(session_id)
        if handle is not None:
            return handle
        session = await self._runtime.load_session(
            SessionId(session_id), provide=_provider(front_end)
        )
        await self._share_local_files(session_id)
        return self._adopt(session)

    async def _share_local_files(self, session_id: str) -> None:
        """A session's checkpoints and full results from before the store kept them go into
        it, the first time it opens (they follow it to another machine from then on)."""
        from acp_agent.capabilities import CHECKPOINTS, FULL_RESULTS

        with contextlib.suppress(ServiceNotFound):  # assembled without the capabilities
            await self._runtime.scope.get(CHECKPOINTS).share_folder(session_id)
            await self._runtime.scope.get(FULL_RESULTS).share_folder(session_id)

    async def check_owner(self, session_id: str, person: str | None) -> None:
        """`StoreNotFound` unless the session exists and belongs to `person` (None: anyone).

        Another person's session is reported as not found, not as refused: a client
        learns nothing of sessions that are not its person's.
        """
        if person is None:
            return
        handle = self.session(session_id)
        record = (
            handle._session.record
            if handle is not None
            else await self.store.get_session(SessionId(session_id))
        )
        if record.owner != person:
            raise StoreNotFound(f"no session {session_id}")

    def _adopt(self, session: Session) -> SessionHandle:
        known = self._handles.get(session.id)
        if known is not None and known._session is session:
            return known
        handle = SessionHandle(
            session,
            agent=self,
            models=self._models,
            config_dir=self._config_dir,
            clock=self._clock,
        )
        self._handles[session.id] = handle
        return handle

    def _forget(self, handle: SessionHandle) -> None:
        if self._handles.get(handle.id) is handle:
            del self._handles[handle.id]

    # --- forking ----------------------------------------------------------------------

    async def fork(
        self,
        source_id: str,
        *,
        anchor: ForkAnchor | None = None,
        front_end: FrontEnd | FrontEndMaker | None = None,
        additional_directories: Sequence[str] | None = None,
        instructions: ClientInstructions | None = None,
        person: str | None = None,
    ) -> SessionHandle:
        """A new session with the history of `source_id` up to `anchor` (default: up to
        the last turn that ended); the source is left as it was (loaded for the fork if it
        is not open, and unloaded again).

        The fork keeps the source's model, mode and thinking effort, the client's
        instructions unless given its own, its checkpoints (it can rewind what it
        inherited), and its title, marked "(fork)"; it keeps the source's additional
        directories unless given its own, and activates only those given. `IllegalCut`
        (an anchor that is no cut), `StoreNotFound`, `SessionHeld`.
        With `person`, only a session of theirs is forked (see `check_owner`).
        """
        from acp_agent.capabilities import CHECKPOINTS, SESSION_CONTROLS

        await self.check_owner(source_id, person)
        attached = self.session(source_id)
        source = (
            attached._session
            if attached is not None
            else await self._runtime.load_session(SessionId(source_id))
        )
        try:
            values = source.scope.get(SESSION_CONTROLS).values()
            directories = (
                None
                if additional_directories is None
                else other_roots(source.cwd, additional_directories)
            )
            cut = await fork_cut(source.main, anchor)
            session = await self._runtime.fork_session(
                source.main,
                at=cut,
                additional_directories=directories,
                provide=_provider(front_end),
                owner=person,
            )
            title = source.record.title
        finally:
            if attached is None:
                with anyio.CancelScope(shield=True):
                    await source.aclose()
        with contextlib.suppress(ServiceNotFound):  # the fork can rewind what it inherited
            checkpoints = self._runtime.scope.get(CHECKPOINTS)
            await anyio.to_thread.run_sync(checkpoints.copy_session, source_id, str(session.id))
            await checkpoints.copy_shared(source_id, str(session.id))
        handle = self._adopt(session)
        handle.controls.set_additional_directories(directories or ())
        if instructions is not None:
            values = {**values, SYSTEM_PROMPT_KEY: instructions.as_value()}
        await handle.adopt(values)
        if title:
            await handle.set_title(f"{title} (fork)")
        logger.info("Session %s forked from %s at seq %d", session.id, source_id, cut)
        return handle

    # --- listing and deleting ---------------------------------------------------------

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        limit: int = 100,
        after: SessionPosition | None = None,
        owner: str | None = None,
    ) -> list[SessionRecord]:
        """Stored sessions, most recently updated first (see `Runtime.list_sessions`)."""
        return await self._runtime.list_sessions(cwd=cwd, limit=limit, after=after, owner=owner)

    async def delete(self, session_id: str, *, person: str | None = None) -> None:
        """Close the session if open (its prompts cancelled first), then delete it and
        what is kept for it: its results cut to their budget and its checkpoints. An
        unknown id is nothing to delete; `SessionHeld` if another process has it.
        With `person`, another person's session is not deleted (`StoreNotFound`)."""
        from acp_agent.capabilities import CHECKPOINTS, FULL_RESULTS

        try:
            await self.check_owner(session_id, person)
        except StoreNotFound:
            return  # unknown, or another's: nothing of this person's to delete

        handle = self.session(session_id)
        if handle is not None:
            await handle.close()
        await self._runtime.delete_session(SessionId(session_id))
        with contextlib.suppress(ServiceNotFound):  # assembled without the capabilities
            await self._runtime.scope.get(FULL_RESULTS).forget_folder(session_id)
            checkpoints = self._runtime.scope.get(CHECKPOINTS)
            await anyio.to_thread.run_sync(checkpoints.forget, session_id)
        logger.info("Session %s deleted", session_id)


def _provider(front_end: FrontEnd | FrontEndMaker | None) -> Assembler | None:
    """What provides `front_end` (made for the session's id, if it is a maker) to the
    session's scope as it assembles."""
    if front_end is None:
        return None
    given = front_end

    async def provide(scope: Scope) -> None:
        side = given(scope.get(SESSION).id) if callable(given) else given
        await side.provide(scope)

    return provide


async def fork_cut(branch: Branch, anchor: ForkAnchor | None) -> Seq:
    """Where a fork of `branch` cuts its history, as `anchor` names it."""
    if anchor is None:
        return await prompt_cut(branch)
    if anchor.message_id is not None:
        return await message_cut(branch, anchor.message_id, before=anchor.before)
    return await prompt_cut(branch, anchor.through_prompt)


@asynccontextmanager
async def open_agent(
    store: Store,
    *,
    registry: ServiceRegistry,
    models: ModelSource,
    config_dir: Path | None = None,
    clock: Callable[[], float] = time.time,
    tail_events: int = DEFAULT_TAIL_EVENTS,
) -> AsyncIterator[Agent]:
    """Open the runtime over `store` with the services of `registry`, and its handle; on
    exit every session closes (each running turn recorded as interrupted). The store
    stays open: whoever opened it closes it. `tail_events`: how many of the newest
    events each line keeps in memory (a subscriber further behind reads the store)."""
    async with open_runtime(store, registry=registry, tail_events=tail_events) as runtime:
        yield Agent(runtime, models=models, config_dir=config_dir, clock=clock)
