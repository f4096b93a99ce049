"""New sessions written before they are opened: what a `session/new` answer waits for.

    new = await create_session(opening.write_first, cwd, models=models, at=time.time())
    answer(new.session_id, new.mode, new.options(models))   # then, behind the answer:
    handle = await agent.open_created(new, front_end)

`create_session` writes the session with the settings it is answered with (the
default model, the mode, the client's instructions) in one write (`FirstWrite`),
after which it survives a crash and loads as answered. It needs the records, the
settings and a writer, not the runtime: the runtime's modules load as the session
opens, behind the answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import anyio
import attrs

from acp_agent.capabilities.controls import (
    CONTROLS_PRODUCER,
    DEFAULT_THOUGHT_LEVEL,
    ClientInstructions,
    SessionOption,
    first_settings,
    mode_named,
    setting_options,
    workspace_roots,
)
from acp_agent.capabilities.permissions import PermissionMode
from acp_agent.core import FirstWrite, SessionRecord, new_session_record
from acp_agent.people import local_person
from acp_agent.values import Value

if TYPE_CHECKING:
    from acp_agent.core import SessionId
    from acp_agent.models import ModelSource

__all__ = (
    "FirstWriter",
    "HoldsLeases",
    "NewSession",
    "create_session",
    "other_roots",
    "release_unopened",
)

#: Writes a new session as its `FirstWrite` says (a store opening's `write_first`, or
#: `acp_agent.core.write_first` over a whole store).
FirstWriter = Callable[[FirstWrite], Awaitable[None]]


@attrs.frozen
class NewSession(Value):
    """A session written to the store and leased to this process, not opened yet."""

    first: FirstWrite
    #: Its settings as it was written with them, for the answer.
    model_id: str | None
    mode: PermissionMode

    @property
    def record(self) -> SessionRecord:
        return self.first.record

    @property
    def session_id(self) -> str:
        return str(self.first.record.session_id)

    def options(self, models: ModelSource) -> list[SessionOption]:
        """Its settings as a front end offers them (see `SessionControls.options`)."""
        return setting_options(models, self.mode, self.model_id, DEFAULT_THOUGHT_LEVEL)


async def create_session(
    write: FirstWriter,
    cwd: str,
    *,
    models: ModelSource,
    at: float,
    mode: str | None = None,
    additional_directories: Sequence[str] = (),
    instructions: ClientInstructions | None = None,
    owner: str | None = None,
) -> NewSession:
    """Write a new session in `cwd`, `owner`'s (None: this process's person), with the
    default model, the mode `mode` names (`ACP_AGENT_MODE`; None or unknown: the default,
    `mode_named`) and the client's `instructions` (None: the agent's own): from then on
    it is loadable with them, even if the process ends before it is opened."""
    owner = local_person() if owner is None else owner
    record = new_session_record(
        cwd, at=at, additional_directories=additional_directories, owner=owner
    )
    model_id, chosen = models.default_model(), mode_named(mode)
    first = FirstWrite(
        record, first_settings(model_id, chosen, instructions), producer=CONTROLS_PRODUCER
    )
    await write(first)
    return NewSession(first, model_id, chosen)


class HoldsLeases(Protocol):
    """What wrote a new session and holds its lease: a store, or its opening."""

    async def release_session(self, session_id: SessionId) -> None: ...


async def release_unopened(store: HoldsLeases, record: SessionRecord) -> None:
    """Give back the lease of a session `create_session` wrote and nothing will open."""
    with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
        await store.release_session(record.session_id)


def other_roots(cwd: str, directories: Sequence[str] | None) -> tuple[str, ...]:
    """`directories` as a session keeps them: resolved, once each, the cwd left out."""
    return tuple(str(root) for root in workspace_roots(cwd, directories or ())[1:])
