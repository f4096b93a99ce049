"""`_acp-agent/rewind`: an ACP extension request rewinding a session to a message.

    {"sessionId": "sess_…", "messageId": "turn_…"}
    -> {"messageId", "rewound", "restored", "removed", "conflicts", "notUndone"}

The message id is one a prompt's answer returned (`_meta["acp-agent"].messageId`,
the id its replayed `user_message_chunk`s carry). The session goes back to just
before that message: the files the agent changed since are put back, and the
conversation after it is left out from then on (`SessionHandle.rewind`).
A conflict (a file changed outside the agent, or a path that now leads outside
the workspace through a link) changes nothing and is listed with `rewound:
false`. Refused (-32600) while a prompt, a branch or a job of the session runs;
-32602 for a message the session cannot go back to. No `session/update` is
sent: the next `session/load` shows the rewind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from acp_agent.adapters.acp._client_input import stored_id
from protocol.errors import InvalidParams, InvalidRequest

if TYPE_CHECKING:
    from acp_agent.adapters.acp._session import AcpSession

__all__ = ("REWIND_METHOD", "rewind_params", "rewind_session")

#: The extension method's name (`_` marks an ACP extension).
REWIND_METHOD: Final = "_acp-agent/rewind"


def rewind_params(params: Any) -> tuple[str, str]:
    """The `sessionId` and `messageId` of a rewind request; -32602 naming what is wrong."""
    if not isinstance(params, Mapping):
        raise InvalidParams("Invalid params: params must be an object")
    session_id, message_id = params.get("sessionId"), params.get("messageId")
    if not isinstance(session_id, str):
        raise InvalidParams("Invalid params: sessionId: must be a session id")
    if not isinstance(message_id, str) or not message_id:
        raise InvalidParams("Invalid params: messageId: must be a message id")
    return stored_id(session_id), message_id


async def rewind_session(acp_session: AcpSession, message_id: str) -> dict[str, Any]:
    """Rewind `acp_session` to just before `message_id`; the result as the wire has it."""
    from acp_agent.agent import NoRewindPoint, RewindRefused, SessionBusy

    try:
        outcome = await acp_session.handle.rewind(message_id)
    except SessionBusy:
        raise InvalidRequest("Invalid request: a prompt is running; cancel it first") from None
    except NoRewindPoint as exc:
        raise InvalidParams(f"Invalid params: messageId: {exc}") from None
    except RewindRefused as exc:
        raise InvalidRequest(f"Invalid request: {exc}") from None
    return outcome.as_json()
