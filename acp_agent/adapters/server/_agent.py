"""One client connection of the app server: the ACP adapter, with the session shared.

`ServerAcpAgent` is the ACP adapter (`AcpAgent`) for one connection, with what
changes when the session is the server's rather than this client's:

- a session opens with the server's side (`SharedSessions.front_end`), and this
  connection's view of it is a `SessionView` (its own turns, or everything once
  attached);
- `session/close` stops this connection following the session; the session is
  closed (its prompts cancelled, then unloaded) only when nobody else follows it,
  as the stdio agent does;
- an attached observer may not prompt, cancel, change settings or rewind; a
  client that never attached cancels only its own prompts while others follow the
  session (alone, it cancels as over stdio);
- `_acp-agent/attach` and `_acp-agent/detach` (`_attach`);
- when the client leaves (`connection_ended`) nothing it started is cancelled:
  its running prompts finish, then its views stop, and the attached clients that
  remain are told `_acp-agent/client_disconnected`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Final, Protocol

from acp_agent.adapters.acp import AcpAgent
from acp_agent.adapters.acp._notices import NoticeOutbox
from acp_agent.adapters.acp._opening import OpeningSessions
from acp_agent.adapters.acp._options import config_option_update, mode_update
from acp_agent.adapters.acp._session import AcpSession, EditorSide
from acp_agent.adapters.server._audience import Role, SessionAudience, SharedSessions, Viewer
from acp_agent.adapters.server._views import META_KEY, SessionView
from acp_agent.agent import MODE_KEY
from protocol import types
from protocol.errors import InvalidRequest
from protocol.methods import MessageKind

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from acp_agent.adapters.acp._updates import UpdateTranslator
    from acp_agent.agent import FrontEnd, SessionHandle, TurnSlot

__all__ = (
    "ATTACH_METHOD",
    "CLIENT_DISCONNECTED",
    "DETACH_METHOD",
    "OwnTurn",
    "ServerAcpAgent",
    "ServerSession",
    "ServerSide",
    "TurnHolder",
    "tell_left",
)

logger = logging.getLogger(__name__)

ATTACH_METHOD: Final = "_acp-agent/attach"
DETACH_METHOD: Final = "_acp-agent/detach"
#: Told to the attached clients that remain when one detaches or leaves.
CLIENT_DISCONNECTED: Final = "_acp-agent/client_disconnected"


class ServerSide(EditorSide):
    """What one connection brings to a session on the server: a `SessionView`; the
    session itself opens with the server's side, whichever client opens it."""

    def __init__(
        self,
        *args: Any,
        shared: SharedSessions,
        writable: Callable[[], Awaitable[None]],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._shared = shared
        self.stream = self.view = SessionView(
            self._connection, self.session_id, self._translator(), writable=writable
        )
        # The session's notices reach this client through its view, during its prompts.
        self.notices = NoticeOutbox(self.view, shown=self.notices.shown)

    def front_end(self) -> FrontEnd:
        return self._shared.front_end(self.session_id)


class ServerSession(AcpSession):
    """One connection's side of a session the server hosts (see the module docstring)."""

    def __init__(
        self, *args: Any, viewer: Viewer, audience: SessionAudience, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.viewer = viewer
        self.audience = audience
        #: This connection's prompts on the session, waiting or holding the turn.
        self.own: list[TurnSlot] = []
        audience.follow(viewer, notices=self.notices.post, settings=self._show_settings)

    @property
    def view(self) -> SessionView:
        view = self.stream
        assert isinstance(view, SessionView)
        return view

    def turn_slot(self) -> AbstractAsyncContextManager[TurnSlot]:
        return OwnTurn(self, self.view)

    async def set_title(self, title: str) -> None:
        """Attached, the title's event shows it (to every attached client, with its
        cursor); not attached, it is sent as over stdio."""
        if self.view.attached:
            await self.handle.set_title(title)
        else:
            await super().set_title(title)

    async def adopt(self, values: Mapping[str, Any], *, config_update: bool = True) -> None:
        """Adopt and show the settings here, and to the session's other clients."""
        await super().adopt(values, config_update=config_update)
        self.audience.post_settings(self.viewer.client_id, values)

    def _show_settings(self, values: Mapping[str, Any]) -> None:
        """Another client adopted `values`: an attached view shows the mode and the
        complete option set, as the adopting client was shown them."""
        if not self.view.attached:
            return  # as over stdio: the next answer carries the settings
        controls = self.handle.controls
        if MODE_KEY in values:
            self.stream.send(mode_update(controls))
        self.stream.send(config_option_update(controls, self._models))

    async def cancel_own(self) -> int:
        """Cancel this connection's prompts only; how many."""
        slots = list(self.own)
        for slot in slots:
            await slot.cancel()
        return len(slots)

    async def close(self) -> None:
        """`session/close`: stop following; close the session if nobody else follows it."""
        others = [cid for cid in self.audience.following if cid != self.viewer.client_id]
        role = self.audience.role_of(self.viewer.client_id)
        if role is not None:
            self.audience.detach(self.viewer.client_id)
            tell_left(self.audience, self.viewer.client_id, role, "closed")
        if others:
            await self.cancel_own()
            await self.stop_following()
            logger.info("%s stopped following session %s", self.viewer.client_id, self.session_id)
            return
        self.audience.leave(self.viewer.client_id)
        await super().close()

    async def stop_following(self) -> None:
        """This connection's view ends; the session and its work go on."""
        self.audience.leave(self.viewer.client_id)
        subscription = self.subscription
        if subscription is not None:
            await subscription.disconnect()
        await self.stop_children()
        self.stream.close()

    async def stop_children(self) -> None:
        """Show this connection the session's children as sessions no more (`_children`)."""
        presenter, self.subagents = self.subagents, None
        self.audience.show_children(self.viewer.client_id, False)
        if presenter is not None:
            await presenter.disconnect()


class TurnHolder(Protocol):
    """A connection's side of a session whose prompts take the session's turn."""

    own: list[TurnSlot]
    handle: SessionHandle
    audience: SessionAudience
    viewer: Viewer


class OwnTurn:
    """A turn slot of this connection's: while it holds the turn, the connection is asked
    the session's questions, and its `view` (a v1 connection's) shows the session's events
    (its window)."""

    def __init__(self, session: TurnHolder, view: SessionView | None = None) -> None:
        self._session = session
        self._view = view
        self._slot = session.handle.turn_slot()
        self._held = False

    async def __aenter__(self) -> TurnSlot:
        session = self._session
        session.own.append(self._slot)
        try:
            slot = await self._slot.__aenter__()
        except BaseException:
            session.own.remove(self._slot)
            raise
        if not slot.cancelled:
            self._held = True
            if self._view is not None:
                self._view.turn_began(int(session.handle.position))
            session.audience.hold(session.viewer)
        return slot

    async def __aexit__(self, *exc_info: Any) -> None:
        session = self._session
        if self._held:
            if self._view is not None:
                self._view.turn_over(int(session.handle.position))
            session.audience.release(session.viewer.client_id)
        if self._slot in session.own:
            session.own.remove(self._slot)
        await self._slot.__aexit__(*exc_info)


class ServerAcpAgent(AcpAgent):
    """The ACP adapter for one connection of the app server (see the module docstring).

    **Parameters** (besides `AcpAgent`'s):

    * `viewer`: this connection, as the sessions it follows know it.
    * `shared`: the server's sessions and their audiences.
    * `writable`: waits while the client is behind (see `SessionView`).
    * `opening`: the sessions being assembled, the server's (not this connection's).
    """

    def __init__(
        self,
        *args: Any,
        viewer: Viewer,
        shared: SharedSessions,
        writable: Callable[[], Awaitable[None]],
        opening: OpeningSessions,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.viewer = viewer
        self._shared = shared
        self._writable = writable
        # The server's, shared by every connection: a session one answered is assembled
        # once, and a request about it from another waits for that.
        self._opening = opening

    @property
    def client_id(self) -> str:
        return self.viewer.client_id

    def register(self) -> None:
        super().register()
        register = self._connection.register
        register(ATTACH_METHOD, self.attach_session, kind=MessageKind.REQUEST)
        register(DETACH_METHOD, self.detach_session, kind=MessageKind.REQUEST)

    async def attach_session(self, params: object) -> dict[str, Any]:
        """`_acp-agent/attach` (see `_attach`)."""
        from acp_agent.adapters.server._attach import attach

        return await attach(self, params)

    async def detach_session(self, params: object) -> dict[str, Any]:
        """`_acp-agent/detach` (see `_attach`)."""
        from acp_agent.adapters.server._attach import detach

        return await detach(self, params)

    def initialize(self, params: types.InitializeRequest) -> types.InitializeResponse:
        """As the stdio agent answers, and `_meta["acp-agent"].attach` says this agent
        takes `_acp-agent/attach` (roles, replay, cursors)."""
        response = super().initialize(params)
        capabilities = response.agent_capabilities or types.AgentCapabilities()
        meta = dict(capabilities.meta or {})
        meta[META_KEY] = {
            **meta.get(META_KEY, {}),
            "attach": {"roles": [r.value for r in Role], "replay": ["start", "cursor", "none"]},
            "clientId": self.client_id,
        }
        return types.evolve(response, agent_capabilities=types.evolve(capabilities, meta=meta))

    # --- the sides and sessions of this connection -------------------------------------

    def _side(self, session_id: str) -> EditorSide:
        return ServerSide(
            self._connection,
            session_id,
            client_capabilities=self._client_capabilities,
            translator=lambda: self._translator(replay=False),
            subagents=False,
            editor_timeout_s=self._editor_timeout_s,
            shared=self._shared,
            writable=self._writable,
        )

    @property
    def takes_subagents(self) -> bool:
        """Whether this client advertised `clientCapabilities.subagents`: attached, it is
        shown the session's branches as subagent sessions (`_children`)."""
        from acp_agent.adapters.acp._updates import takes_subagents

        return takes_subagents(self._client_capabilities)

    def _translator(self, *, replay: bool, subagents: bool = False) -> UpdateTranslator:
        """As the stdio agent's, but branches are shown in the parent's turn unless
        `subagents` (an attached client that takes them: `_children` shows them): a
        session on the server opens with no client's subagent presenter."""
        from acp_agent.adapters.acp._updates import translator_for

        capabilities = self._client_capabilities
        if not subagents and capabilities is not None and capabilities.subagents is not None:
            capabilities = types.evolve(capabilities, subagents=None)
        return translator_for(capabilities, self._models, replay=replay)

    def _attach(self, handle: SessionHandle, side: EditorSide) -> AcpSession:
        known = self._sessions.get(str(handle.id))
        if isinstance(known, ServerSession) and known.handle is handle:
            return known
        acp_session = ServerSession(
            handle,
            side,
            connection=self._connection,
            models=self._models,
            replay_translator=lambda: self._translator(replay=True),
            viewer=self.viewer,
            audience=self._shared.audience(str(handle.id)),
        )
        self._sessions[str(handle.id)] = acp_session
        return acp_session

    async def _open(self, session_id: str) -> AcpSession:
        # A session another client deleted or closed is opened anew, not shown dead.
        known = self._sessions.get(session_id)
        if known is not None and not known.handle.open:
            del self._sessions[session_id]
        return await super()._open(session_id)

    def server_session(self, session_id: str) -> ServerSession | None:
        acp_session = self._sessions.get(session_id)
        return acp_session if isinstance(acp_session, ServerSession) else None

    def role(self, session_id: str) -> Role | None:
        audience = self._shared.known(session_id)
        return None if audience is None else audience.role_of(self.client_id)

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

    async def set_mode(self, params: types.SetSessionModeRequest) -> types.SetSessionModeResponse:
        self._refuse_observer(str(params.session_id), "change the mode")
        return await super().set_mode(params)

    async def set_config_option(
        self, params: types.SetSessionConfigOptionRequest
    ) -> types.SetSessionConfigOptionResponse:
        self._refuse_observer(str(params.session_id), "change an option")
        return await super().set_config_option(params)

    async def rewind(self, params: object) -> dict[str, object]:
        if isinstance(params, dict):
            self._refuse_observer(str(params.get("sessionId")), "rewind")
        return await super().rewind(params)

    async def cancel(self, params: types.CancelNotification) -> None:
        """A controller cancels the session's turn; an observer, nothing; a client that
        never attached, its own prompts (everything, when it is the only follower)."""
        session_id = str(params.session_id)
        parent = self._parent_of(session_id)  # a child shown as a session of its own
        role = self.role(session_id if parent is None else parent.session_id)
        if role is Role.OBSERVER:
            logger.info("%s observes session %s: its cancel is ignored", self.client_id, session_id)
            return
        acp_session = self.server_session(session_id)
        if role is None and acp_session is not None:
            others = [cid for cid in acp_session.audience.following if cid != self.client_id]
            if others:
                cancelled = await acp_session.cancel_own()
                logger.info("Cancel for session %s: %d own prompt(s)", session_id, cancelled)
                return
        await super().cancel(params)

    # --- the end of the connection ---------------------------------------------------------

    async def connection_ended(self, wait_handlers: Callable[[], Awaitable[None]]) -> None:
        """The client left: the attached clients that remain are told; its prompts run to
        their end (`wait_handlers`); then its views stop. No session is closed."""
        for acp_session in list(self._sessions.values()):
            if isinstance(acp_session, ServerSession):
                role = acp_session.audience.detach(self.client_id)
                if role is not None:
                    tell_left(acp_session.audience, self.client_id, role, "disconnected")
        await wait_handlers()
        for acp_session in list(self._sessions.values()):
            if isinstance(acp_session, ServerSession):
                await acp_session.stop_following()
        self._sessions.clear()


def tell_left(audience: SessionAudience, client_id: str, role: Role, reason: str) -> None:
    """Tell the attached clients of `audience` that `client_id` left (`reason`)."""
    params = {
        "sessionId": audience.session_id,
        "clientId": client_id,
        "role": role.value,
        "reason": reason,
    }
    for viewer in audience.others(client_id):
        viewer.tell(CLIENT_DISCONNECTED, params)
