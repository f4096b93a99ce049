"""One ACP session: its core session, its `session/update` stream, its prompts in turn.

The ACP session id is the core session id. Prompts run one turn at a time
on the main branch, in the order they arrive (a slash command takes its turn
like a prompt); `session/cancel` cancels the turn or command running and
every prompt still waiting. `SessionStream` is the
session's subscriber on the main branch's timeline: it sends each published
event's updates as they are delivered, and a prompt answers only once the
stream has delivered its turn's end, so no update of a turn follows its
response.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
import attrs

from acp_agent.adapters.acp.updates import UpdateTranslator
from acp_agent.core import (
    Event,
    ModelRequestFailed,
    Payload,
    Session,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    UserInputAdopted,
)
from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.errors import ConnectionClosed

if TYPE_CHECKING:
    from acp_agent.capabilities.commands import CommandRunner, CommandSpec
    from acp_agent.capabilities.loop import ModelLoop
    from acp_agent.capabilities.session_controls import SessionControls

__all__ = ("AcpSession", "PendingPrompt", "SessionStream", "TurnOutcome")

logger = logging.getLogger(__name__)


@attrs.define
class TurnOutcome:
    """How a turn ended, as its prompt answers: the ending fact, and a failure if any."""

    ending: Payload
    failure: ModelRequestFailed | None = None


class SessionStream:
    """Sends a session's updates in timeline order; tells prompts when their turn is over."""

    def __init__(
        self, connection: AgentConnection, session_id: str, translator: UpdateTranslator
    ) -> None:
        self._connection = connection
        self._session_id = session_id
        self.translator = translator
        self._turn: TurnId | None = None
        self._failure: ModelRequestFailed | None = None
        self._outcomes: dict[TurnId, TurnOutcome] = {}
        self._delivered = anyio.Event()
        self._gone = False

    @property
    def name(self) -> str:
        return f"acp session/update {self._session_id}"

    async def handle(self, event: Event) -> None:
        payload = event.payload
        updates = self.translator.translate(event)
        for update in updates:
            self.send(update)
        if isinstance(payload, UserInputAdopted):
            self._turn, self._failure = TurnId(payload.input_id), None
        elif isinstance(payload, ModelRequestFailed):
            self._failure = payload
        elif isinstance(payload, TurnEnded | TurnInterrupted):
            failure = self._failure if self._turn == payload.turn_id else None
            self._outcomes[payload.turn_id] = TurnOutcome(payload, failure)
            self._delivered.set()
            self._delivered = anyio.Event()

    def send(self, update: types.SessionUpdate) -> None:
        """Send one update now; a client that went away gets no more (and no error)."""
        if self._gone:
            return
        try:
            self._connection.notify(
                methods.SESSION_UPDATE,
                types.SessionNotification(session_id=self._session_id, update=update),
            )
        except ConnectionClosed:
            self._gone = True
            logger.info("the client is gone; updates of session %s are dropped", self._session_id)

    def close(self) -> None:
        """Send nothing more (the session was closed)."""
        self._gone = True

    async def wait_turn_over(self, turn_id: TurnId) -> TurnOutcome:
        """Wait until the turn's end (and so every update before it) has been sent."""
        while turn_id not in self._outcomes:
            await self._delivered.wait()
        return self._outcomes.pop(turn_id)


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


@attrs.define(eq=False)
class AcpSession:
    """An open ACP session over a core session."""

    session: Session
    controls: SessionControls
    loop: ModelLoop
    stream: SessionStream
    #: The session's slash commands.
    commands: CommandRunner
    #: Turns run one at a time; later prompts wait their turn, in order.
    turn_lock: anyio.Lock = attrs.field(factory=anyio.Lock)
    #: Prompts waiting or running; `session/cancel` cancels them all.
    prompts: list[PendingPrompt] = attrs.field(factory=list)
    #: The commands the editor was last sent (`available_commands_update`).
    listed_commands: list[CommandSpec] | None = None
    _answered: anyio.Event = attrs.field(factory=anyio.Event)

    @property
    def session_id(self) -> str:
        return str(self.session.id)

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
        """Cancel the running turn or command and every waiting prompt; returns how many."""
        prompts = list(self.prompts)
        for prompt in prompts:
            prompt.cancelled = True
            prompt.wait_scope.cancel()
            if prompt.command_scope is not None:
                prompt.command_scope.cancel()
        for prompt in prompts:
            if prompt.turn_id is not None:
                await self.session.main.cancel_turn(prompt.turn_id)
        return len(prompts)
