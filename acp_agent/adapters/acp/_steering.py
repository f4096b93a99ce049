"""`_session/steering`: a message for the turn that is running, as the peers speak it.

    {"sessionId": "sess_…", "prompt": [ContentBlock, …],
     "_meta": {"steering": {"idleBehavior": "promptRequired"}}}     (`_meta` optional)
    -> {"outcome": "injected", "_meta": {"acp-agent": {"messageId": "msg_…"}}}
     | {"outcome": "promptRequired", "reason": "noRunningTurn"}

The contract is the one `@agentclientprotocol/claude-agent-acp` and
`@agentclientprotocol/codex-acp` serve, advertised the way they advertise it
(`initialize`'s top-level `_meta: {"steering": {"supported": true}}`). With a
turn running, the message joins it (`SessionHandle.steer`) and the answer is
`injected` at once: the turn records it at its next step boundary (after the
current model reply or tool batch), shows it there as a `user_message_chunk`
(live, and on `session/load` where it was taken in), and its next model
request reads it; a turn that ends before another request records it right
before its end. With no turn running (or one ending, or a slash command),
the answer is `promptRequired` and nothing is recorded or sent: the client
still holds the message and sends it with `session/prompt`. A steering
request never starts a turn (the peers' legacy `startedNewTurn` would stream
between prompts), so the opt-in `idleBehavior: "promptRequired"` is what
happens whether a client sends it or not; any other `idleBehavior` is
-32602, as the peers answer it.

The content is checked and recorded as a prompt's is (`_prompt_content`);
text starting with `/` is the person's words, not a slash command.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from acp_agent.adapters.acp._client_input import stored_id
from protocol import types
from protocol.converter import shared_converter
from protocol.errors import InvalidParams

if TYPE_CHECKING:
    from acp_agent.adapters.acp._session import AcpSession
    from acp_agent.models import ModelSource

__all__ = ("STEERING_META", "STEERING_METHOD", "steer_session", "steering_params")

#: The extension method's name, as the peers name it.
STEERING_METHOD: Final = "_session/steering"
#: What `initialize`'s `_meta` says of it.
STEERING_META: Final = {"steering": {"supported": True}}
#: -32602's message for a prompt with no content block (steering's and a turn's).
EMPTY_PROMPT: Final = "Invalid params: prompt: must be a non-empty array of content blocks"
#: The one idle behaviour a client may ask for (and the one it gets).
_PROMPT_REQUIRED: Final = "promptRequired"


def steering_params(params: Any) -> tuple[str, list[types.ContentBlock]]:
    """The `sessionId` and `prompt` of a steering request; -32602 naming what is wrong."""
    if not isinstance(params, Mapping):
        raise InvalidParams("Invalid params: params must be an object")
    session_id, prompt = params.get("sessionId"), params.get("prompt")
    if not isinstance(session_id, str) or not session_id:
        raise InvalidParams("Invalid params: sessionId: must be a session id")
    if not isinstance(prompt, list) or not prompt:
        raise InvalidParams(EMPTY_PROMPT)
    meta = params.get("_meta")
    steering = meta.get("steering") if isinstance(meta, Mapping) else None
    if steering is not None and not isinstance(steering, Mapping):
        raise InvalidParams("Invalid params: _meta.steering: must be an object")
    idle = steering.get("idleBehavior") if steering is not None else None
    if idle is not None and idle != _PROMPT_REQUIRED:
        raise InvalidParams("Invalid params: _meta.steering.idleBehavior: unsupported")
    converter = shared_converter()
    blocks = []
    for index, block in enumerate(prompt):
        try:
            blocks.append(converter.structure(block, cast(Any, types.ContentBlock)))
        except Exception:
            raise InvalidParams(f"Invalid params: prompt[{index}]: not a content block") from None
    return stored_id(session_id), blocks


async def steer_session(
    acp_session: AcpSession, blocks: list[types.ContentBlock], models: ModelSource
) -> dict[str, Any]:
    """Give `blocks` to the session's running turn; the answer as the wire has it."""
    from acp_agent.adapters.acp._prompt_content import PromptContent
    from acp_agent.agent import PromptTooLarge

    handle = acp_session.handle
    controls = handle.controls
    content = PromptContent(
        controls.client,
        controls.roots,
        images=models.traits(controls.model_id).images,
        model=controls.model_id,
    )
    content.check(blocks)
    if handle.running_turn is None:
        return _prompt_required()  # nothing to read the links for
    recorded, sent = await content.record(blocks)
    try:
        message_id = handle.steer(recorded, sent=sent)
    except PromptTooLarge as exc:
        raise InvalidParams(f"Invalid params: prompt: {exc}") from None
    if message_id is None:
        return _prompt_required()
    return {"outcome": "injected", "_meta": {"acp-agent": {"messageId": message_id}}}


def _prompt_required() -> dict[str, Any]:
    return {"outcome": _PROMPT_REQUIRED, "reason": "noRunningTurn"}
