"""Permission questions over v2: `session/request_permission` with a tool-call subject.

The question is the v1 adapter's (`permission_request`: the call, its preview, its
options), rewritten into v2's form: a `title`, the question as `description`, the
call as a `tool_call` subject. While the person decides, the session's foreground
state is `requires_action`, and `running` again once they answered (v2: work blocked on
user action says so).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from acp_agent.adapters.acp._client_bridge import permission_request, unanswered
from acp_agent.adapters.acp2._wire import v2_update
from acp_agent.agent import PermissionAnswer, PermissionChoice, PermissionQuestion
from protocol.converter import shared_converter
from protocol.errors import (
    AcpError,
    ConnectionClosed,
    PeerError,
)

if TYPE_CHECKING:
    from acp_agent.adapters.acp2._stream import V2Stream
    from protocol.connection import AgentConnection

__all__ = ("V2PermissionPrompter", "ask_v2", "v2_request")

logger = logging.getLogger(__name__)


class V2PermissionPrompter:
    """Asks the person over v2, the session's state said on `stream`."""

    def __init__(self, connection: AgentConnection, session_id: str, stream: V2Stream) -> None:
        self._connection = connection
        self._session_id = session_id
        self._stream = stream

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        try:
            chosen = await ask_v2(self._connection, self._session_id, question, self._stream)
        except (AcpError, PeerError, ConnectionClosed) as exc:
            return unanswered(question, exc)
        if chosen is None:
            return PermissionAnswer(None)
        offered = {option.option_id: option.choice for option in question.options}
        choice = offered.get(chosen)
        if choice is None:
            logger.warning("the client chose an option we did not offer; taken as reject")
            return PermissionAnswer(PermissionChoice.REJECT_ONCE)
        return PermissionAnswer(choice)


async def ask_v2(
    connection: AgentConnection,
    session_id: str,
    question: PermissionQuestion,
    stream: V2Stream,
) -> str | None:
    """Ask `question` of the v2 client on `connection`: the option id it chose, or None
    (it answered cancelled). Its session's `stream` to that client says `requires_action`
    while a question waits (`V2Stream.asking`). The request's errors (the client gone, an
    error answer) are raised."""
    from protocol.v2 import methods, types

    converter = shared_converter(include_unstable=True)
    request = converter.structure(v2_request(session_id, question), types.RequestPermissionRequest)
    with stream.asking():
        response = await connection.request(methods.SESSION_REQUEST_PERMISSION, request)
    outcome = response.outcome
    if isinstance(outcome, types.SelectedPermissionOutcome):
        return str(outcome.option_id)
    return None


def v2_request(session_id: str, question: PermissionQuestion) -> dict[str, Any]:
    """The v2 `session/request_permission` params (wire JSON) asking `question`."""
    v1 = shared_converter(include_unstable=True).unstructure(
        permission_request(session_id, question)
    )
    call = v2_update({"sessionUpdate": "tool_call_update", **v1["toolCall"]}) or {}
    call.pop("sessionUpdate", None)
    content = call.get("content") or []
    description = None
    if content and isinstance(content[0], dict) and content[0].get("type") == "content":
        description = content[0].get("content", {}).get("text")
    params: dict[str, Any] = {
        "sessionId": session_id,
        "title": question.title,
        "subject": {"type": "tool_call", "toolCall": call},
        "options": v1["options"],
    }
    if description:
        params["description"] = description
    if v1.get("_meta"):
        params["_meta"] = v1["_meta"]
    return params
