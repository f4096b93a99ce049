"""The ACP face of acp-agent: initialize, sessions, prompts and cancellation.

Answers the baseline agent methods over an `AgentConnection` with the
scripted model behind them. Turns use anyio: one `CancelScope` per prompt,
so `session/cancel` ends the turn and the prompt still answers with
`stopReason: "cancelled"` as a result, never an error.
"""

from __future__ import annotations

import logging
import os
from contextlib import aclosing

import anyio

import acp_agent
from acp_agent.adapters.acp.session import AcpSession, new_session_id
from acp_agent.models.scripted import ScriptedModel, TextDelta
from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.errors import InvalidParams, ResourceNotFound

__all__ = ("AGENT_NAME", "AGENT_TITLE", "AcpAgent")

logger = logging.getLogger(__name__)

AGENT_NAME = "acp-agent"
AGENT_TITLE = "acp-agent"

#: Content kinds a prompt may carry: what `promptCapabilities` promises.
#: Embedded `resource` blocks are accepted (embeddedContext); image and audio are not.
_ACCEPTED_CONTENT = (types.TextContent, types.ResourceLink, types.EmbeddedResource)


class AcpAgent:
    """Serves the baseline agent methods on one connection."""

    def __init__(self, connection: AgentConnection, model: ScriptedModel):
        self._connection = connection
        self._model = model
        self._sessions: dict[str, AcpSession] = {}

    def register(self) -> None:
        """Register the handlers on the connection."""
        self._connection.register(methods.INITIALIZE, self.initialize)
        self._connection.register(methods.SESSION_NEW, self.new_session)
        self._connection.register(methods.SESSION_PROMPT, self.prompt)
        self._connection.register(methods.SESSION_CANCEL, self.cancel)

    def initialize(self, params: types.InitializeRequest) -> types.InitializeResponse:
        """Negotiate: we speak version 1 whatever the client asks (never echo, never fail)."""
        logger.info("Client asked for protocol version %s", params.protocol_version)
        return types.InitializeResponse(
            protocol_version=types.PROTOCOL_VERSION,
            agent_capabilities=types.AgentCapabilities(
                load_session=False,
                prompt_capabilities=types.PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=types.McpCapabilities(http=False, sse=False),
            ),
            auth_methods=[],
            agent_info=types.Implementation(
                name=AGENT_NAME, title=AGENT_TITLE, version=acp_agent.__version__
            ),
        )

    def new_session(self, params: types.NewSessionRequest) -> types.NewSessionResponse:
        """Start a session rooted at the absolute `cwd`; MCP servers are kept for later."""
        if not os.path.isabs(params.cwd):
            raise InvalidParams("Invalid params: cwd: must be an absolute path")
        session = AcpSession(new_session_id(), params.cwd, list(params.mcp_servers))
        self._sessions[session.session_id] = session
        logger.info(
            "Session %s started (%d MCP servers stored)",
            session.session_id,
            len(session.mcp_servers),
        )
        return types.NewSessionResponse(session_id=session.session_id)

    async def prompt(self, params: types.PromptRequest) -> types.PromptResponse:
        """Run one turn; a prompt arriving mid-turn waits for the turn before it."""
        session = self._session(params.session_id)
        for index, block in enumerate(params.prompt):
            if not isinstance(block, _ACCEPTED_CONTENT):
                kind = getattr(block, "type", type(block).__name__)
                raise InvalidParams(
                    f"Invalid params: prompt[{index}]: {kind} content is not supported"
                )
        # Registered before the first await, so a cancel right behind us sees it.
        scope = anyio.CancelScope()
        session.turn_scopes.add(scope)
        try:
            with scope:
                async with session.turn_lock:
                    turn_index = session.turns_started
                    session.turns_started += 1
                    await self._play_reply(session, turn_index)
        finally:
            session.turn_scopes.discard(scope)
        if scope.cancel_called:
            # Cancelled, even if the reply happened to finish at the same moment.
            logger.info("Turn in session %s cancelled", session.session_id)
            return types.PromptResponse(stop_reason=types.StopReason.CANCELLED)
        return types.PromptResponse(stop_reason=types.StopReason.END_TURN)

    async def _play_reply(self, session: AcpSession, turn_index: int) -> None:
        async with aclosing(self._model.stream_reply(turn_index)) as reply:
            async for output in reply:
                content = types.TextContent(text=output.text)
                update: types.SessionUpdate = (
                    types.AgentMessageChunk(content=content)
                    if isinstance(output, TextDelta)
                    else types.AgentThoughtChunk(content=content)
                )
                self._connection.notify(
                    methods.SESSION_UPDATE,
                    types.SessionNotification(session_id=session.session_id, update=update),
                )

    def cancel(self, params: types.CancelNotification) -> None:
        """Cancel the session's running and waiting turns; ignore idle or unknown sessions."""
        session = self._sessions.get(params.session_id)
        if session is None:
            logger.info("Cancel for unknown session %s ignored", params.session_id)
            return
        cancelled = session.cancel_turns()
        logger.info("Cancel for session %s: %d turn(s)", params.session_id, cancelled)

    def _session(self, session_id: str) -> AcpSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise ResourceNotFound(
                f"Resource not found: no session {session_id}", {"sessionId": session_id}
            )
        return session
