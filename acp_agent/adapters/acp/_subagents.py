"""A session's branches as ACP subagent sessions (UNSTABLE), for a client that takes them.

Only with `--unstable` and a client that advertised `clientCapabilities.subagents`;
any other client sees each branch as a tool call of the main line (`BranchShown`).
Each child line of work is a restricted session whose id is its branch id:

- **announce**: a `subagent_update` on the parent session (title, the task as
  description, `state`, `capabilities.cancel`) goes out as the child opens,
  before any of its traffic;
- **traffic**: the child's own `session/update`s (chunks, thoughts, tool calls,
  plans) and its `session/request_permission` carry the child's id, at any
  time: it is a session of its own, not a part of main's turn;
- **state**: later `subagent_update` patches follow the child: running,
  requires action while a question waits, idle (with the stop reason) when
  its turn ends. Idle does not end it: main can message it again;
- **cancel**: `session/cancel` with the child's id stops that child's current
  step only; every other method on a child's id is refused (`refuse`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from acp_agent.adapters.acp._stream import SessionStream
from acp_agent.adapters.acp._updates import UpdateTranslator
from acp_agent.capabilities import BranchManager, ChildLine, LineState
from protocol import types
from protocol.connection import AgentConnection
from protocol.errors import InvalidParams

if TYPE_CHECKING:
    from acp_agent.capabilities import PermissionPrompter

__all__ = ("SubagentPresenter", "refuse", "state_of")

logger = logging.getLogger(__name__)

_IDLE: dict[str | None, Callable[[], types.StateUpdate]] = {
    "end_turn": types.IdleStateUpdateEndTurn,
    "max_tokens": types.IdleStateUpdateMaxTokens,
    "max_turn_requests": types.IdleStateUpdateMaxTurnRequests,
    "refusal": types.IdleStateUpdateRefusal,
    "cancelled": types.IdleStateUpdateCancelled,
    "error": types.IdleStateUpdateError,
    "interrupted": types.IdleStateUpdateError,
    None: types.IdleStateUpdateNone,
}


def state_of(line: ChildLine) -> types.StateUpdate:
    """The ACP state snapshot of a child line of work."""
    if line.state is LineState.RUNNING:
        return types.RunningStateUpdate()
    if line.state is LineState.WAITING:
        return types.RequiresActionStateUpdate()
    if line.state is LineState.FAILED:
        return types.IdleStateUpdateError()
    if line.state is LineState.INTERRUPTED:
        # Cancelled by the person (its step stopped), or cut short by a restart.
        if line.stop_reason == "cancelled":
            return types.IdleStateUpdateCancelled()
        return types.IdleStateUpdateError()
    if line.state is LineState.CLOSED:
        return types.IdleStateUpdateNone()
    make = _IDLE.get(line.stop_reason)
    if make is None:  # a stop reason of ours ACP has no name for
        return types.IdleStateUpdateOther(stop_reason=f"_{line.stop_reason}")
    return make()


@attrs.define(eq=False)
class _Child:
    line: ChildLine
    stream: SessionStream
    #: The state last sent (None: none yet).
    state: types.StateUpdate | None


class SubagentPresenter:
    """Shows one session's children as subagent sessions (see the module docstring).

    **Parameters:**

    * `connection`: the connection to the editor.
    * `parent`: the stream of the main line's session (where children are announced).
    * `manager`: the session's branches.
    * `translator`: makes a live translator for a child's stream.
    * `prompter`: makes the permission prompter of a session id.
    """

    def __init__(
        self,
        *,
        connection: AgentConnection,
        parent: SessionStream,
        manager: BranchManager,
        translator: Callable[[], UpdateTranslator],
        prompter: Callable[[str], PermissionPrompter],
    ) -> None:
        self._connection = connection
        self._parent = parent
        self._manager = manager
        self._translator = translator
        self._prompter = prompter
        self._children: dict[str, _Child] = {}

    def open(self) -> None:
        """Follow the manager's children from now on; their questions go to their sessions."""
        self._manager.watch(self)
        self._manager.ask_directly = lambda branch_id: self._prompter(str(branch_id))

    def close(self) -> None:
        self._manager.unwatch(self)
        self._manager.ask_directly = None
        for child in self._children.values():
            child.stream.close()

    def is_child(self, session_id: str) -> bool:
        return session_id in self._children

    async def cancel(self, session_id: str) -> bool:
        """Stop the child's current step (it stays open); whether it had one."""
        return await self._manager.cancel_line(session_id)

    # --- LineWatcher -----------------------------------------------------------------------

    async def line_attached(self, line: ChildLine) -> None:
        child_id = str(line.branch_id)
        branch = line.branch
        stream = SessionStream(self._connection, child_id, self._translator())
        # A child opening to start its first turn has no state yet: "running" follows.
        fresh = line.turns_ended == 0 and not line.state.working
        child = _Child(line, stream, None if fresh else state_of(line))
        self._children[child_id] = child
        # The announce first: the client must know the child before any of its traffic.
        self._parent.send(
            types.SubagentUpdate(
                session_id=child_id,
                title=line.title,
                description=line.task or None,
                capabilities=types.SubagentSessionCapabilities(
                    cancel=types.SessionCancelCapabilities()
                ),
                state=child.state,
            )
        )
        stream.attach(branch.dispatcher.subscribe(stream, after=branch.timeline.last_published_seq))
        logger.info("branch %s is shown as a subagent session", child_id)

    async def line_changed(self, line: ChildLine) -> None:
        child = self._children.get(str(line.branch_id))
        if child is None:
            return
        state = state_of(line)
        if state != child.state:
            child.state = state
            self._parent.send(types.SubagentUpdate(session_id=str(line.branch_id), state=state))


def refuse(session_id: str, parent_id: str, method: str) -> InvalidParams:
    """The error for `method` on a child's id: a subagent session takes only `session/cancel`."""
    return InvalidParams(
        f"Invalid params: sessionId: {session_id} is a subagent session of {parent_id}; "
        f"it takes session/cancel only, not {method}"
    )
