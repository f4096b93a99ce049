"""A session's permission questions on the server: asked of everyone who may answer, answered once.

`QuestionBroker.ask` sends `session/request_permission` to every client in
the audience's `askers()` (the attached controllers and the client whose
prompt holds the turn), and to each that joins while the question waits (a
client that speaks ACP v2 is asked in v2: its `Viewer.asker`). Every other
attached client (an observer; not yet one that speaks v2) is told it instead:
`_acp-agent/permission_asked`, the request's params as a notification, so it
shows the question (with its diff or command) without answering it.
The first answer wins: the other requests are withdrawn (the engine sends
`$/cancel_request` for a request its caller gives up on) and every client
asked or told it but the one that answered is told
`_acp-agent/permission_resolved` with the outcome, where it got the question
(its session and tool call id). A client that leaves is not an answer: the
question waits, with nobody to ask if need be, until a controller attaches;
cancelling the turn withdraws it everywhere (and is told as resolved,
cancelled).

**A branch's question** (`ask(question, branch=...)`, from
`_branch_side`) is asked where each client sees the branch, as the stdio
agent's subagents client is asked (`adapters/acp/_subagents`): a client
shown the branches as child sessions (attached, having negotiated subagents:
`SessionAudience.sees_children`) at once on the child's session, with the
child's own tool call id; a client that refuses it there (an error) and every
other client on the parent session, once a turn of main runs, on the
branch's row in it, titled with the branch's title
(`BranchManager.question_on_main`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
import attrs

from acp_agent.adapters.acp._client_bridge import permission_answer, permission_request
from acp_agent.agent import PermissionAnswer, PermissionQuestion
from acp_agent.values import Value
from protocol import methods, types
from protocol.errors import AcpError, ConnectionClosed, PeerDisconnected, RequestCancelled

if TYPE_CHECKING:
    from acp_agent.adapters.server._audience import SessionAudience, Viewer
    from acp_agent.agent import BranchId, BranchManager

__all__ = ("PERMISSION_ASKED", "PERMISSION_RESOLVED", "AskingBranch", "QuestionBroker")

logger = logging.getLogger(__name__)

#: Told to an attached client that is not asked a question (an observer), as it is asked.
PERMISSION_ASKED: Final = "_acp-agent/permission_asked"
#: Told to attached clients once a question is answered (or withdrawn) for good.
PERMISSION_RESOLVED: Final = "_acp-agent/permission_resolved"


@attrs.frozen
class AskingBranch(Value):
    """The branch whose question it is: asked on its child session, or on main's turn."""

    manager: BranchManager
    branch_id: BranchId


class _Asking:
    """One question while it waits: who was asked or told it where, and the first answer."""

    def __init__(self) -> None:
        self.asked: set[str] = set()
        self.told: set[str] = set()
        #: Asked, and left before answering: never asked again.
        self.gone: set[str] = set()
        #: Where each client got the question (its session, its tool call id).
        self.places: dict[str, tuple[str, str]] = {}
        self.answer: tuple[str, types.RequestPermissionResponse | None] | None = None
        self.done = anyio.Event()


class QuestionBroker:
    """The session's `PermissionPrompter` on the server (see the module docstring)."""

    def __init__(self, audience: SessionAudience) -> None:
        self._audience = audience
        #: Questions waiting now, by where they come from (branch id) and tool call id.
        self.pending: dict[tuple[str | None, str], PermissionQuestion] = {}

    async def ask(
        self, question: PermissionQuestion, *, branch: AskingBranch | None = None
    ) -> PermissionAnswer:
        asking = _Asking()
        key = (None if branch is None else str(branch.branch_id), question.call_id)
        self.pending[key] = question
        try:
            async with anyio.create_task_group() as asks:
                while not asking.done.is_set():
                    self._reach(asks, question, branch, asking)
                    async with anyio.create_task_group() as wake:
                        wake.start_soon(_wake_on, self._audience.changed, wake.cancel_scope)
                        wake.start_soon(_wake_on, asking.done.wait, wake.cancel_scope)
                # The first answer is in: the others are withdrawn ($/cancel_request).
                asks.cancel_scope.cancel()
        finally:
            del self.pending[key]
            # Told to the others; withdrawn (the turn was cancelled): to everyone asked.
            answered_by, response = asking.answer or (None, None)
            self._resolved(asking, answered_by, response)
        if response is None:
            return PermissionAnswer(None)
        return permission_answer(question, response)

    def _reach(
        self,
        asks: anyio.abc.TaskGroup,
        question: PermissionQuestion,
        branch: AskingBranch | None,
        asking: _Asking,
    ) -> None:
        """Ask the question of every asker not asked yet, and show it to every other
        attached client not shown it yet (one that speaks v2 is only told its end)."""
        askers = self._audience.askers()
        for client_id, viewer in askers.items():
            if client_id not in asking.asked and client_id not in asking.gone:
                asking.asked.add(client_id)
                asks.start_soon(self._ask_one, viewer, question, branch, asking)
        for client_id, viewer in self._audience.attached_viewers().items():
            if client_id in askers or client_id in asking.told:
                continue
            if viewer.asker is None:
                asking.told.add(client_id)
                asks.start_soon(self._tell_one, viewer, question, branch, asking)
            elif branch is None:
                place = (self._audience.session_id, question.call_id)
                asking.places.setdefault(client_id, place)

    def _on_child(self, viewer: Viewer, branch: AskingBranch | None) -> bool:
        return branch is not None and self._audience.sees_children(viewer.client_id)

    async def _on_parent(
        self, question: PermissionQuestion, branch: AskingBranch | None
    ) -> PermissionQuestion:
        """The question as asked on the session itself (a branch's: once main's turn runs,
        on the branch's row)."""
        if branch is not None:
            question = await branch.manager.question_on_main(branch.branch_id, question)
        return question

    async def _ask_one(
        self,
        viewer: Viewer,
        question: PermissionQuestion,
        branch: AskingBranch | None,
        asking: _Asking,
    ) -> None:
        try:
            response = await self._request(viewer, question, branch, asking)
        except (PeerDisconnected, ConnectionClosed, OSError) as exc:
            # Gone: not an answer. Others may answer; a controller attaching later will.
            logger.info("%s left before answering %s: %s", viewer.client_id, question, exc)
            asking.gone.add(viewer.client_id)
            return
        except AcpError as exc:
            logger.info("%s could not answer a question: %s", viewer.client_id, exc)
            response = None
        if asking.answer is None:
            asking.answer = (viewer.client_id, response)
            asking.done.set()

    async def _request(
        self,
        viewer: Viewer,
        question: PermissionQuestion,
        branch: AskingBranch | None,
        asking: _Asking,
    ) -> types.RequestPermissionResponse:
        """Ask `viewer` where it sees the question; a branch's question refused on the
        child's session is asked again on the parent's."""
        if branch is not None and self._on_child(viewer, branch):
            try:
                return await self._send(viewer, str(branch.branch_id), question, asking)
            except RequestCancelled:
                raise
            except AcpError as exc:
                logger.warning(
                    "%s refused branch %s's question on its session (%s); asking on %s",
                    viewer.client_id,
                    branch.branch_id,
                    exc,
                    self._audience.session_id,
                )
        on_parent = await self._on_parent(question, branch)
        return await self._send(viewer, self._audience.session_id, on_parent, asking)

    async def _send(
        self, viewer: Viewer, session_id: str, question: PermissionQuestion, asking: _Asking
    ) -> types.RequestPermissionResponse:
        """Ask `viewer` `question` on `session_id`, in its protocol."""
        asking.places[viewer.client_id] = (session_id, question.call_id)
        if viewer.asker is not None:  # asked in its own protocol (v2): its answer in v1's terms
            return _response(await viewer.asker(session_id, question))
        response: types.RequestPermissionResponse = await viewer.connection.request(
            methods.SESSION_REQUEST_PERMISSION, permission_request(session_id, question)
        )
        return response

    async def _tell_one(
        self,
        viewer: Viewer,
        question: PermissionQuestion,
        branch: AskingBranch | None,
        asking: _Asking,
    ) -> None:
        """Show an attached client that does not answer (an observer) the question, where
        it sees it."""
        if self._on_child(viewer, branch):
            assert branch is not None
            request = permission_request(str(branch.branch_id), question)
        else:
            on_parent = await self._on_parent(question, branch)
            request = permission_request(self._audience.session_id, on_parent)
        asking.places[viewer.client_id] = (
            str(request.session_id),
            str(request.tool_call.tool_call_id),
        )
        params = viewer.connection.protocol.converter.unstructure(request)
        viewer.tell(PERMISSION_ASKED, params)

    def _resolved(
        self,
        asking: _Asking,
        client_id: str | None,
        response: types.RequestPermissionResponse | None,
    ) -> None:
        """Tell every client asked or told the question, but the one that answered, how it
        ended, where it got it."""
        outcome: dict[str, Any] = {"outcome": "cancelled"}
        if response is not None and isinstance(response.outcome, types.SelectedPermissionOutcome):
            outcome = {"outcome": "selected", "optionId": str(response.outcome.option_id)}
        following = self._audience.following
        for cid, (session_id, call_id) in asking.places.items():
            viewer = following.get(cid)
            if cid == client_id or viewer is None:
                continue
            viewer.tell(
                PERMISSION_RESOLVED,
                {
                    "sessionId": session_id,
                    "toolCallId": call_id,
                    "outcome": outcome,
                    "resolvedBy": client_id,
                },
            )


def _response(chosen: str | None) -> types.RequestPermissionResponse:
    """A choice (None: declined) as a v1 answer, what the broker weighs and reports."""
    if chosen is None:
        return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())
    return types.RequestPermissionResponse(
        outcome=types.SelectedPermissionOutcome(option_id=chosen)
    )


async def _wake_on(wait: Callable[[], Awaitable[object]], scope: anyio.CancelScope) -> None:
    await wait()
    scope.cancel()
