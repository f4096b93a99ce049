"""One ACP session: a core session, its `session/update` stream, its prompts in turn.

The ACP session id is the core session id. `AcpSession` owns what the editor
sees of the session outside a turn: the stream's subscription (live, after a
replay, or after learning the history without one), the slash commands it
was sent, the settings (`modes`, `configOptions`) and the title, and the
prompts waiting or running, which `session/cancel` cancels. It is also the
slash commands' host (`CommandHost`): a command that changes a setting or
the title does it through here, so the editor hears of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import attrs

from acp_agent.adapters.acp._client_bridge import AcpClientBridge, AcpPermissionPrompter
from acp_agent.adapters.acp._options import config_option_update, mode_update, session_settings
from acp_agent.adapters.acp._slash_commands import build_runner, commands_update
from acp_agent.adapters.acp._stream import SessionStream
from acp_agent.adapters.acp._updates import UpdateTranslator
from acp_agent.capabilities import BRANCHES, MODEL_LOOP, SESSION_CONTROLS
from acp_agent.capabilities.controls import MODE_KEY, InvalidSetting
from acp_agent.core import Seq, Session, TurnId, hidden_ranges, is_hidden
from protocol import types
from protocol.connection import AgentConnection
from protocol.errors import InvalidParams

if TYPE_CHECKING:
    from acp_agent.adapters.acp._subagents import SubagentPresenter
    from acp_agent.capabilities.controls import SessionControls
    from acp_agent.capabilities.loop import ModelLoop
    from acp_agent.capabilities.session import CommandRunner
    from acp_agent.models import ModelSource
    from acp_agent.toolkit import CommandSpec

__all__ = ("AcpSession", "PendingPrompt")

logger = logging.getLogger(__name__)

#: How long closing a session waits for its prompts to answer `cancelled`.
_CLOSE_BUDGET_S = 5.0


@attrs.define(eq=False)
class PendingPrompt:
    """A `session/prompt` waiting for or running its turn."""

    #: Cancels the wait for the session's turn (not the turn: that is cancelled by command).
    wait_scope: anyio.CancelScope = attrs.field(factory=anyio.CancelScope)
    #: `session/cancel` arrived for it: it answers `cancelled` whatever happens.
    cancelled: bool = False
    #: Set once its turn was started.
    turn_id: TurnId | None = None
    #: The slash command it runs, if it runs one: cancelling the prompt cancels it.
    command_scope: anyio.CancelScope | None = None


class AcpSession:
    """An open ACP session over a core session (see the module docstring).

    **Parameters:**

    * `session`: the core session.
    * `connection`: the connection to the editor.
    * `models`: the models the session's options offer.
    * `controls`, `loop`, `commands`: the session's services it works through.
    * `stream`: the session's update stream.
    * `replay_translator`: makes the translator a `session/load` replay uses.
    """

    def __init__(
        self,
        session: Session,
        *,
        connection: AgentConnection,
        models: ModelSource,
        controls: SessionControls,
        loop: ModelLoop,
        commands: CommandRunner,
        stream: SessionStream,
        replay_translator: Callable[[], UpdateTranslator],
        subagents: SubagentPresenter | None = None,
    ) -> None:
        self.session = session
        self.controls = controls
        self.loop = loop
        self.commands = commands
        self.stream = stream
        #: Turns run one at a time; later prompts wait their turn, in order.
        self.turn_lock = anyio.Lock()
        #: Prompts waiting or running; `session/cancel` cancels them all.
        self.prompts: list[PendingPrompt] = []
        self._connection = connection
        self._models = models
        self._replay_translator = replay_translator
        #: Shows the branches as subagent sessions (None: as tool calls of main).
        self.subagents = subagents
        self._subscribed = False
        #: The commands the editor was last sent (`available_commands_update`).
        self._listed_commands: list[CommandSpec] | None = None
        self._answered = anyio.Event()

    @classmethod
    def attach(
        cls,
        session: Session,
        *,
        connection: AgentConnection,
        models: ModelSource,
        client_capabilities: types.ClientCapabilities | None,
        translator: Callable[..., UpdateTranslator],
        config_dir: Path | None,
        clock: Callable[[], float],
        subagents: bool = False,
        editor_timeout_s: float | None = None,
    ) -> AcpSession:
        """The editor's side of an open core session: its files, terminals and person
        (`client_bridge`, its requests bounded by `editor_timeout_s`; None: the default),
        its stream, its slash commands."""

        controls = session.scope.get(SESSION_CONTROLS)
        bridge = AcpClientBridge(
            connection, session.id, client_capabilities, request_timeout_s=editor_timeout_s
        )
        controls.client = bridge
        controls.prompter = AcpPermissionPrompter(connection, session.id)
        stream = SessionStream(connection, session.id, translator(replay=False))
        bridge.caught_up = stream.caught_up
        presenter = None
        if subagents:
            from acp_agent.adapters.acp._subagents import SubagentPresenter

            presenter = SubagentPresenter(
                connection=connection,
                parent_id=session.id,
                parent=stream,
                manager=session.scope.get(BRANCHES),
                translator=lambda: translator(replay=False),
                prompter=lambda child_id: AcpPermissionPrompter(connection, child_id),
                client=lambda child_id: AcpClientBridge(connection, child_id, client_capabilities),
            )
            presenter.open()
        return cls(
            session,
            connection=connection,
            models=models,
            controls=controls,
            loop=session.main.scope.get(MODEL_LOOP),
            commands=build_runner(session, controls, models, config_dir=config_dir, clock=clock),
            stream=stream,
            replay_translator=lambda: translator(replay=True),
            subagents=presenter,
        )

    @property
    def session_id(self) -> str:
        return str(self.session.id)

    # --- the stream ---------------------------------------------------------------------

    def subscribe(self) -> None:
        """Stream everything published from now on (a new session: nothing came before)."""
        main = self.session.main
        self._subscribe_after(main.timeline.last_published_seq)

    async def learn_and_subscribe(self) -> None:
        """Have the live stream learn the history without sending it, then stream what
        follows (resume, fork)."""
        if self._subscribed:
            return
        main = self.session.main
        covered = main.timeline.last_published_seq
        for event in await main.read(lte=covered):
            self.stream.learn(event)
        self._subscribe_after(covered)
        if self.subagents is not None:  # once the client knows the parent, from the answer
            self._connection.after_response(self.subagents.follow_children)

    async def replay(self) -> Seq:
        """Send the conversation as `session/update`s (a load), then stream what follows.

        Returns how many events were replayed.
        """
        main = self.session.main
        covered = main.timeline.last_published_seq
        replay = self._replay_translator()
        fresh = not self._subscribed
        events = await main.read(lte=covered)
        # What a rewind took back is not shown again; its marker stands where it was.
        hidden = hidden_ranges(events)
        for event in events:
            if not is_hidden(int(event.seq), hidden):
                self.stream.show(event, replay)
            if fresh:
                self.stream.learn(event)  # the live translator learns the history
        if fresh:
            self._subscribe_after(covered)
        if self.subagents is not None:  # the children, as sessions of their own
            await self.subagents.replay_children(self._replay_translator)
        return covered

    def _subscribe_after(self, seq: Seq) -> None:
        main = self.session.main
        self.stream.attach(main.dispatcher.subscribe(self.stream, after=seq))
        self._subscribed = True

    # --- what the editor is told about the session --------------------------------------

    async def listed_commands(self) -> list[CommandSpec]:
        """The session's commands, read now (the templates are files)."""
        return await anyio.to_thread.run_sync(self.commands.commands)

    async def send_commands(self) -> None:
        """Send the commands now (before a `session/load` answer)."""
        commands = await self.listed_commands()
        self.stream.send(_commands_update(commands))
        self._listed_commands = commands

    async def send_session_updates_after_response(self) -> None:
        """Send the commands and the title once the answer to this request is written.

        An editor drops updates about a session it does not know yet: after
        `session/new`, `session/resume` and `session/fork`, it learns of the
        session from the answer.
        """
        commands = await self.listed_commands()
        title = self.session.record.title
        self._listed_commands = commands

        def send() -> None:
            # Built here, not before: the update types are the wire types' turn part,
            # which the answer itself does not need (it loads after the answer is out).
            self.stream.send(_commands_update(commands))
            if title:
                self.stream.send(types.SessionInfoUpdate(title=title))

        self._connection.after_response(send)

    async def refresh_commands(self) -> None:
        """Send the commands again if they changed since they were last sent."""
        commands = await self.listed_commands()
        if commands != self._listed_commands:
            self.stream.send(_commands_update(commands))
            self._listed_commands = commands

    def settings(self) -> dict[str, Any]:
        """The `modes` and `configOptions` every session response carries, complete."""
        return session_settings(self.controls, self._models)

    def change(self, option_id: str, value: str, field: str) -> dict[str, Any]:
        """The settings one option change makes; -32602 naming `field` if it is not one."""

        try:
            return self.controls.change(option_id, value, self._models)
        except InvalidSetting as exc:
            raise InvalidParams(f"Invalid params: {field}: {exc}") from None

    # --- the slash commands' host -------------------------------------------------------

    async def adopt(self, values: Mapping[str, Any], *, config_update: bool = True) -> None:
        """Record new settings and tell the editor: the mode, and the complete option set."""

        await self.controls.adopt(self.session.main, values)
        if MODE_KEY in values:
            self.stream.send(mode_update(self.controls))
        if config_update:
            self.stream.send(config_option_update(self.controls, self._models))

    async def set_title(self, title: str) -> None:
        """Record the title and tell the editor."""
        await self.session.set_title(title)
        self.stream.send(types.SessionInfoUpdate(title=title))

    # --- prompts --------------------------------------------------------------------------

    def add_prompt(self, prompt: PendingPrompt) -> None:
        self.prompts.append(prompt)

    def remove_prompt(self, prompt: PendingPrompt) -> None:
        """The prompt is answered (or about to be: its handler is returning)."""
        self.prompts.remove(prompt)
        if not self.prompts:
            self._answered.set()
            self._answered = anyio.Event()

    async def wait_prompts_answered(self) -> None:
        """Wait until no prompt is waiting or running."""
        while self.prompts:
            await self._answered.wait()

    async def cancel(self) -> int:
        """Cancel the running turn or command, every waiting prompt, and every branch's
        current step (the branches stay open); returns how many prompts."""

        prompts = list(self.prompts)
        for prompt in prompts:
            prompt.cancelled = True
            prompt.wait_scope.cancel()
            if prompt.command_scope is not None:
                prompt.command_scope.cancel()
        # The branches first: their showings in main's turn end before the turn does.
        await self.session.scope.get(BRANCHES).cancel_current()
        for prompt in prompts:
            if prompt.turn_id is not None:
                await self.session.main.cancel_turn(prompt.turn_id)
        return len(prompts)

    # --- closing ------------------------------------------------------------------------

    async def close(self) -> None:
        """Cancel the prompts (they answer `cancelled` first), then unload the session."""
        with anyio.CancelScope(shield=True):
            await self.cancel()
            with anyio.move_on_after(_CLOSE_BUDGET_S):
                await self.wait_prompts_answered()
            self.stream.close()
            if self.subagents is not None:
                self.subagents.close()
            await self.session.aclose()
        logger.info("Session %s closed", self.session_id)


def _commands_update(commands: list[CommandSpec]) -> types.AvailableCommandsUpdate:
    return commands_update(commands)
