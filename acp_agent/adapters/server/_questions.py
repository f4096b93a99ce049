"""A session's permission questions on the server: asked of everyone who may answer, answered once.

`QuestionBroker.ask` sends `session/request_permission` to every client in
the audience's `askers()` (the attached controllers and the client whose
prompt holds the turn), and to each that joins while the question waits (a
client that speaks ACP v2 is asked in v2: its `Viewer.asker`). The first
answer wins: the other requests are withdrawn (the engine sends
`$/cancel_request` for a request its caller gives up on) and every attached
client but the one that answered is told `_acp-agent/permission_resolved`
with the outcome. A client that leaves is not an answer: the question waits,
with nobody to ask if need be, until a controller attaches; cancelling the
turn withdraws it everywhere (and is told as resolved, cancelled).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio

from acp_agent.adapters.acp._client_bridge import permission_answer, permission_request
from acp_agent.agent import PermissionAnswer, PermissionQuestion
from protocol import methods, types
from protocol.errors import AcpError, ConnectionClosed, PeerDisconnected

if TYPE_CHECKING:
    from acp_agent.adapters.server._audience import SessionAudience, Viewer

__all__ = ("PERMISSION_RESOLVED", "QuestionBroker")

logger = logging.getLogger(__name__)

#: Told to attached clients once a question is answered (or withdrawn) for good.
PERMISSION_RESOLVED: Final = "_acp-agent/permission_resolved"


class _Asking:
    """One question while it waits: who was asked, and the first answer."""

    def __init__(self) -> None:
        self.asked: set[str] = set()
        #: Asked, and left before answering: never asked again.
        self.gone: set[str] = set()
        self.answer: tuple[str, types.RequestPermissionResponse | None] | None = None
        self.done = anyio.Event()


class QuestionBroker:
    """The session's `PermissionPrompter` on the server (see the module docstring)."""

    def __init__(self, audience: SessionAudience) -> None:
        self._audience = audience
        #: Questions waiting now, by tool call id.
        self.pending: dict[str, PermissionQuestion] = {}

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        request = permission_request(self._audience.session_id, question)
        asking = _Asking()
        self.pending[question.call_id] = question
        try:
            async with anyio.create_task_group() as asks:
                while not asking.done.is_set():
                    for client_id, viewer in self._audience.askers().items():
                        if client_id not in asking.asked and client_id not in asking.gone:
                            asking.asked.add(client_id)
                            asks.start_soon(self._ask_one, viewer, question, request, asking)
                    async with anyio.create_task_group() as wake:
                        wake.start_soon(_wake_on, self._audience.changed, wake.cancel_scope)
                        wake.start_soon(_wake_on, asking.done.wait, wake.cancel_scope)
                # The first answer is in: the others are withdrawn ($/cancel_request).
                asks.cancel_scope.cancel()
        finally:
            del self.pending[question.call_id]
            # Told to the others; withdrawn (the turn was cancelled): to everyone asked.
            answered_by, response = asking.answer or (None, None)
            self._resolved(question, asking, answered_by, response)
        if response is None:
            return PermissionAnswer(None)
        return permission_answer(question, response)

    async def _ask_one(
        self,
        viewer: Viewer,
        question: PermissionQuestion,
        request: types.RequestPermissionRequest,
        asking: _Asking,
    ) -> None:
        response: types.RequestPermissionResponse | None
        try:
            if viewer.asker is None:
                response = await viewer.connection.request(
                    methods.SESSION_REQUEST_PERMISSION, request
                )
            else:  # asked in its own protocol (v2): its answer in v1's terms
                chosen = await viewer.asker(self._audience.session_id, question)
                response = _response(chosen)
        except (PeerDisconnected, ConnectionClosed, OSError) as exc:
            # Gone: not an answer. Others may answer; a controller attaching later will.
            logger.info("%s left before answering %s: %s", viewer.client_id, request, exc)
            asking.gone.add(viewer.client_id)
            return
        except AcpError as exc:
            logger.info("%s could not answer a question: %s", viewer.client_id, exc)
            response = None
        if asking.answer is None:
            asking.answer = (viewer.client_id, response)
            asking.done.set()

    def _resolved(
        self,
        question: PermissionQuestion,
        asking: _Asking,
        client_id: str | None,
        response: types.RequestPermissionResponse | None,
    ) -> None:
        outcome: dict[str, Any] = {"outcome": "cancelled"}
        if response is not None and isinstance(response.outcome, types.SelectedPermissionOutcome):
            outcome = {"outcome": "selected", "optionId": str(response.outcome.option_id)}
        params = {
            "sessionId": self._audience.session_id,
            "toolCallId": question.call_id,
            "outcome": outcome,
            "resolvedBy": client_id,
        }
        told = {client_id}
        for viewer in self._audience.others(client_id or ""):
            told.add(viewer.client_id)
            viewer.tell(PERMISSION_RESOLVED, params)
        # A client asked as the turn's holder (not attached) learns it too, if it is not
        # the one that answered: its request was withdrawn.
        for cid, viewer in self._audience.askers().items():
            if cid in asking.asked and cid not in told:
                viewer.tell(PERMISSION_RESOLVED, params)


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
