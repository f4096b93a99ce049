"""The ACP face of acp-agent: the agent methods, negotiation, and the open sessions.

`AcpAgent` answers the agent methods over an `AgentConnection` (each method's
docstring says what it does and when its updates are sent): a table from ACP
methods to the calls of the runtime's handle (`Agent`) and the session
handles (`SessionHandle`, `acp_agent.agent`), plus the wire's translation.
What holds for all:

- An ACP session id is a session id; `AcpSession` (`_session.py`) is the
  editor's side of one open session, `SessionStream` (`_stream.py`) its updates.
- Updates about a session the editor learns of from an answer (`session/new`,
  `resume`, `fork`: its commands, its title) are sent right after that answer;
  a `session/load` replays and sends them before it; nothing follows it.
- `session/prompt` runs one turn, or a slash command (`prompt_turn.py`).
- The editor's `mcpServers` start in the background with the user's and the
  project's (`acp_agent.mcp`); no answer waits for them.
- The runtime's errors are answered as `wire_errors.py` says; what a client
  names is checked first (`client_input.py`).
- `systemPrompt` (new, load, resume, fork) is the client's own instructions
  (advertised with `--unstable`, the vendored schema marking it unstable; applied
  whenever a client sends it), kept with the session (`client_input.client_instructions`; see
  `acp_agent.capabilities.context._instructions`): a load or resume that sends
  none keeps the kept ones, one that sends some replaces them; a fork keeps its
  source's unless it sends its own. What cannot be applied is -32602, and no
  session is created, opened or forked.
- `additionalDirectories` (new, load, resume, fork) are the workspace's other
  roots. A request activates exactly the ones it sends (none when it sends none,
  as ACP says); a list it sends is also kept with the session, which `session/list`
  reports (a fork keeps its source's unless it sends its own).

The capabilities and MCP load with the first session, not before `initialize`:
an editor times spawn -> initialize.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio

import acp_agent
from acp_agent.adapters.acp._auth import auth_methods, check_method
from acp_agent.adapters.acp._client_input import (
    absolute_path,
    additional_directories,
    client_instructions,
    fork_anchor,
    stored_id,
    workspace_directory,
)
from acp_agent.adapters.acp._host import RuntimeHost
from acp_agent.adapters.acp._listing import session_info, session_page
from acp_agent.adapters.acp._opening import OpeningSessions
from acp_agent.adapters.acp._rewind import REWIND_METHOD
from acp_agent.adapters.acp._steering import (
    EMPTY_PROMPT,
    STEERING_META,
    STEERING_METHOD,
    steer_session,
    steering_params,
)
from acp_agent.adapters.acp._warmup import Warmup
from acp_agent.adapters.acp._wire_errors import wire_errors
from acp_agent.people import local_person
from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.errors import InvalidParams, ResourceNotFound
from protocol.methods import MessageKind

if TYPE_CHECKING:
    # The runtime's handle and the update translation load with the first session, not
    # with `initialize` (imported where they are used).
    from acp_agent.adapters.acp._session import AcpSession, EditorSide
    from acp_agent.adapters.acp._updates import UpdateTranslator
    from acp_agent.agent import (
        Agent,
        ClientInstructions,
        FrontEnd,
        NewSession,
        SessionHandle,
        SessionId,
        StoreOpening,
    )
    from acp_agent.models import ModelSource

__all__ = ("AGENT_NAME", "AGENT_TITLE", "AcpAgent")

logger = logging.getLogger(__name__)

AGENT_NAME = "acp-agent"
AGENT_TITLE = "acp-agent"

#: How long after the `initialize` answer the warm-up waits for a `session/new` to
#: answer first (an editor sends it at once; a person's first prompt comes seconds later).
WARMUP_AFTER_S: Final = 0.1


class AcpAgent:
    """Serves the agent methods on one connection.

    **Parameters:**

    * `connection`: the connection to the editor.
    * `host`: opens the runtime on first use.
    * `models`: the models sessions use and pick from.
    * `config_dir`: the person's config directory (commands, rules, `config.toml`).
    * `clock`: wall time (permission rule revocations).
    * `warmup`: started once `initialize` is answered (see `_warmup`); None: none.
    * `editor_timeout_s`: how long each request to the editor (`fs/*`, `terminal/*`)
      waits for its answer; None: the default (`DEFAULT_REQUEST_TIMEOUT_S`).
    * `mode`: the permission mode new sessions start in, by name (`ACP_AGENT_MODE`;
      None or unknown: the default, `controls.mode_named`).
    * `person`: whom this connection works for (`acp_agent.people`; None: the local
      person). New sessions are theirs; only theirs are listed, loaded, forked or deleted.
    """

    def __init__(
        self,
        connection: AgentConnection,
        host: RuntimeHost,
        models: ModelSource,
        *,
        config_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
        warmup: Warmup | None = None,
        editor_timeout_s: float | None = None,
        mode: str | None = None,
        person: str | None = None,
    ) -> None:
        self._mode = mode
        self.person = local_person() if person is None else person
        self._warmup = warmup
        self._editor_timeout_s = editor_timeout_s
        self._connection = connection
        self._host = host
        self._models = models
        self._config_dir = config_dir
        self._clock = clock
        self._sessions: dict[str, AcpSession] = {}
        #: Sessions answered and still being assembled (or that failed to be).
        self._opening = OpeningSessions(connection.start_soon)
        self._client_capabilities: types.ClientCapabilities | None = None

    @property
    def assembling(self) -> bool:
        """Whether a session answered by `session/new` is being assembled now (the
        warm-up gives way to it: both import the same modules, and sharing the GIL
        made a script's first prompt, which waits for the assembly, slower)."""
        return self._opening.running

    async def aclose(self) -> None:
        """Stop the warm-up and the sessions still being assembled (at shutdown, before
        the runtime closes)."""
        if self._warmup is not None:
            self._warmup.stop()
        await self._opening.aclose()

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
        register(REWIND_METHOD, self.rewind, kind=MessageKind.REQUEST)
        register(STEERING_METHOD, self.steer, kind=MessageKind.REQUEST)
        if self._connection.unstable:
            register(methods.SESSION_FORK, self.fork_session)

    # --- initialize and authenticate ------------------------------------------------------

    def initialize(self, params: types.InitializeRequest) -> types.InitializeResponse:
        """Negotiate: we speak version 1 whatever the client asks (never echo, never fail).

        Advertised: `loadSession`; prompts with text, resource links, embedded
        resources, and images when the default model takes them; MCP over stdio,
        HTTP and SSE; `session/list`, `resume`, `close`, `delete`, and `fork` with
        `--unstable`; `additionalDirectories` on all of those that open a session, and
        `systemPrompt` (both modes) with `--unstable`;
        one auth method per provider key variable, and one for naming a model; in
        `_meta`, the `_session/steering` extension, as the peers advertise it.
        """
        logger.info("Client asked for protocol version %s", params.protocol_version)
        self._client_capabilities = params.client_capabilities
        if self._warmup is not None:
            # The store opens at once (a `session/new` waits for it); the imports wait.
            self._connection.after_response(self._host.open_store_early)
            self._connection.after_response(self._warm_up_when_idle)
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
                    additional_directories=types.SessionAdditionalDirectoriesCapabilities(),
                    fork=types.SessionForkCapabilities() if unstable else None,
                    # An unstable field no client capability negotiates: said with
                    # --unstable only (a systemPrompt sent anyway is applied).
                    system_prompt=types.SessionSystemPromptCapabilities(
                        mode=types.SessionSystemPromptModeCapabilities(
                            override=types.SessionSystemPromptOverrideCapabilities()
                        )
                    )
                    if unstable
                    else None,
                ),
            ),
            auth_methods=auth_methods(self._models, self._config_file()),
            agent_info=types.Implementation(
                name=AGENT_NAME, title=AGENT_TITLE, version=acp_agent.__version__
            ),
            meta=dict(STEERING_META),
        )

    def authenticate(self, params: types.AuthenticateRequest) -> types.AuthenticateResponse:
        """Succeed when the method's provider is configured now; say what is missing if not."""
        check_method(self._models, str(params.method_id))
        return types.AuthenticateResponse()

    def _config_file(self) -> str:
        return str(self._config_dir / "config.toml") if self._config_dir else "config.toml"

    def _warm_up_when_idle(self) -> None:
        """Start the warm-up `WARMUP_AFTER_S` after `initialize` is answered, unless a
        `session/new` answer starts it first: an editor that opens a session at once
        gets its answer without the warm-up's imports taking turns from it."""
        warmup = self._warmup
        if warmup is None:
            return

        async def start_later() -> None:
            await anyio.sleep(WARMUP_AFTER_S)
            warmup.start()

        self._connection.start_soon(start_later, name="warm-up timer")

    def _start_warmup_after_response(self) -> None:
        if self._warmup is not None:
            self._connection.after_response(self._warmup.start)

    # --- opening sessions -----------------------------------------------------------------

    async def new_session(self, params: types.NewSessionRequest) -> types.NewSessionResponse:
        """Start a session rooted at the absolute `cwd` (and its `additionalDirectories`).

        The answer waits only for the session to be stored, through the store as far as
        it is open (for SQLite, the file: neither the store's module nor the runtime's
        are needed); it is assembled behind the answer, its commands follow, and a
        request about it waits for that (`_opening`). The warm-up starts once it is
        answered, if it has not yet: it would take the loop's turns from this answer.
        """
        cwd = workspace_directory(params.cwd)
        sent = additional_directories(params.additional_directories)
        instructions = client_instructions(params.system_prompt, params.meta)
        from acp_agent.adapters.acp._options import session_settings
        from acp_agent.agent import create_session, other_roots

        with wire_errors():
            opening = await self._host.store()
            # The default model and mode: recorded with the session, which its assembly
            # restores them from.
            new = await create_session(
                opening.write_first,
                cwd,
                models=self._models,
                mode=self._mode,
                at=self._clock(),
                additional_directories=other_roots(cwd, sent),
                instructions=instructions,
                owner=self.person,
            )
        session_id = new.session_id
        servers = params.mcp_servers
        self._connection.after_response(
            lambda: self._opening.assemble(
                session_id, lambda: self._assemble_new(opening, new, servers)
            )
        )
        self._start_warmup_after_response()
        logger.info("Session %s started", session_id)
        return types.NewSessionResponse(
            session_id=session_id, **session_settings(new, self._models)
        )

    async def _assemble_new(
        self, opening: StoreOpening, new: NewSession, servers: Sequence[types.McpServer] | None
    ) -> None:
        """Open a session `new_session` stored and answered, then send its commands."""
        from acp_agent.adapters.acp._mcp_servers import connect_mcp
        from acp_agent.agent import release_unopened

        try:
            agent = await self._agent()
        except BaseException:
            # Never opened (shutting down, or no runtime): its lease goes back now.
            await release_unopened(opening, new.record)
            raise
        side = self._side(new.session_id)
        with wire_errors():  # a session that cannot be opened gives its lease back
            handle = await agent.open_created(new, side.front_end())
        acp_session = self._attach(handle, side)
        with wire_errors():
            await handle.activate(new.record.additional_directories)
        await acp_session.subscribe()
        await connect_mcp(handle, servers)
        await acp_session.send_commands()

    async def load_session(self, params: types.LoadSessionRequest) -> types.LoadSessionResponse:
        """Replay a stored session's conversation and commands, then answer; nothing follows."""
        from acp_agent.adapters.acp._mcp_servers import connect_mcp

        absolute_path(params.cwd, "cwd")
        sent = additional_directories(params.additional_directories)
        instructions = client_instructions(params.system_prompt, params.meta)
        session_id = stored_id(params.session_id)
        self._refuse_child(session_id, methods.SESSION_LOAD)
        acp_session = await self._open(session_id)
        await _activate(acp_session, sent, instructions)
        replayed = await acp_session.replay()
        await connect_mcp(acp_session.handle, params.mcp_servers)
        await acp_session.send_commands()
        # The model's context is folded while the person reads the replay, not in the
        # first prompt (nor before this answer).
        self._connection.after_response(acp_session.handle.warm)
        logger.info("Session %s loaded (%d events replayed)", session_id, replayed)
        return types.LoadSessionResponse(**acp_session.settings())

    async def resume_session(
        self, params: types.ResumeSessionRequest
    ) -> types.ResumeSessionResponse:
        """Re-attach a stored session without replaying it; commands and title follow."""
        from acp_agent.adapters.acp._mcp_servers import connect_mcp

        absolute_path(params.cwd, "cwd")
        sent = additional_directories(params.additional_directories)
        instructions = client_instructions(params.system_prompt, params.meta)
        self._refuse_child(str(params.session_id), methods.SESSION_RESUME)
        acp_session = await self._open(stored_id(params.session_id))
        await _activate(acp_session, sent, instructions)
        await acp_session.learn_and_subscribe()
        await connect_mcp(acp_session.handle, params.mcp_servers)
        await acp_session.send_session_updates_after_response()
        self._connection.after_response(acp_session.handle.warm)
        logger.info("Session %s resumed", acp_session.session_id)
        return types.ResumeSessionResponse(**acp_session.settings())

    async def fork_session(self, params: types.ForkSessionRequest) -> types.ForkSessionResponse:
        """A new session with the history of `sessionId`; the original is left as it was.

        Without `_meta`, the fork has the whole conversation (up to the last turn
        that ended, if one is running). `_meta: {"acp-agent": {...}}` names one
        anchor: `throughPrompt: n` keeps only the first `n` prompts with everything
        they produced; `throughMessage: id` keeps everything through the turn that
        message belongs to; `beforeMessage: id` (a person's message) keeps what came
        before it, so it can be sent anew. Message ids are those chunks and prompt
        answers carry. The fork keeps the source's model, mode and thinking effort,
        and its title, marked "(fork)"; it keeps the source's additional directories
        unless it sends its own, and activates only those it sends.
        """
        from acp_agent.adapters.acp._mcp_servers import connect_mcp
        from acp_agent.agent import ForkAnchor

        absolute_path(params.cwd, "cwd")
        sent = additional_directories(params.additional_directories)
        instructions = client_instructions(params.system_prompt, params.meta)
        anchor = fork_anchor(params.meta)
        source_id = stored_id(params.session_id)
        self._refuse_child(source_id, methods.SESSION_FORK)
        agent = await self._agent()
        await self._opening.settled(source_id)
        sides: list[EditorSide] = []

        def front_end(session_id: SessionId) -> FrontEnd:
            sides.append(self._side(str(session_id)))
            return sides[-1].front_end()

        with wire_errors(source_id, field=anchor.field if anchor else None):
            fork = await agent.fork(
                source_id,
                anchor=None
                if anchor is None
                else ForkAnchor(anchor.through_prompt, anchor.message_id, anchor.before),
                front_end=front_end,
                additional_directories=sent,
                instructions=instructions,
                person=self.person,
            )
        acp_fork = self._attach(fork, sides[-1])
        await acp_fork.learn_and_subscribe()
        await connect_mcp(fork, params.mcp_servers)
        await acp_fork.send_session_updates_after_response()
        return types.ForkSessionResponse(session_id=fork.id, **acp_fork.settings())

    async def rewind(self, params: object) -> dict[str, object]:
        """`_acp-agent/rewind` (an extension): back to just before a person's message,
        its files and its conversation (see `adapters/acp/_rewind.py`)."""
        from acp_agent.adapters.acp._rewind import rewind_params, rewind_session

        session_id, message_id = rewind_params(params)
        acp_session = await self._session(session_id, REWIND_METHOD)
        return await rewind_session(acp_session, message_id)

    async def _open(self, session_id: str) -> AcpSession:
        """The session, attached: open here already, or loaded from the store."""
        await self._opening.settled(session_id)
        acp_session = self._sessions.get(session_id)
        if acp_session is None:
            agent = await self._agent()
            side = self._side(session_id)
            with wire_errors(session_id):
                handle = await agent.load(session_id, side.front_end(), person=self.person)
            acp_session = self._attach(handle, side)
        return acp_session

    def _side(self, session_id: str) -> EditorSide:
        """What the editor brings to session `session_id`, given to it as it opens."""
        from acp_agent.adapters.acp._session import EditorSide
        from acp_agent.adapters.acp._updates import takes_subagents

        return EditorSide(
            self._connection,
            session_id,
            client_capabilities=self._client_capabilities,
            translator=lambda: self._translator(replay=False),
            subagents=takes_subagents(self._client_capabilities),
            editor_timeout_s=self._editor_timeout_s,
        )

    def _attach(self, handle: SessionHandle, side: EditorSide) -> AcpSession:
        from acp_agent.adapters.acp._session import AcpSession

        acp_session = AcpSession(
            handle,
            side,
            connection=self._connection,
            models=self._models,
            replay_translator=lambda: self._translator(replay=True),
        )
        self._sessions[str(handle.id)] = acp_session
        return acp_session

    def _translator(self, *, replay: bool) -> UpdateTranslator:
        from acp_agent.adapters.acp._updates import translator_for

        return translator_for(self._client_capabilities, self._models, replay=replay)

    async def _agent(self) -> Agent:
        with wire_errors():
            return await self._host.agent()

    # --- listing, closing and deleting ------------------------------------------------------

    async def list_sessions(self, params: types.ListSessionsRequest) -> types.ListSessionsResponse:
        """A page of stored sessions, most recently updated first, optionally in one `cwd`."""
        cwd = None if params.cwd is None else absolute_path(params.cwd, "cwd")
        agent = await self._agent()
        with wire_errors():
            page, cursor = await session_page(
                agent, cwd=cwd, cursor=params.cursor, owner=self.person
            )
        return types.ListSessionsResponse(
            sessions=[session_info(record) for record in page], next_cursor=cursor
        )

    async def close_session(self, params: types.CloseSessionRequest) -> types.CloseSessionResponse:
        """Cancel the session's prompts (they answer `cancelled` first), then unload it.

        A session that is not open here has nothing to close.
        """
        self._refuse_child(str(params.session_id), methods.SESSION_CLOSE)
        await self._opening.settled(str(params.session_id))
        acp_session = self._sessions.pop(str(params.session_id), None)
        if acp_session is not None:
            await acp_session.close()
        return types.CloseSessionResponse()

    async def delete_session(
        self, params: types.DeleteSessionRequest
    ) -> types.DeleteSessionResponse:
        """Close the session if open, then delete it; an unknown id is nothing to delete."""
        session_id = stored_id(params.session_id)
        self._refuse_child(session_id, methods.SESSION_DELETE)
        await self._opening.settled(session_id)
        acp_session = self._sessions.pop(session_id, None)
        if acp_session is not None:
            await acp_session.close()
        agent = await self._agent()
        with wire_errors(session_id):
            await agent.delete(session_id, person=self.person)
        return types.DeleteSessionResponse()

    # --- settings --------------------------------------------------------------------------

    async def set_mode(self, params: types.SetSessionModeRequest) -> types.SetSessionModeResponse:
        """Switch the permission mode; the editor gets the mode and the option set first."""
        from acp_agent.agent import MODE_KEY

        acp_session = await self._session(params.session_id, methods.SESSION_SET_MODE)
        await acp_session.adopt(acp_session.change(MODE_KEY, str(params.mode_id), "modeId"))
        return types.SetSessionModeResponse()

    async def set_config_option(
        self, params: types.SetSessionConfigOptionRequest
    ) -> types.SetSessionConfigOptionResponse:
        """Change one option; the answer carries the complete option set."""
        acp_session = await self._session(params.session_id, methods.SESSION_SET_CONFIG_OPTION)
        if not isinstance(params, types.SetSessionConfigOptionRequestValueId):
            raise InvalidParams(f"Invalid params: {params.config_id}: takes a value id")
        values = acp_session.change(
            str(params.config_id), str(params.value), "value", option_field="configId"
        )
        await acp_session.adopt(values, config_update=False)
        options = acp_session.settings()["config_options"]
        return types.SetSessionConfigOptionResponse(config_options=options)

    # --- prompts --------------------------------------------------------------------------

    async def prompt(self, params: types.PromptRequest) -> types.PromptResponse:
        """Run one turn (or a command).

        A prompt arriving mid-turn is queued: it waits for the turns before it and runs
        as a turn of its own; each prompt is answered at its own turn's end. A message
        for the running turn is `_session/steering`'s.
        """
        from acp_agent.adapters.acp._prompt_turn import run_prompt

        if not params.prompt:  # as `_session/steering` says: a turn needs something to answer
            raise InvalidParams(EMPTY_PROMPT)
        acp_session = await self._session(params.session_id, methods.SESSION_PROMPT)
        return await run_prompt(acp_session, params.prompt, self._models)

    async def steer(self, params: object) -> dict[str, object]:
        """`_session/steering` (an extension): a message for the running turn, taken in at
        its next step boundary; with none running, `promptRequired` and nothing happens
        (see `adapters/acp/_steering.py`)."""
        session_id, blocks = steering_params(params)
        acp_session = await self._session(session_id, STEERING_METHOD)
        return await steer_session(acp_session, blocks, self._models)

    async def cancel(self, params: types.CancelNotification) -> None:
        """Cancel the session's running and waiting turns; ignore idle or unknown sessions.

        A subagent session's id cancels that child's current step only.
        """
        await self._opening.settled(str(params.session_id))
        acp_session = self._sessions.get(params.session_id)
        parent = self._parent_of(str(params.session_id))
        if parent is not None and parent.subagents is not None:
            stopped = await parent.subagents.cancel(str(params.session_id))
            logger.info("Cancel for subagent session %s: %s", params.session_id, stopped)
            return
        if acp_session is None:
            logger.info("Cancel for unknown session %s ignored", params.session_id)
            return
        cancelled = await acp_session.handle.cancel()
        logger.info("Cancel for session %s: %d prompt(s)", params.session_id, cancelled)

    def _parent_of(self, session_id: str) -> AcpSession | None:
        """The open session whose branch `session_id` is shown as a subagent session."""
        for acp_session in self._sessions.values():
            if acp_session.subagents is not None and acp_session.subagents.is_child(session_id):
                return acp_session
        return None

    def _refuse_child(self, session_id: str, method: str) -> None:
        """Refuse `method` on a subagent session's id (-32602): it takes only cancel."""
        parent = self._parent_of(session_id)
        if parent is not None:
            from acp_agent.adapters.acp._subagents import refuse

            raise refuse(session_id, parent.session_id, method)

    async def _session(self, session_id: str, method: str) -> AcpSession:
        """The open session `session_id` (waiting for its assembly if it is still being
        assembled); -32002 if there is none."""
        await self._opening.ready(session_id)
        acp_session = self._sessions.get(session_id)
        if acp_session is None:
            self._refuse_child(session_id, method)
            raise ResourceNotFound(
                f"Resource not found: no session {session_id}", {"sessionId": session_id}
            )
        return acp_session


async def _activate(
    acp_session: AcpSession,
    sent: tuple[str, ...] | None,
    instructions: ClientInstructions | None,
) -> None:
    """Give a loaded or resumed session the roots the request sent, none if it sent none
    (ACP: "when omitted or empty, no additional roots are activated"); a list it sent
    replaces the one kept with the session, which is kept otherwise. Instructions it
    sent replace the kept ones; none sent keeps them."""
    with wire_errors(acp_session.session_id):
        await acp_session.handle.activate(sent)
        if instructions is not None:
            await acp_session.handle.set_instructions(instructions)
