"""One ACP session: the editor's side of a session handle, and its `session/update` stream.

The ACP session id is the session id. `EditorSide` is what the editor brings
to a session, made before it opens and given to it then (`front_end`): its
files and terminals (`AcpClientBridge`), its person (`AcpPermissionPrompter`),
its update stream, where its notices go (`NoticeOutbox`), and, for a client
that takes them, the branches shown as subagent sessions. `AcpSession` owns
what the editor sees of the session outside a turn: the stream's subscription
(live, after a replay, or after learning the history without one), the slash
commands it was sent, the settings (`modes`, `configOptions`) and the title.
It is also the slash commands' host (`CommandHost`): a command that changes a
setting or the title does it through here, so the editor hears of it.
Everything it asks of the session goes through the session handle
(`acp_agent.agent`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager as AsyncContextManager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from acp_agent.adapters.acp._client_bridge import AcpClientBridge, AcpPermissionPrompter
from acp_agent.adapters.acp._notices import NoticeOutbox
from acp_agent.adapters.acp._options import config_option_update, mode_update, session_settings
from acp_agent.adapters.acp._replay import replayed
from acp_agent.adapters.acp._slash_commands import commands_update
from acp_agent.adapters.acp._stream import SessionStream
from acp_agent.adapters.acp._updates import UpdateTranslator, takes_notices
from acp_agent.agent import (
    MODE_KEY,
    InvalidSetting,
    Seq,
    SessionHandle,
    SessionSubscription,
    TurnSlot,
    UsageTally,
    gc_paused,
    hidden_ranges,
    is_hidden,
)
from protocol import types
from protocol.connection import AgentConnection
from protocol.errors import InvalidParams

if TYPE_CHECKING:
    from acp_agent.adapters.acp._subagents import SubagentPresenter, SubagentSide
    from acp_agent.agent import BranchManager, FrontEnd
    from acp_agent.models import ModelSource
    from acp_agent.toolkit import CommandSpec

__all__ = ("AcpSession", "EditorSide")

logger = logging.getLogger(__name__)

#: How long closing a session waits for its prompts to answer `cancelled`.
_CLOSE_BUDGET_S = 5.0


class EditorSide:
    """What the editor brings to one session (see the module docstring).

    **Parameters:**

    * `connection`: the connection to the editor.
    * `session_id`: the session's id (its requests and updates carry it).
    * `client_capabilities`: what the editor offers (files, terminals, notices).
    * `translator`: makes the live translator of a stream.
    * `subagents`: show the branches as subagent sessions (a client that takes them).
    * `editor_timeout_s`: how long each request to the editor waits; None: the default.
    """

    def __init__(
        self,
        connection: AgentConnection,
        session_id: str,
        *,
        client_capabilities: types.ClientCapabilities | None,
        translator: Callable[[], UpdateTranslator],
        subagents: bool = False,
        editor_timeout_s: float | None = None,
    ) -> None:
        self.session_id = session_id
        self._connection = connection
        self._client_capabilities = client_capabilities
        self._translator = translator
        self._subagents = subagents
        self.stream = SessionStream(connection, session_id, translator())
        self.bridge = AcpClientBridge(
            connection,
            session_id,
            client_capabilities,
            request_timeout_s=editor_timeout_s,
            caught_up=self.caught_up,
        )
        self.prompter = AcpPermissionPrompter(connection, session_id)
        self.notices = NoticeOutbox(self.stream, shown=takes_notices(client_capabilities))
        #: The stream's delivery, once subscribed.
        self.subscription: SessionSubscription | None = None
        #: Shows the branches as subagent sessions (None: as tool calls of main).
        self.presenter: SubagentPresenter | None = None

    def front_end(self) -> FrontEnd:
        """This side as the session handle takes it when the session opens."""
        from acp_agent.agent import FrontEnd

        return FrontEnd(
            client=self.bridge,
            prompter=self.prompter,
            branches=self._present if self._subagents else None,
            notices=self.notices.post,
        )

    def _present(self, manager: BranchManager) -> SubagentSide:
        from acp_agent.adapters.acp._subagents import SubagentSide

        connection, capabilities = self._connection, self._client_capabilities
        self.presenter = presenter = SubagentSide(
            connection=connection,
            parent_id=self.session_id,
            parent=self.stream,
            manager=manager,
            translator=self._translator,
            parent_prompter=self.prompter,
            client=lambda child_id, caught_up: AcpClientBridge(
                connection, child_id, capabilities, caught_up=caught_up
            ),
        )
        return presenter

    async def caught_up(self) -> None:
        """Wait (briefly) until every update published so far was sent."""
        if self.subscription is not None:
            await self.subscription.caught_up()


class AcpSession:
    """An open ACP session over a session handle (see the module docstring).

    **Parameters:**

    * `handle`: the session.
    * `side`: the editor's side it was opened with.
    * `connection`: the connection to the editor.
    * `models`: the models the session's options offer.
    * `replay_translator`: makes the translator a `session/load` replay uses.
    """

    def __init__(
        self,
        handle: SessionHandle,
        side: EditorSide,
        *,
        connection: AgentConnection,
        models: ModelSource,
        replay_translator: Callable[[], UpdateTranslator],
    ) -> None:
        self.handle = handle
        self.side = side
        self.stream = side.stream
        self.notices = side.notices
        #: Shows the branches as subagent sessions (None: as tool calls of main).
        self.subagents = side.presenter
        if self.subagents is not None:
            self.subagents.start()
        self._connection = connection
        self._models = models
        self._replay_translator = replay_translator
        #: The commands the editor was last sent (`available_commands_update`).
        self._listed_commands: list[CommandSpec] | None = None

    @property
    def session_id(self) -> str:
        return str(self.handle.id)

    @property
    def subscription(self) -> SessionSubscription | None:
        return self.side.subscription

    def turn_slot(self) -> AsyncContextManager[TurnSlot]:
        """A place in the session's turn queue for one of this client's prompts (the app
        server also notes which turns are this connection's own)."""
        return self.handle.turn_slot()

    @property
    def unstable(self) -> bool:
        """Whether this connection speaks the unstable schema: its fields that no client
        capability negotiates are sent then only (`PromptResponse.usage`)."""
        return self._connection.unstable

    @property
    def usage(self) -> UsageTally | None:
        """What the session used, as the live stream has tallied it (through the last
        event it sent or learnt): its translator's, or the one it wraps."""
        usage = getattr(self.stream.translator, "usage", None)
        return usage if isinstance(usage, UsageTally) else None

    # --- the stream ---------------------------------------------------------------------

    async def subscribe(self) -> None:
        """Stream everything published from now on (a new session: nothing came before),
        keeping the replay's lines as its turns end."""
        if self.stream.keeps_replay and self.stream.keeper is None:
            from acp_agent.adapters.acp._replay_kept import ReplayKeeper, replay_key

            _, events = await self.handle.history()
            replay = self._replay_translator()
            key = replay_key(self.session_id, replay, self._connection.unstable)
            keeper = ReplayKeeper(
                self.handle, self.stream, key, replay, after=0, index=0, items=set()
            )
            keeper.feed(events)  # what came before the stream follows: its first chunk's
            self.stream.keeper = keeper
        await self._subscribe_after(None)

    async def learn_and_subscribe(self) -> None:
        """Have the live stream learn the history without sending it, then stream what
        follows (resume, fork)."""
        if self.subscription is not None:
            return
        covered, events = await self.handle.history()
        for event in events:
            self.stream.learn(event)
        await self._subscribe_after(covered)
        if self.subagents is not None:  # once the client knows the parent, from the answer
            self._connection.after_response(self.subagents.follow_children)

    async def replay(self) -> Seq:
        """Send the conversation as `session/update`s (a load), then stream what follows.

        Returns how many events were replayed.
        """
        from acp_agent.adapters.acp._replay_kept import kept_chunks, replay_kept, replay_key

        covered, events = await self.handle.history()
        replay = self._replay_translator()
        fresh = self.subscription is None
        # What a rewind took back is not shown again; its marker stands where it was.
        hidden = hidden_ranges(events)
        shown = [e for e in events if not is_hidden(int(e.seq), hidden)] if hidden else events
        # Lines kept from earlier replays and turns go out as they are (`_replay_kept`).
        key = keeper = None
        if self.stream.keeps_replay:
            key = replay_key(self.session_id, replay, self._connection.unstable)
            kept = await kept_chunks(self.handle, key)
        with gc_paused():
            # As few updates as the person needs: a message as one chunk, a tool call once.
            if key is None:
                self.stream.send_replay(replayed(shown, replay, replay))
            else:
                keeper = replay_kept(
                    self.handle,
                    self.stream,
                    replay,
                    key,
                    kept,
                    shown,
                    covered,
                    hidden,
                    later=self._connection.after_response,
                )
            if fresh:
                for event in events:
                    self.stream.learn(event)  # the live translator learns the history
        if fresh:
            if key is not None and self.stream.keeper is None:
                self.stream.keeper = keeper
            await self._subscribe_after(covered)
        if self.subagents is not None:  # the children, as sessions of their own
            await self.subagents.replay_children(self._replay_translator)
        return covered

    async def _subscribe_after(self, seq: Seq | None) -> None:
        self.side.subscription = await self.handle.subscribe(self.stream, after=seq)

    # --- what the editor is told about the session --------------------------------------

    async def listed_commands(self) -> list[CommandSpec]:
        """The session's commands, read now (the templates are files)."""
        return await anyio.to_thread.run_sync(self.handle.commands.commands)

    async def send_commands(self) -> None:
        """Send the commands now (before a `session/load` answer)."""
        commands = await self.listed_commands()
        self.stream.send(commands_update(commands))
        self._listed_commands = commands

    async def send_session_updates_after_response(self) -> None:
        """Send the commands and the title once the answer to this request is written.

        An editor drops updates about a session it does not know yet: after
        `session/new`, `session/resume` and `session/fork`, it learns of the
        session from the answer.
        """
        commands = await self.listed_commands()
        title = self.handle.title
        self._listed_commands = commands

        def send() -> None:
            # Built here, not before: the update types are the wire types' turn part,
            # which the answer itself does not need (it loads after the answer is out).
            self.stream.send(commands_update(commands))
            if title:
                self.stream.send(types.SessionInfoUpdate(title=title))

        self._connection.after_response(send)

    async def refresh_commands(self) -> None:
        """Send the commands again if they changed since they were last sent."""
        commands = await self.listed_commands()
        if commands != self._listed_commands:
            self.stream.send(commands_update(commands))
            self._listed_commands = commands

    def settings(self) -> dict[str, Any]:
        """The `modes` and `configOptions` every session response carries, complete."""
        return session_settings(self.handle.controls, self._models)

    def change(
        self, option_id: str, value: str, field: str, option_field: str | None = None
    ) -> dict[str, Any]:
        """The settings one option change makes; -32602 naming `field` for a value that is
        not one of the option's, `option_field` (where the request names the option) for
        an option that is not offered."""
        try:
            return self.handle.change(option_id, value)
        except InvalidSetting as exc:
            at_fault = option_field if exc.unknown_option and option_field else field
            raise InvalidParams(f"Invalid params: {at_fault}: {exc}") from None

    # --- the slash commands' host -------------------------------------------------------

    async def adopt(self, values: Mapping[str, Any], *, config_update: bool = True) -> None:
        """Record new settings and tell the editor: the mode, and the complete option set."""
        await self.handle.adopt(values)
        controls = self.handle.controls
        if MODE_KEY in values:
            self.stream.send(mode_update(controls))
        if config_update:
            self.stream.send(config_option_update(controls, self._models))

    async def set_title(self, title: str) -> None:
        """Record the title and tell the editor."""
        await self.handle.set_title(title)
        self.stream.send(types.SessionInfoUpdate(title=title))

    # --- closing ------------------------------------------------------------------------

    async def close(self) -> None:
        """Cancel the prompts (they answer `cancelled` first), then unload the session."""
        with anyio.CancelScope(shield=True):
            await self.handle.cancel()
            with anyio.move_on_after(_CLOSE_BUDGET_S):
                await self.handle.wait_idle()
            self.stream.close()
            if self.subagents is not None:
                self.subagents.close()
            await self.handle.unload()
        logger.info("Session %s closed", self.session_id)
