"""The ACP face of acp-agent: initialize, sessions, settings, prompts and commands.

`AcpAgent` answers the agent methods over an `AgentConnection`:

- `initialize` answers version 1 and what works (see `initialize()`).
- `authenticate` checks that the method's model provider is configured now
  (`acp_agent.adapters.acp.auth`). Without any model a session still opens,
  and each prompt is answered with how to configure one.
- `session/new` creates a core session (its id is the ACP session id) in the
  store, records the session's model and the default permission mode
  (`ConfigurationAdopted`), and attaches the editor's side: its files and
  terminals (`AcpClientBridge`) and the person (`AcpPermissionPrompter`).
- `session/load` opens a stored session (a restart rebuilds it: a call that
  was running is settled as interrupted, never run again), replays its
  conversation as `session/update`s, sends the commands, and answers after
  them, with the modes and config options; nothing follows that answer.
- `session/resume` opens a stored session without replay; `session/fork`
  (unstable) copies a session's history into a new one (see `fork_session()`).
- `session/new`, `session/resume` and `session/fork` send the session's
  commands (and title) only after their answer is written: an editor drops
  updates about a session it does not know yet.
- `session/list` pages through stored sessions, newest first;
  `session/close` cancels the session's prompts and unloads it;
  `session/delete` also removes it from the store.
- `session/set_mode` and `session/set_config_option` change the permission
  mode, the model or the thinking effort; each change is recorded, and the
  editor gets `current_mode_update` / `config_option_update` (always the
  complete set) before the answer.
- `session/prompt` starts a turn on the main branch (the loop runs it) and
  answers with its stop reason once every update of the turn was sent; a
  slash command runs instead of a turn (`acp_agent.capabilities.commands`).
  A prompt arriving mid-turn waits for the turn before it. After the first
  exchange the session gets a title (`session_info_update`), before the answer.
- `session/cancel` cancels the running turn (recorded, then settled) and the
  prompts still waiting; each answers `cancelled`, even a turn that finished
  at the same moment.
- The editor's `mcpServers` (new, load, resume, fork) start in the background
  with the user's and the project's (`acp_agent.mcp`); no answer waits for
  them. A prompt waits a few seconds at most for servers still connecting.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

import acp_agent
from acp_agent.adapters.acp.auth import auth_methods, check_method
from acp_agent.adapters.acp.client_side import AcpClientBridge, AcpPermissionPrompter
from acp_agent.adapters.acp.host import RuntimeHost, RuntimeUnavailable
from acp_agent.adapters.acp.listing import (
    PAGE_SIZE,
    decode_cursor,
    encode_cursor,
    session_info,
)
from acp_agent.adapters.acp.session import (
    AcpSession,
    DeliveryStopped,
    PendingPrompt,
    SessionStream,
)
from acp_agent.adapters.acp.updates import ModelFacts, UpdateTranslator
from acp_agent.core import (
    NO_SEQ,
    AlreadyStarted,
    Branch,
    Seq,
    ServiceNotFound,
    Session,
    SessionHeld,
    SessionId,
    SessionPosition,
    StoreError,
    StoreFull,
    StoreNotFound,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    UserInputAdopted,
    new_id,
)
from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.converter import get_converter
from protocol.errors import (
    InternalError,
    InvalidParams,
    InvalidRequest,
    ResourceNotFound,
)

if TYPE_CHECKING:
    # The capabilities and MCP load with the first session, not before `initialize`:
    # an editor times spawn -> initialize.
    from acp_agent.capabilities.commands import CommandInvocation
    from acp_agent.capabilities.loop import PromptTooLarge
    from acp_agent.capabilities.model_source import ModelSource
    from acp_agent.mcp import McpSessionTools

__all__ = ("AGENT_NAME", "AGENT_TITLE", "FORK_META_KEY", "AcpAgent")

logger = logging.getLogger(__name__)

AGENT_NAME = "acp-agent"
AGENT_TITLE = "acp-agent"

#: `session/fork` `_meta[FORK_META_KEY]["throughPrompt"]`: keep the first n prompts.
FORK_META_KEY = "acp-agent"
#: How long a prompt whose handler is cancelled waits for its turn to settle.
_SETTLE_BUDGET_S = 0.5
#: How long `session/close` waits for the session's prompts to answer `cancelled`.
_CLOSE_BUDGET_S = 5.0
_STOP_REASONS = {reason.value: reason for reason in types.StopReason}


class AcpAgent:
    """Serves the agent methods on one connection.

    **Parameters:**

    * `connection`: the connection to the editor.
    * `host`: opens the runtime on first use.
    * `models`: the models sessions use and pick from.
    * `config_dir`: the person's config directory (commands, rules, `config.toml`).
    * `clock`: wall time (permission rule revocations).
    """

    def __init__(
        self,
        connection: AgentConnection,
        host: RuntimeHost,
        models: ModelSource,
        *,
        config_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._connection = connection
        self._host = host
        self._models = models
        self._config_dir = config_dir
        self._clock = clock
        self._sessions: dict[str, AcpSession] = {}
        self._client_capabilities: types.ClientCapabilities | None = None
        self._converter = get_converter()

    def register(self) -> None:
        """Register the handlers on the connection (`session/fork` only when unstable)."""
        register = self._connection.register
        register(methods.INITIALIZE, self.initialize)
        register(methods.AUTHENTICATE, self.authenticate)
        register(methods.SESSION_NEW, self.new_session)
        register(methods.SESSION_LOAD, self.load_session)
        register(methods.SESSION_RESUME, self.resume_session)
        register(methods.SESSION_LIST, self.list_sessions)
        register(methods.SESSION_CLOSE, self.close_session)
        register(methods.SESSION_DELETE, self.delete_session)
        register(methods.SESSION_SET_MODE, self.set_mode)
        register(methods.SESSION_SET_CONFIG_OPTION, self.set_config_option)
        register(methods.SESSION_PROMPT, self.prompt)
        register(methods.SESSION_CANCEL, self.cancel)
        if self._connection.unstable:
            register(methods.SESSION_FORK, self.fork_session)

    # --- initialize and authenticate ------------------------------------------------------

    def initialize(self, params: types.InitializeRequest) -> types.InitializeResponse:
        """Negotiate: we speak version 1 whatever the client asks (never echo, never fail).

        Advertised: `loadSession`; prompts with text, resource links, embedded
        resources, and images when the default model takes them; MCP over stdio,
        HTTP and SSE; `session/list`, `resume`, `close`, `delete`, and `fork` with
        `--unstable`; one auth method per provider key variable, and one for naming
        a model.
        """
        logger.info("Client asked for protocol version %s", params.protocol_version)
        self._client_capabilities = params.client_capabilities
        unstable = self._connection.unstable
        return types.InitializeResponse(
            protocol_version=types.PROTOCOL_VERSION,
            agent_capabilities=types.AgentCapabilities(
                load_session=True,
                prompt_capabilities=types.PromptCapabilities(
                    image=self._models.traits(None).images, audio=False, embedded_context=True
                ),
                # stdio, streamable HTTP and SSE servers are all connected (acp_agent.mcp).
                mcp_capabilities=types.McpCapabilities(http=True, sse=True),
                session_capabilities=types.SessionCapabilities(
                    list=types.SessionListCapabilities(),
                    resume=types.SessionResumeCapabilities(),
                    close=types.SessionCloseCapabilities(),
                    delete=types.SessionDeleteCapabilities(),
                    fork=types.SessionForkCapabilities() if unstable else None,
                ),
            ),
            auth_methods=auth_methods(self._models, self._config_file()),
            agent_info=types.Implementation(
                name=AGENT_NAME, title=AGENT_TITLE, version=acp_agent.__version__
            ),
        )

    def authenticate(self, params: types.AuthenticateRequest) -> types.AuthenticateResponse:
        """Succeed when the method's provider is configured now; say what is missing if not."""
        check_method(self._models, str(params.method_id))
        return types.AuthenticateResponse()

    def _config_file(self) -> str:
        return str(self._config_dir / "config.toml") if self._config_dir else "config.toml"

    # --- opening sessions -----------------------------------------------------------------

    async def new_session(self, params: types.NewSessionRequest) -> types.NewSessionResponse:
        """Start a session rooted at the absolute `cwd`; its commands follow the answer."""
        cwd = _absolute(params.cwd, "cwd")
        from acp_agent.capabilities.permissions import PermissionMode
        from acp_agent.capabilities.session_controls import MODE_KEY, MODEL_KEY

        runtime = await self._runtime()
        session = await _store_call(runtime.create_session(cwd))
        acp_session = self._attach(session)
        controls = acp_session.controls
        await controls.adopt(
            session.main, {MODEL_KEY: controls.model_id, MODE_KEY: PermissionMode.ASK.value}
        )
        self._subscribe(acp_session)
        await _connect_mcp(session, params.mcp_servers)
        await self._send_session_updates_after_response(acp_session)
        logger.info("Session %s started", session.id)
        return types.NewSessionResponse(session_id=session.id, **self._settings(acp_session))

    async def load_session(self, params: types.LoadSessionRequest) -> types.LoadSessionResponse:
        """Replay a stored session's conversation and commands, then answer; nothing follows."""
        _absolute(params.cwd, "cwd")
        session_id = _stored_id(params.session_id)
        acp_session = self._sessions.get(session_id)
        fresh = acp_session is None
        if acp_session is None:
            acp_session = self._attach(await self._open_stored(session_id))
        main = acp_session.session.main
        covered = main.timeline.last_published_seq
        replay = self._translator(replay=True)
        stream = acp_session.stream
        for event in await main.read(lte=covered):
            stream.show(event, replay)
            if fresh:
                stream.learn(event)  # the live translator learns the history
        if fresh:
            stream.attach(main.dispatcher.subscribe(stream, after=covered))
        await _connect_mcp(acp_session.session, params.mcp_servers)
        commands = await self._commands(acp_session)
        stream.send(_commands_update(commands))
        acp_session.listed_commands = commands
        logger.info("Session %s loaded (%d events replayed)", session_id, covered)
        return types.LoadSessionResponse(**self._settings(acp_session))

    async def resume_session(
        self, params: types.ResumeSessionRequest
    ) -> types.ResumeSessionResponse:
        """Re-attach a stored session without replaying it; commands and title follow."""
        _absolute(params.cwd, "cwd")
        session_id = _stored_id(params.session_id)
        acp_session = self._sessions.get(session_id)
        if acp_session is None:
            acp_session = self._attach(await self._open_stored(session_id))
            await self._learn_and_subscribe(acp_session)
        await _connect_mcp(acp_session.session, params.mcp_servers)
        await self._send_session_updates_after_response(acp_session)
        logger.info("Session %s resumed", session_id)
        return types.ResumeSessionResponse(**self._settings(acp_session))

    async def fork_session(self, params: types.ForkSessionRequest) -> types.ForkSessionResponse:
        """A new session with the history of `sessionId`; the original is left as it was.

        Without `_meta`, the fork has the whole conversation (up to the last turn
        that ended, if one is running). `_meta: {"acp-agent": {"throughPrompt": n}}`
        keeps only the first `n` prompts with everything they produced (to go back
        before prompt `k`, fork through `k - 1`). The fork keeps the source's
        model, mode and thinking effort, and its title, marked "(fork)".
        """
        _absolute(params.cwd, "cwd")
        through = _through_prompt(params.meta)
        source_id = _stored_id(params.session_id)
        attached = self._sessions.get(source_id)
        source = attached.session if attached is not None else await self._open_stored(source_id)
        try:
            from acp_agent.capabilities.assembly import SESSION_CONTROLS

            values = _settings_values(source.scope.get(SESSION_CONTROLS))
            cut = await _fork_cut(source.main, through)
            fork = await _store_call(source.fork(source.main, at=cut))
            title = source.record.title
        finally:
            if attached is None:
                with anyio.CancelScope(shield=True):
                    await source.aclose()
        acp_fork = self._attach(fork)
        await acp_fork.controls.adopt(fork.main, values)
        if title:
            await fork.set_title(f"{title} (fork)")
        await self._learn_and_subscribe(acp_fork)
        await _connect_mcp(fork, params.mcp_servers)
        await self._send_session_updates_after_response(acp_fork)
        logger.info("Session %s forked from %s at seq %d", fork.id, source_id, cut)
        return types.ForkSessionResponse(session_id=fork.id, **self._settings(acp_fork))

    async def _open_stored(self, session_id: str) -> Session:
        runtime = await self._runtime()
        try:
            session: Session = await runtime.load_session(SessionId(session_id))
        except StoreNotFound:
            raise ResourceNotFound(
                f"Resource not found: no session {session_id}", {"sessionId": session_id}
            ) from None
        except SessionHeld as exc:
            raise InvalidRequest(f"Invalid request: {exc}") from None
        except StoreError as exc:
            raise InternalError(f"Internal error: {exc}") from None
        return session

    def _attach(self, session: Session) -> AcpSession:
        from acp_agent.adapters.acp.session_commands import build_runner
        from acp_agent.capabilities.assembly import MODEL_LOOP, SESSION_CONTROLS

        controls = session.scope.get(SESSION_CONTROLS)
        controls.client = AcpClientBridge(self._connection, session.id, self._client_capabilities)
        controls.prompter = AcpPermissionPrompter(self._connection, session.id)
        stream = SessionStream(self._connection, session.id, self._translator(replay=False))
        runner = build_runner(
            session, controls, self._models, config_dir=self._config_dir, clock=self._clock
        )
        acp_session = AcpSession(
            session, controls, session.main.scope.get(MODEL_LOOP), stream, runner
        )
        self._sessions[session.id] = acp_session
        return acp_session

    def _subscribe(self, acp_session: AcpSession) -> None:
        main, stream = acp_session.session.main, acp_session.stream
        stream.attach(main.dispatcher.subscribe(stream, after=main.timeline.last_published_seq))

    async def _learn_and_subscribe(self, acp_session: AcpSession) -> None:
        """Subscribe the live stream after what is published, having it learn the history."""
        main, stream = acp_session.session.main, acp_session.stream
        covered = main.timeline.last_published_seq
        for event in await main.read(lte=covered):
            stream.learn(event)
        stream.attach(main.dispatcher.subscribe(stream, after=covered))

    def _translator(self, *, replay: bool) -> UpdateTranslator:
        capabilities = self._client_capabilities or types.ClientCapabilities()
        streams = bool((capabilities.meta or {}).get("terminal_output") is True)
        session_capabilities = capabilities.session
        return UpdateTranslator(
            replay=replay,
            terminal_output=streams,
            model_facts=self._model_facts,
            compaction_updates=(
                session_capabilities is not None and session_capabilities.compaction is not None
            ),
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

    def _not_configured(self) -> str:
        from acp_agent.models import ProviderNotConfigured

        try:
            self._models.open(None)
        except ProviderNotConfigured as exc:
            return str(exc)
        return "No model is configured."

    # --- session-level updates ------------------------------------------------------------

    async def _commands(self, acp_session: AcpSession) -> list[Any]:
        """The session's commands, read now (the templates are files)."""
        return await anyio.to_thread.run_sync(acp_session.commands.commands)

    async def _send_session_updates_after_response(self, acp_session: AcpSession) -> None:
        """Send the commands and the title once the answer to this request is written."""
        commands = await self._commands(acp_session)
        updates: list[types.SessionUpdate] = [_commands_update(commands)]
        if acp_session.session.record.title:
            updates.append(types.SessionInfoUpdate(title=acp_session.session.record.title))
        acp_session.listed_commands = commands

        def send() -> None:
            for update in updates:
                acp_session.stream.send(update)

        self._connection.after_response(send)

    async def _refresh_commands(self, acp_session: AcpSession) -> None:
        """Send the commands again if they changed since they were last sent."""
        commands = await self._commands(acp_session)
        if commands != acp_session.listed_commands:
            acp_session.stream.send(_commands_update(commands))
            acp_session.listed_commands = commands

    def _settings(self, acp_session: AcpSession) -> dict[str, Any]:
        """The `modes` and `configOptions` every session response carries, complete."""
        from acp_agent.adapters.acp.options import config_options, mode_state

        controls = acp_session.controls
        return {
            "modes": mode_state(controls),
            "config_options": config_options(controls, self._models),
        }

    async def _adopt(
        self, acp_session: AcpSession, values: Mapping[str, Any], *, config_update: bool = True
    ) -> None:
        """Record new settings and tell the editor: the mode, and the complete option set."""
        from acp_agent.adapters.acp.options import config_option_update, mode_update
        from acp_agent.capabilities.session_controls import MODE_KEY

        controls = acp_session.controls
        await controls.adopt(acp_session.session.main, values)
        if MODE_KEY in values:
            acp_session.stream.send(mode_update(controls))
        if config_update:
            acp_session.stream.send(config_option_update(controls, self._models))

    async def _set_title(self, acp_session: AcpSession, title: str) -> None:
        await acp_session.session.set_title(title)
        acp_session.stream.send(types.SessionInfoUpdate(title=title))

    # --- listing, closing and deleting ------------------------------------------------------

    async def list_sessions(self, params: types.ListSessionsRequest) -> types.ListSessionsResponse:
        """A page of stored sessions, most recently updated first, optionally in one `cwd`."""
        cwd = None if params.cwd is None else _absolute(params.cwd, "cwd")
        after = None if params.cursor is None else decode_cursor(params.cursor)
        runtime = await self._runtime()
        records = await _store_call(
            runtime.list_sessions(cwd=cwd, limit=PAGE_SIZE + 1, after=after)
        )
        page = records[:PAGE_SIZE]
        cursor = None
        if len(records) > PAGE_SIZE:
            cursor = encode_cursor(SessionPosition.of(page[-1]))
        return types.ListSessionsResponse(
            sessions=[session_info(record) for record in page], next_cursor=cursor
        )

    async def close_session(self, params: types.CloseSessionRequest) -> types.CloseSessionResponse:
        """Cancel the session's prompts (they answer `cancelled` first), then unload it.

        A session that is not open here has nothing to close.
        """
        acp_session = self._sessions.pop(str(params.session_id), None)
        if acp_session is not None:
            await self._close(acp_session)
        return types.CloseSessionResponse()

    async def delete_session(
        self, params: types.DeleteSessionRequest
    ) -> types.DeleteSessionResponse:
        """Close the session if open, then delete it; an unknown id is nothing to delete."""
        session_id = _stored_id(params.session_id)
        acp_session = self._sessions.pop(session_id, None)
        if acp_session is not None:
            await self._close(acp_session)
        runtime = await self._runtime()
        try:
            await runtime.delete_session(SessionId(session_id))
        except SessionHeld as exc:
            raise InvalidRequest(f"Invalid request: {exc}") from None
        except StoreError as exc:
            raise InternalError(f"Internal error: {exc}") from None
        from acp_agent.capabilities.assembly import RESULT_BUDGET

        with contextlib.suppress(ServiceNotFound):  # assembled without the capabilities
            await runtime.scope.get(RESULT_BUDGET).forget_session(session_id)
        logger.info("Session %s deleted", session_id)
        return types.DeleteSessionResponse()

    async def _close(self, acp_session: AcpSession) -> None:
        with anyio.CancelScope(shield=True):
            await acp_session.cancel()
            with anyio.move_on_after(_CLOSE_BUDGET_S):
                await acp_session.wait_prompts_answered()
            acp_session.stream.close()
            await acp_session.session.aclose()
        logger.info("Session %s closed", acp_session.session_id)

    # --- settings --------------------------------------------------------------------------

    async def set_mode(self, params: types.SetSessionModeRequest) -> types.SetSessionModeResponse:
        """Switch the permission mode; the editor gets the mode and the option set first."""
        from acp_agent.capabilities.session_controls import MODE_KEY

        acp_session = self._session(params.session_id)
        values = self._change(acp_session, MODE_KEY, str(params.mode_id), "modeId")
        await self._adopt(acp_session, values)
        return types.SetSessionModeResponse()

    async def set_config_option(
        self, params: types.SetSessionConfigOptionRequest
    ) -> types.SetSessionConfigOptionResponse:
        """Change one option; the answer carries the complete option set."""
        acp_session = self._session(params.session_id)
        if not isinstance(params, types.SetSessionConfigOptionRequestValueId):
            raise InvalidParams(f"Invalid params: {params.config_id}: takes a value id")
        values = self._change(acp_session, str(params.config_id), str(params.value), "value")
        await self._adopt(acp_session, values, config_update=False)
        options = self._settings(acp_session)["config_options"]
        return types.SetSessionConfigOptionResponse(config_options=options)

    def _change(
        self, acp_session: AcpSession, option_id: str, value: str, field: str
    ) -> dict[str, Any]:
        from acp_agent.capabilities.session_controls import InvalidSetting

        try:
            return acp_session.controls.change(option_id, value, self._models)
        except InvalidSetting as exc:
            raise InvalidParams(f"Invalid params: {field}: {exc}") from None

    # --- prompts --------------------------------------------------------------------------

    async def prompt(self, params: types.PromptRequest) -> types.PromptResponse:
        """Run one turn (or a command); a prompt arriving mid-turn waits for the turn before."""
        from acp_agent.adapters.acp.prompt_content import PromptContent

        acp_session = self._session(params.session_id)
        controls = acp_session.controls
        content = PromptContent(
            controls.client,
            controls.roots,
            images=self._models.traits(controls.model_id).images,
            model=controls.model_id,
        )
        content.check(params.prompt)
        # Registered before the first await, so a cancel right behind us sees it.
        pending = PendingPrompt()
        acp_session.add_prompt(pending)
        try:
            return await self._run_prompt(acp_session, pending, params.prompt, content)
        finally:
            acp_session.remove_prompt(pending)

    async def _run_prompt(
        self,
        acp_session: AcpSession,
        pending: PendingPrompt,
        blocks: Sequence[types.ContentBlock],
        reader: Any,
    ) -> types.PromptResponse:
        from acp_agent.capabilities.loop import PromptTooLarge

        cancelled = types.PromptResponse(stop_reason=types.StopReason.CANCELLED)
        with pending.wait_scope:
            mcp = _mcp(acp_session.session)
            if mcp is not None:
                await mcp.wait_for_startup()  # bounded: servers still making a first connection
            await acp_session.turn_lock.acquire()
        if pending.wait_scope.cancelled_caught:
            return cancelled
        turn_id: TurnId | None = None
        storage: StoreError | None = None
        try:
            if pending.cancelled:
                return cancelled
            await self._refresh_commands(acp_session)
            content: list[dict[str, Any]] = await reader.record(blocks)
            if pending.cancelled:
                return cancelled
            invocation, content = self._command_in(acp_session, content)
            if invocation is not None:
                return await self._run_command(acp_session, pending, invocation)
            turn_id = TurnId(new_id("turn"))
            pending.turn_id = turn_id
            try:
                turn = await acp_session.loop.start_turn(turn_id, content)
                if pending.cancelled:  # a cancel came while the turn was starting
                    await acp_session.session.main.cancel_turn(turn_id)
                outcome = await acp_session.stream.wait_turn_over(turn_id, turn)
            except PromptTooLarge as exc:
                return _too_large(acp_session, exc)
            except AlreadyStarted as exc:
                raise InternalError(f"Internal error: {exc}") from None
            except DeliveryStopped:
                logger.exception("turn %s cannot be answered", turn_id)
                raise InternalError(
                    "Internal error: the session's updates stopped; see the agent log"
                ) from None
            except anyio.get_cancelled_exc_class():
                # The request itself was cancelled ($/cancel_request, or input ended):
                # the turn is cancelled too, and gets a moment to record how it ended.
                with anyio.CancelScope(shield=True), anyio.move_on_after(_SETTLE_BUDGET_S):
                    await acp_session.session.main.cancel_turn(turn_id)
                raise
            storage = _store_error_in(outcome.unrecorded) or _store_error_in(turn.failure)
            ended = isinstance(outcome.ending, TurnEnded)
            if storage is None and (
                ended or (pending.cancelled and isinstance(outcome.ending, TurnInterrupted))
            ):
                await self._title_after_exchange(acp_session, content)
        except StoreError as exc:
            # Nothing of the turn could be recorded (a full disk, most likely).
            storage = exc
        finally:
            acp_session.turn_lock.release()
        if pending.cancelled:
            # Cancelled, even if the turn happened to finish at the same moment.
            logger.info("Turn %s in session %s cancelled", turn_id, acp_session.session_id)
            return cancelled
        if storage is not None:
            return _storage_failed(acp_session, storage)
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

    def _command_in(
        self, acp_session: AcpSession, content: list[dict[str, Any]]
    ) -> tuple[CommandInvocation | None, list[dict[str, Any]]]:
        """A built-in command to run, or the content to send (a template expanded)."""
        from acp_agent.adapters.acp.prompt_content import with_sent
        from acp_agent.capabilities.commands import parse_invocation

        runner = acp_session.commands
        templates = {template.spec.name: template for template in runner.templates()}
        builtins = runner.builtin_names()
        invocation = parse_invocation(content, builtins | frozenset(templates))
        if invocation is None:
            return None, content
        if invocation.name in builtins:
            return invocation, content
        # A template is the person's text: recorded expanded, replayed as typed.
        expanded = {"type": "text", "text": templates[invocation.name].expand(invocation.arguments)}
        return None, [with_sent(expanded, content[0]), *content[1:]]

    async def _run_command(
        self, acp_session: AcpSession, pending: PendingPrompt, invocation: CommandInvocation
    ) -> types.PromptResponse:
        """Run a built-in command; its answer is shown, and the prompt ends its turn."""
        host = _CommandHost(self, acp_session)
        reply: str | None = None
        with anyio.CancelScope() as scope:
            pending.command_scope = scope
            if not pending.cancelled:
                reply = await acp_session.commands.run(invocation, host)
        if pending.cancelled or reply is None:
            return types.PromptResponse(stop_reason=types.StopReason.CANCELLED)
        acp_session.stream.send(types.AgentMessageChunk(content=types.TextContent(text=reply)))
        logger.info("Session %s ran /%s", acp_session.session_id, invocation.name)
        return types.PromptResponse(stop_reason=types.StopReason.END_TURN)

    async def _title_after_exchange(
        self, acp_session: AcpSession, content: list[dict[str, Any]]
    ) -> None:
        """Give an untitled session the title of its first prompt, as sent (best effort)."""
        if acp_session.session.record.title:
            return
        from acp_agent.adapters.acp.prompt_content import sent_block
        from acp_agent.capabilities.titles import title_from_prompt

        title = title_from_prompt([sent_block(block) for block in content])
        if title is None:
            return
        try:
            await self._set_title(acp_session, title)
        except Exception:
            logger.warning("session %s could not be titled", acp_session.session_id, exc_info=True)

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


class _CommandHost:
    """What a slash command changes, through the agent (so the editor hears of it)."""

    def __init__(self, agent: AcpAgent, acp_session: AcpSession) -> None:
        self._agent = agent
        self._acp_session = acp_session

    async def adopt(self, values: Mapping[str, Any]) -> None:
        await self._agent._adopt(self._acp_session, values)

    async def set_title(self, title: str) -> None:
        await self._agent._set_title(self._acp_session, title)


def _storage_failed(acp_session: AcpSession, error: StoreError) -> types.PromptResponse:
    """The answer to a prompt the store could not record: the person is told directly
    (nothing can be recorded), and the turn ends normally so the editor is not stuck."""
    kind = "storage_full" if isinstance(error, StoreFull) else "storage_unavailable"
    where = getattr(error, "location", None)
    if isinstance(error, StoreFull):
        text = (
            "The disk is full, so this turn could not be recorded and stopped"
            + (f" (the session store is {where})" if where else "")
            + ". Free some space and send your message again; the session goes on."
        )
    else:
        text = f"The session store failed, so this turn stopped: {error}"
    logger.error("turn in session %s stopped: %s", acp_session.session_id, error)
    acp_session.stream.send(types.AgentMessageChunk(content=types.TextContent(text=text)))
    meta = {"acp-agent": {"error": {"kind": kind, "message": str(error)}}}
    return types.PromptResponse(stop_reason=types.StopReason.END_TURN, meta=meta)


def _too_large(acp_session: AcpSession, error: PromptTooLarge) -> types.PromptResponse:
    """The answer to a message the model cannot take: refused whole, before it is recorded,
    saying how large one may be (the person's words are never cut behind their back)."""
    text = (
        f"This message was not sent: {error}. Send it in smaller parts, or attach large "
        "files as links (the agent reads them with its tools, a part at a time)."
    )
    logger.info("prompt in session %s refused: %s", acp_session.session_id, error)
    acp_session.stream.send(types.AgentMessageChunk(content=types.TextContent(text=text)))
    meta = {
        "acp-agent": {
            "error": {
                "kind": "prompt_too_large",
                "message": str(error),
                "tokens": error.tokens,
                "limit": error.limit,
            }
        }
    }
    return types.PromptResponse(stop_reason=types.StopReason.END_TURN, meta=meta)


def _store_error_in(error: BaseException | None) -> StoreError | None:
    """The store error `error` is or holds (a turn's task group wraps what it raised)."""
    if isinstance(error, StoreError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _store_error_in(inner)
            if found is not None:
                return found
    return None


#: The longest session id a client may name (ours are 37 characters).
_MAX_ID_CHARS = 256
#: The longest path a client may name (Linux's PATH_MAX).
_MAX_PATH_CHARS = 4096


def _stored_id(value: str) -> str:
    """A session id that may be looked up in the store; -32602 for one that cannot be
    stored at all (the store would fail on it, not answer "not found")."""
    if "\x00" in value or len(value) > _MAX_ID_CHARS:
        raise InvalidParams("Invalid params: sessionId: not a session id")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams("Invalid params: sessionId: not valid Unicode") from None
    return value


def _absolute(path: str, field: str) -> str:
    """`path` normalised, if it is one the file system can take; -32602 before anything is
    stored if not (a NUL or a lone surrogate would make a session no one can open)."""
    if "\x00" in path:
        raise InvalidParams(f"Invalid params: {field}: must not contain a NUL character")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams(
            f"Invalid params: {field}: must be valid Unicode (it holds a lone surrogate)"
        ) from None
    if len(path) > _MAX_PATH_CHARS:
        raise InvalidParams(f"Invalid params: {field}: longer than {_MAX_PATH_CHARS} characters")
    if not os.path.isabs(path):
        raise InvalidParams(f"Invalid params: {field}: must be an absolute path")
    return os.path.normpath(path)


def _commands_update(commands: Sequence[Any]) -> types.AvailableCommandsUpdate:
    from acp_agent.adapters.acp.session_commands import commands_update

    return commands_update(commands)


def _settings_values(controls: Any) -> dict[str, Any]:
    from acp_agent.capabilities.session_controls import MODE_KEY, MODEL_KEY, THOUGHT_KEY

    return {
        MODEL_KEY: controls.model_id,
        MODE_KEY: controls.mode.value,
        THOUGHT_KEY: controls.thought_level,
    }


def _through_prompt(meta: Mapping[str, Any] | None) -> int | None:
    ours = (meta or {}).get(FORK_META_KEY)
    if ours is None:
        return None
    through = ours.get("throughPrompt") if isinstance(ours, Mapping) else None
    if isinstance(through, bool) or not isinstance(through, int) or through < 1:
        raise InvalidParams(
            f"Invalid params: _meta.{FORK_META_KEY}.throughPrompt: must be a whole number >= 1"
        )
    return through


async def _fork_cut(branch: Branch, through: int | None) -> Seq:
    """Where a fork's history ends: after the `through`-th prompt's turn, or the last one."""
    prompts: list[TurnId] = []
    endings: dict[TurnId, Seq] = {}
    for event in await branch.read():
        payload = event.payload
        if isinstance(payload, UserInputAdopted):
            prompts.append(TurnId(payload.input_id))
        elif isinstance(payload, TurnEnded | TurnInterrupted):
            endings[payload.turn_id] = event.seq
    last = branch.timeline.last_published_seq
    if through is None:
        if branch.turn is None:
            return last
        cut = max(endings.values(), default=NO_SEQ)
    else:
        if through > len(prompts):
            raise InvalidParams(
                f"Invalid params: _meta.{FORK_META_KEY}.throughPrompt: the session has "
                f"{len(prompts)} prompt(s)"
            )
        ending = endings.get(prompts[through - 1])
        if ending is None:
            raise InvalidParams(
                f"Invalid params: _meta.{FORK_META_KEY}.throughPrompt: prompt {through} "
                "has not finished"
            )
        cut = ending
    while cut < last and not await branch.timeline.is_batch_end(cut):
        cut = Seq(cut + 1)
    return cut


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
