"""The ACP v2 face of acp-agent: the v2 agent methods over the same session handles as v1.

`AcpV2Agent` answers v2's agent methods on an `AgentConnection` whose method
table is v2's (`choice.choose_protocol` switched it at `initialize`). It is the
v1 adapter's sibling: the same runtime handle (`Agent`) and session handles, the
same event translation (`_stream`), different answers:

- `session/prompt` is answered once the person's message is inserted
  (`{messageId}`); the turn runs on and ends with a `state_update` (`_session`);
  sent while a turn runs, the message joins that turn (steering);
- `session/resume` replays from `replayFrom`: `{"type": "start"}`, or after a
  cursor an update carried (`{"type": "_acp-agent/after", "cursor": "<seq>:<part>"}`),
  or nothing when it is omitted; the replay, then a `state_update` snapshot of the
  foreground state (no cursor), are sent before the answer;
- `tool_call/cancel` cuts one call short (its turn goes on), and so does
  `terminal/cancel` of the display terminal showing its command; `terminal/cancel`
  of a background job's terminal stops the job (`_jobs`); `$/cancel_request` is the
  engine's (a request in flight);
- `systemPrompt` (unstable) on `session/new` and `session/resume` is the session's
  instructions, as over v1;
- `auth/login` checks that the method's provider is configured now (as v1's
  `authenticate`); `auth/logout` answers success and changes nothing: acp-agent
  keeps no credentials of its own (provider keys are its environment's), so there
  is no signed-in state to end;
- there are no editor files or terminals in v2: sessions use the agent's own tools,
  and a command run locally streams its output to an agent-owned display terminal
  (`terminal_update`, `terminal_output_chunk`), shown in its tool call's content.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import acp_agent
from acp_agent.adapters.acp._auth import auth_methods, check_method
from acp_agent.adapters.acp._client_input import (
    absolute_path,
    additional_directories,
    stored_id,
    workspace_directory,
)
from acp_agent.adapters.acp._host import RuntimeHost
from acp_agent.adapters.acp._listing import session_page
from acp_agent.adapters.acp._wire_errors import wire_errors
from acp_agent.adapters.acp2._wire import state_update
from protocol import types as v1_types
from protocol.connection import AgentConnection
from protocol.converter import shared_converter
from protocol.errors import InvalidParams, InvalidRequest, ResourceNotFound
from protocol.v2 import methods, types

if TYPE_CHECKING:
    from acp_agent.adapters.acp2._session import V2Session
    from acp_agent.adapters.acp2._stream import V2Translator
    from acp_agent.agent import Agent, ClientInstructions, Event, SessionHandle
    from acp_agent.models import ModelSource

__all__ = ("AFTER_CURSOR", "AcpV2Agent")

logger = logging.getLogger(__name__)

#: How long a resume on this connection waits for the session's turn to be over.
_SETTLE_BUDGET_S = 2.0
#: A display terminal's id is this and the id of the call whose command it shows.
LOCAL_TERMINAL_PREFIX = "local-"
#: Our `replayFrom` type: replay what came after a cursor an update carried.
AFTER_CURSOR = "_acp-agent/after"


class AcpV2Agent:
    """Serves the v2 agent methods on one connection (see the module docstring).

    The parameters are the v1 adapter's (`AcpAgent`): the connection, the runtime's
    host, the models, the config directory, the clock, the new sessions' mode and the
    person this connection works for (None: the local person; new sessions are theirs,
    only theirs are listed, resumed or deleted). `writable` (the app server's) waits
    while the client is behind: a slow client holds back only its own delivery.
    """

    def __init__(
        self,
        connection: AgentConnection,
        host: RuntimeHost,
        models: ModelSource,
        *,
        config_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
        mode: str | None = None,
        person: str | None = None,
        writable: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        from acp_agent.people import local_person

        self.person = local_person() if person is None else person
        self._writable = writable
        self._connection = connection
        self._host = host
        self._models = models
        self._config_dir = config_dir
        self._clock = clock
        self._mode = mode
        self._sessions: dict[str, V2Session] = {}

    def register(self) -> None:
        """Register the v2 handlers (the connection serves v2's method table)."""
        register = self._connection.register
        register(methods.INITIALIZE, self.initialize)
        register(methods.AUTH_LOGIN, self.login)
        register(methods.AUTH_LOGOUT, self.logout)
        register(methods.SESSION_NEW, self.new_session)
        register(methods.SESSION_RESUME, self.resume_session)
        register(methods.SESSION_LIST, self.list_sessions)
        register(methods.SESSION_CLOSE, self.close_session)
        register(methods.SESSION_DELETE, self.delete_session)
        register(methods.SESSION_SET_CONFIG_OPTION, self.set_config_option)
        register(methods.SESSION_PROMPT, self.prompt)
        register(methods.SESSION_CANCEL, self.cancel)
        register(methods.TOOL_CALL_CANCEL, self.cancel_tool_call)
        register(methods.TERMINAL_CANCEL, self.cancel_terminal)

    async def aclose(self) -> None:
        """Stop the turns still running (at shutdown, before the runtime closes)."""
        for v2_session in list(self._sessions.values()):
            await v2_session.aclose()

    # --- initialize and auth ----------------------------------------------------------------

    def initialize(self, params: types.InitializeRequest) -> types.InitializeResponse:
        """Speak version 2: the baseline session methods, `delete`, prompts with embedded
        context (and images when the default model takes them), MCP over HTTP and SSE;
        `systemPrompt` (both modes) with `--unstable` (an unstable capability no client
        negotiates; one sent anyway is applied, as over v1)."""
        logger.info("v2 client %s asked for version %s", params.info.name, params.protocol_version)
        prompt: dict[str, Any] = {"embeddedContext": {}}
        if self._models.traits(None).images:
            prompt["image"] = {}
        capabilities = shared_converter(include_unstable=True).structure(
            {
                "session": {
                    "prompt": prompt,
                    "mcp": {"http": {}, "sse": {}},
                    "delete": {},
                    "additionalDirectories": {},
                    **self._unstable_session_capabilities(),
                }
            },
            types.AgentCapabilities,
        )
        return types.InitializeResponse(
            protocol_version=2,
            info=types.Implementation(
                name="acp-agent", title="acp-agent", version=acp_agent.__version__
            ),
            capabilities=capabilities,
            auth_methods=[
                types.AuthMethodAgent(
                    method_id=str(method.id), name=method.name, description=method.description
                )
                for method in auth_methods(self._models, self._config_file())
                if isinstance(method, v1_types.AuthMethodAgent)
            ],
        )

    def _unstable_session_capabilities(self) -> dict[str, Any]:
        if not self._connection.unstable:
            return {}
        return {"systemPrompt": {"mode": {"override": {}}}}

    def login(self, params: types.LoginAuthRequest) -> types.LoginAuthResponse:
        """Succeed when the method's provider is configured now; say what is missing if not."""
        check_method(self._models, str(params.method_id))
        return types.LoginAuthResponse()

    def logout(self, params: types.LogoutAuthRequest) -> types.LogoutAuthResponse:
        """Nothing to end: acp-agent holds no credentials of its own (see the module)."""
        return types.LogoutAuthResponse()

    def _config_file(self) -> str:
        return str(self._config_dir / "config.toml") if self._config_dir else "config.toml"

    # --- opening sessions -------------------------------------------------------------------

    async def new_session(self, params: types.NewSessionRequest) -> types.NewSessionResponse:
        """Start and open a session rooted at `cwd` (and its `additionalDirectories`)."""
        from acp_agent.agent import create_session, other_roots, release_unopened

        cwd = workspace_directory(params.cwd)
        sent = additional_directories(params.additional_directories)
        servers = _v1_servers(params.mcp_servers)
        instructions = _instructions(params.system_prompt)
        with wire_errors():
            opening = await self._host.store()
            new = await create_session(
                opening.write_first,
                cwd,
                models=self._models,
                mode=self._mode,
                at=self._clock(),
                owner=self.person,
                additional_directories=other_roots(cwd, sent),
                instructions=instructions,
            )
        session_id = str(new.record.session_id)
        try:
            agent = await self._agent()
        except BaseException:
            await release_unopened(opening, new.record)
            raise
        v2_session = self._make(session_id)
        with wire_errors():
            handle = await agent.open_created(new, self._front_end(v2_session, session_id))
            await handle.activate(new.record.additional_directories)
        await self._attach(v2_session, handle, replay=None, events=[], covered=None)
        await _connect_mcp(handle, servers)
        logger.info("v2 session %s started", session_id)
        return types.NewSessionResponse(
            session_id=session_id,
            config_options=self._options(handle),
            available_commands=await _commands(handle),
        )

    async def resume_session(
        self, params: types.ResumeSessionRequest
    ) -> types.ResumeSessionResponse:
        """Open a stored session; replay from `replayFrom` (none when omitted) before the
        answer, then stream what follows."""
        absolute_path(params.cwd, "cwd")
        sent = additional_directories(params.additional_directories)
        session_id = stored_id(params.session_id)
        after = _replay_point(params.replay_from)
        servers = _v1_servers(params.mcp_servers)
        instructions = _instructions(params.system_prompt)
        v2_session, _ = await self._resume(session_id, after, sent, instructions)
        handle = v2_session.handle
        await _connect_mcp(handle, servers)
        logger.info("v2 session %s resumed (replay %s)", session_id, after)
        return types.ResumeSessionResponse(
            config_options=self._options(handle), available_commands=await _commands(handle)
        )

    async def _resume(
        self,
        session_id: str,
        replay: tuple[int, int] | bool | None,
        sent: Sequence[str] | None,
        instructions: ClientInstructions | None = None,
    ) -> tuple[V2Session, int]:
        """Open the stored session here (or follow it anew, if open here already) with
        the roots `sent` and the client's `instructions` (None: those kept), replay its
        history as `replay` says (see `_attach`), then send the foreground state now
        (v2: every resume sends this snapshot, replay or not). Returns it with the
        position its live updates continue from."""
        open_here = self._sessions.get(session_id)
        if open_here is not None and not open_here.handle.open:
            del self._sessions[session_id]  # closed meanwhile (another client's close)
            open_here = None
        if open_here is not None:
            # Resumed again on this connection: the same handle, followed anew.
            if not await open_here.settled(_SETTLE_BUDGET_S):
                raise InvalidRequest(
                    "Invalid request: a turn of this session is running; resume it once idle",
                    {"sessionId": session_id},
                )
            v2_session = open_here
            handle = open_here.handle
            await open_here.unfollow()
            open_here.stream.restart(self._translator())
            with wire_errors(session_id):
                await handle.activate(sent)
                if instructions is not None:
                    await handle.set_instructions(instructions)
        else:
            agent = await self._agent()
            v2_session = self._make(session_id)
            with wire_errors(session_id):
                handle = await agent.load(
                    session_id, self._front_end(v2_session, session_id), person=self.person
                )
                await handle.activate(sent)
                if instructions is not None:
                    await handle.set_instructions(instructions)
        covered, events = await handle.history()
        await self._attach(v2_session, handle, replay=replay, events=events, covered=covered)
        running = v2_session.busy or handle.running_turn is not None
        v2_session.stream.send(state_update("running" if running else "idle"))
        return v2_session, int(covered)

    def _make(self, session_id: str) -> V2Session:
        """A session's v2 side, before its handle opens (the prompter needs its stream)."""
        from acp_agent.adapters.acp2._session import V2Session
        from acp_agent.adapters.acp2._stream import V2Stream

        stream = V2Stream(self._connection, session_id, self._translator(), writable=self._writable)
        return V2Session(stream, self._models)

    def _translator(self) -> V2Translator:
        """A fresh translator of one stream: v1's, for a client that takes plan
        operations, notices and compaction updates (v2 has them all)."""
        from acp_agent.adapters.acp._updates import translator_for
        from acp_agent.adapters.acp2._stream import V2Translator

        capabilities = shared_converter(include_unstable=True).structure(
            {
                "plan": {},
                "session": {"notices": {}, "compaction": {}},
                "_meta": {"terminal_output": True},
            },
            v1_types.ClientCapabilities,
        )
        return V2Translator(
            translator_for(capabilities, self._models, replay=False),
            translator_for(capabilities, self._models, replay=True),
        )

    def _front_end(self, v2_session: V2Session, session_id: str) -> Any:
        """The v2 client's side of a session: its person, and no editor files or terminals
        (v2 has none), a command's output streamed to a display terminal instead."""
        from acp_agent.adapters.acp2._prompter import V2PermissionPrompter
        from acp_agent.adapters.acp2._terminals import DisplayTerminals
        from acp_agent.agent import FrontEnd

        return FrontEnd(
            client=DisplayTerminals(),
            prompter=V2PermissionPrompter(self._connection, session_id, v2_session.stream),
        )

    async def _attach(
        self,
        v2_session: V2Session,
        handle: SessionHandle,
        *,
        replay: tuple[int, int] | bool | None,
        events: Sequence[Event],
        covered: Any,
    ) -> None:
        """Give `v2_session` its handle, show the history as `replay` says (True: all of
        it; a cursor: what follows it; None: none, learnt only) and follow it from there."""
        v2_session.handle = handle
        stream = v2_session.stream
        if replay is True:
            stream.show_replay(events)
        elif isinstance(replay, tuple):
            stream.show_replay(events, after=replay)
        else:
            for event in events:
                stream.learn(event)
        v2_session.subscription = await handle.subscribe(stream, after=covered)
        self._sessions[str(handle.id)] = v2_session

    async def _agent(self) -> Agent:
        with wire_errors():
            return await self._host.agent()

    # --- listing, closing and deleting ------------------------------------------------------

    async def list_sessions(self, params: types.ListSessionsRequest) -> types.ListSessionsResponse:
        """A page of stored sessions, most recently updated first, optionally in one `cwd`."""
        from acp_agent.adapters.acp._listing import session_info

        cwd = None if params.cwd is None else absolute_path(params.cwd, "cwd")
        agent = await self._agent()
        with wire_errors():
            page, cursor = await session_page(
                agent, cwd=cwd, cursor=params.cursor, owner=self.person
            )
        converter = shared_converter(include_unstable=True)
        infos = [
            converter.structure(converter.unstructure(session_info(record)), types.SessionInfo)
            for record in page
        ]
        return types.ListSessionsResponse(sessions=infos, next_cursor=cursor)

    async def close_session(self, params: types.CloseSessionRequest) -> types.CloseSessionResponse:
        """Cancel the session's turn (it records how it ended), then unload it."""
        v2_session = self._sessions.pop(str(params.session_id), None)
        if v2_session is not None:
            await v2_session.close()
        return types.CloseSessionResponse()

    async def delete_session(
        self, params: types.DeleteSessionRequest
    ) -> types.DeleteSessionResponse:
        """Close the session if open, then delete it; an unknown id is nothing to delete."""
        session_id = stored_id(params.session_id)
        v2_session = self._sessions.pop(session_id, None)
        if v2_session is not None:
            await v2_session.close()
        agent = await self._agent()
        with wire_errors(session_id):
            await agent.delete(session_id, person=self.person)
        return types.DeleteSessionResponse()

    # --- settings --------------------------------------------------------------------------

    async def set_config_option(
        self, params: types.SetSessionConfigOptionRequest
    ) -> types.SetSessionConfigOptionResponse:
        """Change one option (the model, the permission mode, the thinking effort); the
        answer carries the complete set. -32602 for an unknown option or value."""
        from acp_agent.agent import InvalidSetting

        v2_session = self._session(str(params.session_id))
        handle = v2_session.handle
        if not isinstance(params, types.SetSessionConfigOptionRequestId):
            raise InvalidParams(f"Invalid params: {params.config_id}: takes a value id")
        try:
            values = handle.change(str(params.config_id), str(params.value))
        except InvalidSetting as exc:
            at_fault = "configId" if exc.unknown_option else "value"
            raise InvalidParams(f"Invalid params: {at_fault}: {exc}") from None
        await handle.adopt(values)
        v2_session.settings_adopted(values)
        return types.SetSessionConfigOptionResponse(config_options=self._options(handle))

    def _options(self, handle: SessionHandle) -> list[types.SessionConfigOption]:
        from acp_agent.adapters.acp2._options import options

        return options(handle, self._models)

    # --- prompts and cancels ----------------------------------------------------------------

    async def prompt(self, params: types.PromptRequest) -> types.PromptResponse:
        """Insert the person's message and answer with its id; the turn runs on."""
        from acp_agent.adapters.acp._prompt_content import PromptContent
        from acp_agent.adapters.acp._steering import EMPTY_PROMPT

        if not params.prompt:
            raise InvalidParams(EMPTY_PROMPT)
        v2_session = self._session(str(params.session_id))
        blocks = _v1_blocks(params.prompt)
        controls = v2_session.handle.controls
        content = PromptContent(
            controls.client,
            controls.roots,
            images=self._models.traits(controls.model_id).images,
            model=controls.model_id,
        )
        content.check(blocks)
        message_id = await v2_session.prompt(blocks, content)
        return types.PromptResponse(message_id=message_id)

    async def cancel(self, params: types.CancelSessionNotification) -> None:
        """Cancel the session's running and waiting turns; ignore idle or unknown sessions."""
        v2_session = self._sessions.get(str(params.session_id))
        if v2_session is None:
            logger.info("Cancel for unknown session %s ignored", params.session_id)
            return
        cancelled = await v2_session.handle.cancel()
        logger.info("Cancel for v2 session %s: %d prompt(s)", params.session_id, cancelled)

    def cancel_tool_call(self, params: types.CancelToolCallRequest) -> types.CancelToolCallResponse:
        """Cut one tool call short; its `tool_call_update` (final status) follows."""
        self._session(str(params.session_id)).cancel_tool_call(str(params.tool_call_id))
        return types.CancelToolCallResponse()

    async def cancel_terminal(
        self, params: types.CancelTerminalRequest
    ) -> types.CancelTerminalResponse:
        """Stop a display terminal's command: a tool call's is cut short (its turn goes
        on), a background job's is stopped (answered once it ended)."""
        from acp_agent.adapters.acp2._jobs import JOB_TERMINAL_PREFIX

        v2_session = self._session(str(params.session_id))
        terminal_id = str(params.terminal_id)
        if terminal_id.startswith(LOCAL_TERMINAL_PREFIX):
            v2_session.cancel_tool_call(terminal_id.removeprefix(LOCAL_TERMINAL_PREFIX))
        elif not terminal_id.startswith(JOB_TERMINAL_PREFIX) or not (
            await v2_session.handle.stop_job(terminal_id.removeprefix(JOB_TERMINAL_PREFIX))
        ):
            raise InvalidParams(f"Invalid params: terminalId: no terminal {terminal_id!r}")
        return types.CancelTerminalResponse()

    def _session(self, session_id: str) -> V2Session:
        """The session open here; -32002 if it is not (or was closed meanwhile)."""
        v2_session = self._sessions.get(session_id)
        if v2_session is not None and not v2_session.handle.open:
            del self._sessions[session_id]  # another client closed or deleted it
            v2_session = None
        if v2_session is None:
            raise ResourceNotFound(
                f"Resource not found: no session {session_id}", {"sessionId": session_id}
            )
        return v2_session


def _replay_point(replay_from: Any) -> tuple[int, int] | bool | None:
    """What `replayFrom` asks: True (from the start), a cursor (after it), None (no
    replay); -32602 for a cursor type or value this agent does not know (v2 says so)."""
    from acp_agent.adapters.acp2._cursor import parse_cursor

    if replay_from is None:
        return None
    if isinstance(replay_from, types.ReplayFromStart):
        return True
    kind = getattr(replay_from, "type", None)
    if kind == AFTER_CURSOR:
        extra = getattr(replay_from, "extra", {}) or {}
        return parse_cursor(extra.get("cursor"))
    raise InvalidParams(
        f"Invalid params: replayFrom: this agent replays from 'start' or '{AFTER_CURSOR}', "
        f"not {kind!r}"
    )


def _instructions(system_prompt: Any) -> ClientInstructions | None:
    """The client's own instructions a session request sends (`systemPrompt`, unstable in
    the draft), read as v1's (the same shape); -32602 for what cannot be applied."""
    from acp_agent.adapters.acp._client_input import client_instructions

    if system_prompt is None:
        return None
    converter = shared_converter(include_unstable=True)
    try:
        v1 = converter.structure(converter.unstructure(system_prompt), v1_types.SystemPrompt)
    except Exception as exc:
        raise InvalidParams(f"Invalid params: systemPrompt: {exc}") from None
    return client_instructions(v1, None)


def _v1_blocks(prompt: Sequence[Any]) -> list[v1_types.ContentBlock]:
    """The prompt's v2 content blocks as the v1 types the prompt reader takes (one shape)."""
    converter = shared_converter(include_unstable=True)
    try:
        return converter.structure(converter.unstructure(list(prompt)), list[v1_types.ContentBlock])
    except Exception as exc:
        raise InvalidParams(f"Invalid params: prompt: {exc}") from None


def _v1_servers(servers: Sequence[Any] | None) -> list[v1_types.McpServer] | None:
    """The client's MCP servers as the v1 types the MCP set-up takes (one shape)."""
    if not servers:
        return None
    converter = shared_converter(include_unstable=True)
    try:
        return converter.structure(converter.unstructure(list(servers)), list[v1_types.McpServer])
    except Exception as exc:
        raise InvalidParams(f"Invalid params: mcpServers: {exc}") from None


async def _commands(handle: SessionHandle) -> list[types.AvailableCommand]:
    """The session's slash commands, typed as v2's (see `_commands`)."""
    from acp_agent.adapters.acp2._commands import available

    listed = await available(handle)
    return shared_converter(include_unstable=True).structure(listed, list[types.AvailableCommand])


async def _connect_mcp(handle: SessionHandle, servers: list[v1_types.McpServer] | None) -> None:
    from acp_agent.adapters.acp._mcp_servers import connect_mcp

    await connect_mcp(handle, servers)
