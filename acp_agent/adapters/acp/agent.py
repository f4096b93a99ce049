"""The ACP face of acp-agent: initialize, sessions, prompts, cancellation and load.

`AcpAgent` answers the agent methods over an `AgentConnection`:

- `session/new` creates a core session (its id is the ACP session id) in the
  store, records the session's model and the default permission mode
  (`ConfigurationAdopted`), and attaches the editor's side: its files and
  terminals (`AcpClientBridge`) and the person (`AcpPermissionPrompter`).
- `session/prompt` starts a turn on the main branch (the loop runs it) and
  answers with its stop reason once every update of the turn was sent.
  A prompt arriving mid-turn waits for the turn before it.
- `session/cancel` cancels the running turn (recorded, then settled) and the
  prompts still waiting; each answers `cancelled`, even a turn that finished
  at the same moment.
- `session/load` opens a stored session (a restart rebuilds it: a call that
  was running is settled as interrupted, never run again), replays its
  conversation as `session/update`s, and answers `{}` after the replay.
- The editor's `mcpServers` (new and load) start in the background with the
  user's and the project's (`acp_agent.mcp`); neither answer waits for them.
  A prompt waits a few seconds at most for servers still connecting.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

import acp_agent
from acp_agent.adapters.acp.client_side import AcpClientBridge, AcpPermissionPrompter
from acp_agent.adapters.acp.host import RuntimeHost, RuntimeUnavailable
from acp_agent.adapters.acp.session import AcpSession, PendingPrompt, SessionStream
from acp_agent.adapters.acp.updates import ModelFacts, UpdateTranslator
from acp_agent.core import (
    AlreadyStarted,
    ServiceNotFound,
    Session,
    SessionHeld,
    SessionId,
    StoreError,
    StoreNotFound,
    TurnEnded,
    TurnId,
    new_id,
)
from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.converter import get_converter
from protocol.errors import InternalError, InvalidParams, InvalidRequest, ResourceNotFound

if TYPE_CHECKING:
    # The capabilities and MCP load with the first session, not before `initialize`:
    # an editor times spawn -> initialize.
    from acp_agent.capabilities.model_source import ModelSource
    from acp_agent.mcp import McpSessionTools

__all__ = ("AGENT_NAME", "AGENT_TITLE", "AcpAgent")

logger = logging.getLogger(__name__)

AGENT_NAME = "acp-agent"
AGENT_TITLE = "acp-agent"

#: Content kinds a prompt may carry: what `promptCapabilities` promises.
#: Embedded `resource` blocks are accepted (embeddedContext); image and audio are not.
_ACCEPTED_CONTENT = (types.TextContent, types.ResourceLink, types.EmbeddedResource)
#: How long a prompt whose handler is cancelled waits for its turn to settle.
_SETTLE_BUDGET_S = 0.5
_STOP_REASONS = {reason.value: reason for reason in types.StopReason}


class AcpAgent:
    """Serves the agent methods on one connection."""

    def __init__(self, connection: AgentConnection, host: RuntimeHost, models: ModelSource) -> None:
        self._connection = connection
        self._host = host
        self._models = models
        self._sessions: dict[str, AcpSession] = {}
        self._client_capabilities: types.ClientCapabilities | None = None
        self._converter = get_converter()

    def register(self) -> None:
        """Register the handlers on the connection."""
        self._connection.register(methods.INITIALIZE, self.initialize)
        self._connection.register(methods.SESSION_NEW, self.new_session)
        self._connection.register(methods.SESSION_LOAD, self.load_session)
        self._connection.register(methods.SESSION_PROMPT, self.prompt)
        self._connection.register(methods.SESSION_CANCEL, self.cancel)

    # --- initialize -----------------------------------------------------------------------

    def initialize(self, params: types.InitializeRequest) -> types.InitializeResponse:
        """Negotiate: we speak version 1 whatever the client asks (never echo, never fail)."""
        logger.info("Client asked for protocol version %s", params.protocol_version)
        self._client_capabilities = params.client_capabilities
        return types.InitializeResponse(
            protocol_version=types.PROTOCOL_VERSION,
            agent_capabilities=types.AgentCapabilities(
                load_session=True,
                prompt_capabilities=types.PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                # stdio, streamable HTTP and SSE servers are all connected (acp_agent.mcp).
                mcp_capabilities=types.McpCapabilities(http=True, sse=True),
            ),
            auth_methods=[],
            agent_info=types.Implementation(
                name=AGENT_NAME, title=AGENT_TITLE, version=acp_agent.__version__
            ),
        )

    # --- sessions -------------------------------------------------------------------------

    async def new_session(self, params: types.NewSessionRequest) -> types.NewSessionResponse:
        """Start a session rooted at the absolute `cwd`; MCP servers are kept for later."""
        if not os.path.isabs(params.cwd):
            raise InvalidParams("Invalid params: cwd: must be an absolute path")
        runtime = await self._runtime()
        session = await _store_call(runtime.create_session(params.cwd))
        acp_session = self._attach(session)
        controls = acp_session.controls
        from acp_agent.capabilities.permissions import PermissionMode
        from acp_agent.capabilities.session_controls import MODE_KEY, MODEL_KEY

        await controls.adopt(
            session.main, {MODEL_KEY: controls.model_id, MODE_KEY: PermissionMode.ASK.value}
        )
        self._subscribe(acp_session)
        await _connect_mcp(session, params.mcp_servers)
        logger.info("Session %s started", session.id)
        return types.NewSessionResponse(session_id=session.id)

    async def load_session(self, params: types.LoadSessionRequest) -> types.LoadSessionResponse:
        """Open a stored session and replay its conversation before answering `{}`."""
        if not os.path.isabs(params.cwd):
            raise InvalidParams("Invalid params: cwd: must be an absolute path")
        session_id = str(params.session_id)
        acp_session = self._sessions.get(session_id)
        if acp_session is None:
            runtime = await self._runtime()
            try:
                session = await runtime.load_session(SessionId(session_id))
            except StoreNotFound:
                raise ResourceNotFound(
                    f"Resource not found: no session {session_id}", {"sessionId": session_id}
                ) from None
            except SessionHeld as exc:
                raise InvalidRequest(f"Invalid request: {exc}") from None
            except StoreError as exc:
                raise InternalError(f"Internal error: {exc}") from None
            acp_session = self._attach(session)
            fresh = True
        else:
            fresh = False
        main = acp_session.session.main
        covered = main.timeline.last_published_seq
        replay = self._translator(replay=True)
        stream = acp_session.stream
        for event in await main.read(lte=covered):
            for update in replay.translate(event):
                stream.send(update)
            if fresh:
                stream.translator.translate(event)  # the live translator learns the history
        if fresh:
            main.dispatcher.subscribe(stream, after=covered)
        await _connect_mcp(acp_session.session, params.mcp_servers)
        logger.info("Session %s loaded (%d events replayed)", session_id, covered)
        return types.LoadSessionResponse()

    def _attach(self, session: Session) -> AcpSession:
        from acp_agent.capabilities.assembly import MODEL_LOOP, SESSION_CONTROLS

        controls = session.scope.get(SESSION_CONTROLS)
        controls.client = AcpClientBridge(self._connection, session.id, self._client_capabilities)
        controls.prompter = AcpPermissionPrompter(self._connection, session.id)
        stream = SessionStream(self._connection, session.id, self._translator(replay=False))
        acp_session = AcpSession(session, controls, session.main.scope.get(MODEL_LOOP), stream)
        self._sessions[session.id] = acp_session
        return acp_session

    def _subscribe(self, acp_session: AcpSession) -> None:
        main = acp_session.session.main
        main.dispatcher.subscribe(acp_session.stream, after=main.timeline.last_published_seq)

    def _translator(self, *, replay: bool) -> UpdateTranslator:
        capabilities = self._client_capabilities or types.ClientCapabilities()
        streams = bool((capabilities.meta or {}).get("terminal_output") is True)
        return UpdateTranslator(
            replay=replay, terminal_output=streams, model_facts=self._model_facts
        )

    def _model_facts(self, model_id: str) -> ModelFacts:
        pricing = self._models.pricing(model_id)
        cost: Callable[[int, int, int, int], float] | None = None
        if pricing is not None:
            from acp_agent.models import UsageReported

            def cost(inputs: int, outputs: int, cache_read: int, cache_write: int) -> float:
                usage = UsageReported(inputs, outputs, cache_read, cache_write)
                return pricing.cost_usd(usage)

        return ModelFacts(self._models.context_window(model_id), cost)

    async def _runtime(self) -> Any:
        try:
            return await self._host.runtime()
        except RuntimeUnavailable as exc:
            raise InternalError(f"Internal error: {exc}") from None

    # --- prompts --------------------------------------------------------------------------

    async def prompt(self, params: types.PromptRequest) -> types.PromptResponse:
        """Run one turn; a prompt arriving mid-turn waits for the turn before it."""
        acp_session = self._session(params.session_id)
        for index, block in enumerate(params.prompt):
            if not isinstance(block, _ACCEPTED_CONTENT):
                kind = getattr(block, "type", type(block).__name__)
                raise InvalidParams(
                    f"Invalid params: prompt[{index}]: {kind} content is not supported"
                )
        content = [self._converter.unstructure(block) for block in params.prompt]
        # Registered before the first await, so a cancel right behind us sees it.
        pending = PendingPrompt()
        acp_session.prompts.append(pending)
        try:
            return await self._run_prompt(acp_session, pending, content)
        finally:
            acp_session.prompts.remove(pending)

    async def _run_prompt(
        self, acp_session: AcpSession, pending: PendingPrompt, content: list[dict[str, Any]]
    ) -> types.PromptResponse:
        cancelled = types.PromptResponse(stop_reason=types.StopReason.CANCELLED)
        with pending.wait_scope:
            mcp = _mcp(acp_session.session)
            if mcp is not None:
                await mcp.wait_for_startup()  # bounded: servers still making a first connection
            await acp_session.turn_lock.acquire()
        if pending.wait_scope.cancelled_caught:
            return cancelled
        try:
            if pending.cancelled:
                return cancelled
            turn_id = TurnId(new_id("turn"))
            pending.turn_id = turn_id
            try:
                await acp_session.loop.start_turn(turn_id, content)
                if pending.cancelled:  # a cancel came while the turn was starting
                    await acp_session.session.main.cancel_turn(turn_id)
                outcome = await acp_session.stream.wait_turn_over(turn_id)
            except AlreadyStarted as exc:
                raise InternalError(f"Internal error: {exc}") from None
            except anyio.get_cancelled_exc_class():
                # The request itself was cancelled ($/cancel_request, or input ended):
                # the turn is cancelled too, and gets a moment to record how it ended.
                with anyio.CancelScope(shield=True), anyio.move_on_after(_SETTLE_BUDGET_S):
                    await acp_session.session.main.cancel_turn(turn_id)
                raise
        finally:
            acp_session.turn_lock.release()
        if pending.cancelled:
            # Cancelled, even if the turn happened to finish at the same moment.
            logger.info("Turn %s in session %s cancelled", turn_id, acp_session.session_id)
            return cancelled
        if not isinstance(outcome.ending, TurnEnded):
            return cancelled  # interrupted without our cancel: the session is closing
        stop = _STOP_REASONS.get(outcome.ending.stop_reason)
        if stop is None:
            raise InternalError("Internal error: the turn failed; see the agent log for details")
        meta = None
        if outcome.failure is not None:
            failure = outcome.failure
            meta = {"acp-agent": {"error": {"kind": failure.error, "message": failure.message}}}
        return types.PromptResponse(stop_reason=stop, meta=meta)

    async def cancel(self, params: types.CancelNotification) -> None:
        """Cancel the session's running and waiting turns; ignore idle or unknown sessions."""
        acp_session = self._sessions.get(params.session_id)
        if acp_session is None:
            logger.info("Cancel for unknown session %s ignored", params.session_id)
            return
        cancelled = await acp_session.cancel()
        logger.info("Cancel for session %s: %d prompt(s)", params.session_id, cancelled)

    def _session(self, session_id: str) -> AcpSession:
        acp_session = self._sessions.get(session_id)
        if acp_session is None:
            raise ResourceNotFound(
                f"Resource not found: no session {session_id}", {"sessionId": session_id}
            )
        return acp_session


def _mcp(session: Session) -> McpSessionTools | None:
    from acp_agent.mcp import MCP_SESSION

    try:
        return session.scope.get(MCP_SESSION)
    except ServiceNotFound:
        return None  # assembled without MCP


async def _connect_mcp(session: Session, servers: list[types.McpServer] | None) -> None:
    """Start the session's MCP servers in the background (this never waits for them)."""
    mcp = _mcp(session)
    if mcp is not None:
        from acp_agent.adapters.acp.mcp_servers import editor_mcp_servers

        await mcp.connect(editor_mcp_servers(servers))


async def _store_call(awaitable: Any) -> Any:
    try:
        return await awaitable
    except StoreError as exc:
        raise InternalError(f"Internal error: {exc}") from None
