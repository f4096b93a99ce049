"""One app-server connection that speaks ACP v2: the v2 adapter, with the session shared.

`ServerV2Agent` is the v2 adapter (`AcpV2Agent`) for one connection of the
server, with what changes when a session is the server's rather than this
client's (as `ServerAcpAgent` does for v1):

- a session opens with the server's side (`SharedSessions.front_end`): its
  permission questions go to the people following it, and this client is asked
  in v2 (`Viewer.asker`) while one of its prompts holds the turn or while it is
  attached as a controller;
- this client follows the session from `session/new`, `session/resume` or
  `_acp-agent/attach` on. v2 shows every update of a session (there are no
  prompt windows), so a v2 client sees the other clients' turns as they run,
  each update with its cursor, and the settings they adopt (`config_option_update`);
  the settings it adopts reach the others as theirs do;
- `_acp-agent/attach` and `_acp-agent/detach` as for v1 (`_attach`): a role, and a
  replay from the start, after a cursor or none, then the foreground state, before
  the answer; an attached observer may not prompt, cancel or change settings;
- `session/close` stops this client following; the session is closed only when
  nobody else follows it; `session/cancel` from a client that never attached
  cancels only its own prompts while others follow;
- when the client leaves, nothing it started is cancelled: its turns (the session's
  own work) run to their end, then it stops following.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from acp_agent.adapters.acp._wire_errors import wire_errors
from acp_agent.adapters.acp2._agent import AcpV2Agent
from acp_agent.adapters.acp2._commands import available
from acp_agent.adapters.acp2._cursor import parse_cursor
from acp_agent.adapters.acp2._session import V2Session
from acp_agent.adapters.server._agent import ATTACH_METHOD, DETACH_METHOD, OwnTurn, tell_left
from acp_agent.adapters.server._audience import Role, SessionAudience, SharedSessions, Viewer
from acp_agent.adapters.server._views import META_KEY
from protocol.errors import InvalidParams, InvalidRequest, PeerDisconnected, RemoteProtocolError
from protocol.methods import MessageKind
from protocol.v2.types import evolve

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    from acp_agent.adapters.acp._opening import OpeningSessions
    from acp_agent.adapters.acp2._stream import V2Stream
    from acp_agent.agent import (
        ClientInstructions,
        FrontEnd,
        PermissionQuestion,
        SessionHandle,
        TurnSlot,
    )
    from acp_agent.models import ModelSource
    from protocol.v2 import types

__all__ = ("ServerV2Agent", "ServerV2Session")

logger = logging.getLogger(__name__)

_REPLAYS = ("start", "none", "cursor")
#: How long `session/close` waits for this client's cancelled turns to end.
_CLOSE_BUDGET_S = 5.0


class ServerV2Session(V2Session):
    """One v2 connection's side of a session the server hosts."""

    def __init__(
        self, stream: V2Stream, models: ModelSource, *, viewer: Viewer, audience: SessionAudience
    ) -> None:
        super().__init__(stream, models)
        self.viewer = viewer
        self.audience = audience
        #: This connection's prompts on the session, waiting or holding the turn.
        self.own: list[TurnSlot] = []

    def turn_slot(self) -> OwnTurn:
        return OwnTurn(self)

    async def cancel_own(self) -> int:
        """Cancel this connection's prompts only; how many."""
        slots = list(self.own)
        for slot in slots:
            await slot.cancel()
        return len(slots)

    def settings_adopted(self, values: Mapping[str, Any]) -> None:
        """The session's other clients are shown what this one adopted."""
        self.audience.post_settings(self.viewer.client_id, values)

    async def stop_following(self) -> None:
        """This connection's stream ends; the session and its work go on."""
        self.audience.leave(self.viewer.client_id)
        await self.unfollow()
        self.stream.close()


class ServerV2Agent(AcpV2Agent):
    """The v2 adapter for one connection of the app server (see the module docstring).

    **Parameters** (besides `AcpV2Agent`'s): `client_id`, this connection as the
    sessions it follows know it; `shared`, the server's sessions and their audiences;
    `opening`, the sessions a v1 client was answered about and that are still being
    assembled (the server's).
    """

    def __init__(
        self,
        *args: Any,
        client_id: str,
        shared: SharedSessions,
        opening: OpeningSessions,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._shared = shared
        self._opening = opening
        self.viewer = Viewer(client_id, self._connection, asker=self._ask)

    @property
    def client_id(self) -> str:
        return self.viewer.client_id

    def register(self) -> None:
        super().register()
        register = self._connection.register
        register(ATTACH_METHOD, self.attach_session, kind=MessageKind.REQUEST)
        register(DETACH_METHOD, self.detach_session, kind=MessageKind.REQUEST)

    def initialize(self, params: types.InitializeRequest) -> types.InitializeResponse:
        """As over stdio, and `_meta["acp-agent"].attach` says this agent takes
        `_acp-agent/attach` (roles, replay, cursors), with this client's id."""
        response = super().initialize(params)
        meta = dict(response.meta or {})
        meta[META_KEY] = {
            **meta.get(META_KEY, {}),
            "attach": {"roles": [r.value for r in Role], "replay": list(_REPLAYS)},
            "clientId": self.client_id,
        }
        return evolve(response, meta=meta)

    # --- the sessions of this connection -------------------------------------------------

    def _make(self, session_id: str) -> ServerV2Session:
        from acp_agent.adapters.acp2._stream import V2Stream

        stream = V2Stream(self._connection, session_id, self._translator(), writable=self._writable)
        return ServerV2Session(
            stream,
            self._models,
            viewer=self.viewer,
            audience=self._shared.audience(session_id),
        )

    def _front_end(self, v2_session: V2Session, session_id: str) -> FrontEnd:
        """The server's side: the session is everyone's who follows it, not this client's."""
        return self._shared.front_end(session_id)

    async def _attach(self, v2_session: V2Session, handle: SessionHandle, **kwargs: Any) -> None:
        await super()._attach(v2_session, handle, **kwargs)
        # A v2 client sees every update, so the settings another client adopts too.
        audience = self._shared.audience(str(handle.id))
        audience.follow(self.viewer, settings=v2_session.show_settings)

    async def _resume(
        self,
        session_id: str,
        replay: tuple[int, int] | bool | None,
        sent: Sequence[str] | None,
        instructions: ClientInstructions | None = None,
    ) -> tuple[V2Session, int]:
        """As over stdio, once a session a v1 client just made is assembled."""
        with wire_errors(session_id):
            await self._opening.ready(session_id)
        return await super()._resume(session_id, replay, sent, instructions)

    def _server_session(self, session_id: str) -> ServerV2Session | None:
        v2_session = self._sessions.get(session_id)
        return v2_session if isinstance(v2_session, ServerV2Session) else None

    async def _ask(self, session_id: str, question: PermissionQuestion) -> str | None:
        """Ask this client a question of a session it follows, in v2 (`Viewer.asker`)."""
        from acp_agent.adapters.acp2._prompter import ask_v2

        v2_session = self._server_session(session_id)
        if v2_session is None:
            raise PeerDisconnected(f"{self.client_id} no longer follows session {session_id}")
        try:
            return await ask_v2(self._connection, session_id, question, v2_session.stream)
        except RemoteProtocolError as exc:
            # An answer that is not one: declined, as an error answer is.
            logger.info("%s answered a question with no answer: %s", self.client_id, exc)
            return None

    # --- attaching --------------------------------------------------------------------------

    async def attach_session(self, params: object) -> dict[str, Any]:
        """`_acp-agent/attach` (see `_attach`): follow the session with a role, after a
        replay (`"start"`, `"none"`, or `"cursor"` after `cursor`), then its foreground
        state; the answer is the ready point, with the options and commands (as a
        `session/resume` answer has them). `files` is never taken: v2 has no client
        file system, so the session's files stay the server's disk."""
        from acp_agent.adapters.server._attach import _role, _session_id

        if not isinstance(params, dict):
            raise InvalidParams("Invalid params: params must be an object")
        session_id = _session_id(params)
        role = _role(params.get("role", Role.CONTROLLER.value))
        replay = params.get("replay", "start")
        if replay not in _REPLAYS:
            raise InvalidParams(f"Invalid params: replay: one of {', '.join(_REPLAYS)}")
        point: tuple[int, int] | bool | None = replay == "start" or None
        if replay == "cursor":
            point = parse_cursor(params.get("cursor"))
        self._refuse_running(session_id, "attach")
        v2_session, position = await self._resume(session_id, point, None)
        audience = v2_session.audience if isinstance(v2_session, ServerV2Session) else None
        if audience is None:  # pragma: no cover - the server makes only its own sides
            raise InvalidRequest(f"Invalid request: session {session_id} is not the server's")
        viewer = self.viewer
        self._connection.after_response(lambda: audience.attach(viewer, role))
        logger.info("%s attached to session %s as %s (v2)", self.client_id, session_id, role.value)
        converter = self._connection.protocol.converter
        return {
            "clientId": self.client_id,
            "role": role.value,
            "cursor": str(position),
            "pendingPermissions": len(audience.questions.pending),
            "files": False,  # v2 has no client file system: the session's files stay here
            "configOptions": converter.unstructure(self._options(v2_session.handle)),
            "availableCommands": await available(v2_session.handle),
        }

    async def detach_session(self, params: object) -> dict[str, Any]:
        """`_acp-agent/detach`: the role ends (v2 still shows the session's updates)."""
        from acp_agent.adapters.server._attach import _session_id

        if not isinstance(params, dict):
            raise InvalidParams("Invalid params: params must be an object")
        session_id = _session_id(params)
        v2_session = self._server_session(session_id)
        if v2_session is None:
            return {}
        self._refuse_running(session_id, "detach")
        role = v2_session.audience.detach(self.client_id)
        if role is not None:
            tell_left(v2_session.audience, self.client_id, role, "detached")
        return {}

    def role(self, session_id: str) -> Role | None:
        audience = self._shared.known(session_id)
        return None if audience is None else audience.role_of(self.client_id)

    def _refuse_running(self, session_id: str, what: str) -> None:
        v2_session = self._server_session(session_id)
        if v2_session is not None and v2_session.own:
            raise InvalidRequest(
                f"Invalid request: cannot {what} while this client's prompt on the session runs",
                {"sessionId": session_id},
            )

    def _refuse_observer(self, session_id: str, what: str) -> None:
        if self.role(session_id) is Role.OBSERVER:
            raise InvalidRequest(
                f"Invalid request: {self.client_id} observes session {session_id}: it may not "
                f"{what} (attach as a controller)",
                {"sessionId": session_id},
            )

    # --- what an observer may not do -----------------------------------------------------

    async def prompt(self, params: types.PromptRequest) -> types.PromptResponse:
        self._refuse_observer(str(params.session_id), "prompt")
        return await super().prompt(params)

    async def set_config_option(
        self, params: types.SetSessionConfigOptionRequest
    ) -> types.SetSessionConfigOptionResponse:
        self._refuse_observer(str(params.session_id), "change an option")
        return await super().set_config_option(params)

    def cancel_tool_call(self, params: types.CancelToolCallRequest) -> types.CancelToolCallResponse:
        self._refuse_observer(str(params.session_id), "cancel a tool call")
        return super().cancel_tool_call(params)

    async def cancel_terminal(
        self, params: types.CancelTerminalRequest
    ) -> types.CancelTerminalResponse:
        self._refuse_observer(str(params.session_id), "cancel a terminal")
        return await super().cancel_terminal(params)

    async def cancel(self, params: types.CancelSessionNotification) -> None:
        """A controller cancels the session's turn; an observer, nothing; a client that
        never attached, its own prompts (everything, when it is the only follower)."""
        session_id = str(params.session_id)
        role = self.role(session_id)
        if role is Role.OBSERVER:
            logger.info("%s observes session %s: its cancel is ignored", self.client_id, session_id)
            return
        v2_session = self._server_session(session_id)
        if role is None and v2_session is not None and self._others(v2_session):
            cancelled = await v2_session.cancel_own()
            logger.info("Cancel for v2 session %s: %d own prompt(s)", session_id, cancelled)
            return
        await super().cancel(params)

    # --- closing and leaving --------------------------------------------------------------

    async def close_session(self, params: types.CloseSessionRequest) -> types.CloseSessionResponse:
        """Stop following; close the session (as over stdio) if nobody else follows it."""
        from protocol.v2 import types

        session_id = str(params.session_id)
        v2_session = self._server_session(session_id)
        if v2_session is not None:
            role = v2_session.audience.role_of(self.client_id)
            if role is not None:
                v2_session.audience.detach(self.client_id)
                tell_left(v2_session.audience, self.client_id, role, "closed")
            if self._others(v2_session):
                del self._sessions[session_id]
                await v2_session.cancel_own()
                await v2_session.settled(_CLOSE_BUDGET_S)  # its turns' ends, still followed
                await v2_session.stop_following()
                logger.info("%s stopped following session %s", self.client_id, session_id)
                return types.CloseSessionResponse()
            v2_session.audience.leave(self.client_id)
        return await super().close_session(params)

    def _others(self, v2_session: ServerV2Session) -> list[str]:
        return [cid for cid in v2_session.audience.following if cid != self.client_id]

    async def connection_ended(self, wait_handlers: Callable[[], Awaitable[None]]) -> None:
        """The client left: the attached clients that remain are told; its turns run to
        their end (the session's work, as over v1); then it stops following. No session
        is closed."""
        sessions = [s for s in self._sessions.values() if isinstance(s, ServerV2Session)]
        for v2_session in sessions:
            role = v2_session.audience.detach(self.client_id)
            if role is not None:
                tell_left(v2_session.audience, self.client_id, role, "disconnected")
        await wait_handlers()
        for v2_session in sessions:
            await v2_session.settled(math.inf)
            await v2_session.stop_following()
        self._sessions.clear()
