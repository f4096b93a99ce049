"""One open v2 session: its handle, its update stream, and the turns its prompts started.

A v2 prompt is answered once the person's message is inserted (`{messageId}`);
the turn goes on behind the answer, and its end reaches the client as a
`state_update` (`idle` with the stop reason) in the stream (`_stream`). So the
turn is the session's own work (`SessionHandle.start_work`: the session's task
group), not the request's: it outlives the answer, and a `session/cancel`,
`session/close`, the session's unloading or the agent's shutdown cancels it,
its turn recording how it ended.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskStatus

from acp_agent.adapters.acp2._commands import command_in, said
from acp_agent.adapters.acp2._stream import V2Stream
from acp_agent.adapters.acp2._wire import state_idle, state_update
from acp_agent.agent import (
    DeliveryStopped,
    SessionHandle,
    SessionReadOnly,
    SessionSubscription,
    StoreError,
    TurnEnded,
    TurnInterrupted,
    TurnSlot,
    new_id,
)
from protocol.converter import shared_converter
from protocol.errors import (
    AcpError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    RequestCancelled,
)

if TYPE_CHECKING:
    from acp_agent.adapters.acp._prompt_content import PromptContent
    from acp_agent.agent import CommandInvocation
    from acp_agent.models import ModelSource
    from protocol import types as v1_types

__all__ = ("V2Session",)

logger = logging.getLogger(__name__)

#: How long closing a session waits for its turn to settle.
_CLOSE_BUDGET_S = 5.0


class V2Session:
    """An open session as one v2 client sees it (see the module docstring).

    Made before its handle opens (the permission prompter sends through `stream`);
    `handle` is set once it is open.
    """

    def __init__(self, stream: V2Stream, models: ModelSource) -> None:
        self.stream = stream
        self._models = models
        self.subscription: SessionSubscription | None = None
        self._handle: SessionHandle | None = None
        #: The cancel scope of each turn this client started that is still running.
        self._turns: set[anyio.CancelScope] = set()
        #: Set whenever none runs.
        self._no_turns = anyio.Event()
        self._no_turns.set()

    @property
    def handle(self) -> SessionHandle:
        if self._handle is None:
            raise RuntimeError("the session's handle is not open yet")
        return self._handle

    @handle.setter
    def handle(self, handle: SessionHandle) -> None:
        self._handle = handle

    @property
    def session_id(self) -> str:
        return str(self.handle.id)

    def turn_slot(self) -> AbstractAsyncContextManager[TurnSlot]:
        """A place in the session's turn queue for one of this client's prompts (the app
        server's sessions also mark whose turn holds the session)."""
        return self.handle.turn_slot()

    async def prompt(self, blocks: Sequence[v1_types.ContentBlock], content: PromptContent) -> str:
        """Insert the person's message and return its id (or raise what kept it out).

        With a turn running, the message joins it (steering: taken in at the turn's next
        step boundary, so its next model request reads it; never lost, even if the turn
        is cancelled first); otherwise it starts its turn, as the session's work, once
        the turns before it are over. A built-in slash command always waits its turn."""
        if self.handle.running_turn is not None:
            steered = await self._steer(blocks, content)
            if steered is not None:
                return steered
        message_id: str = await self.handle.start_work(
            partial(self._run, blocks, content), name=f"v2 turn of {self.session_id}"
        )
        return message_id

    async def _steer(
        self, blocks: Sequence[v1_types.ContentBlock], content: PromptContent
    ) -> str | None:
        """Give the message to the running turn; None when it is a built-in command or no
        turn takes it any more (it ended meanwhile): then it is a prompt of its own."""
        from acp_agent.agent import PromptTooLarge

        parts, sent = await content.record(blocks)
        invocation, parts, sent = command_in(self.handle, parts, sent)
        if invocation is not None:
            return None
        try:
            return self.handle.steer(parts, sent=sent)
        except PromptTooLarge as exc:
            raise InvalidParams(f"Invalid params: prompt: {exc}") from None

    async def _run(
        self,
        blocks: Sequence[v1_types.ContentBlock],
        content: PromptContent,
        *,
        task_status: TaskStatus[str],
    ) -> None:
        """One prompt's turn, in a cancel scope `aclose` and `close` end."""
        with anyio.CancelScope() as scope:
            self._turns.add(scope)
            self._no_turns = anyio.Event()
            try:
                await self._turn(blocks, content, task_status)
            finally:
                self._turns.discard(scope)
                if not self._turns:
                    self._no_turns.set()

    async def _turn(
        self,
        blocks: Sequence[v1_types.ContentBlock],
        content: PromptContent,
        task_status: TaskStatus[str],
    ) -> None:
        """Wait for the turn's place, insert the message, report its id (`task_status`),
        then follow the turn to its end. An error before the report is the prompt's
        answer; after it, the client learns of it as the turn going idle."""
        from acp_agent.agent import PromptTooLarge

        subscription = self.subscription
        if subscription is None:
            raise InternalError("Internal error: the session's updates are not followed")
        accepted = False
        try:
            async with self.turn_slot() as slot:
                if slot.cancelled:
                    raise RequestCancelled("Request cancelled before insertion")
                try:
                    parts, sent = await content.record(blocks)
                    invocation, parts, sent = command_in(self.handle, parts, sent)
                    if invocation is not None:
                        accepted = True
                        await self._run_command(slot, invocation, blocks, task_status)
                        return
                    turn = await slot.start(parts, sent=sent)
                except PromptTooLarge as exc:
                    raise InvalidParams(f"Invalid params: prompt: {exc}") from None
                except SessionReadOnly as exc:
                    raise InvalidRequest(f"Invalid request: {exc}", _error("read_only")) from None
                except StoreError as exc:
                    raise InternalError(f"Internal error: the store failed: {exc}") from None
                accepted = True
                task_status.started(str(turn.turn_id))
                try:
                    outcome = await turn.outcome(seen_by=subscription)
                except DeliveryStopped:
                    logger.exception("turn %s: its updates stopped", turn.turn_id)
                    self.stream.send(state_idle("end_turn") | {"_meta": _error("delivery")})
                    return
                if not isinstance(outcome.ending, TurnEnded | TurnInterrupted) or (
                    outcome.unrecorded is not None
                ):
                    # Its end was never published: the client still needs the turn over.
                    self.stream.send(state_idle("end_turn") | {"_meta": _error("storage")})
                    return
                if isinstance(outcome.ending, TurnEnded):
                    await self._title_after(parts)
        except Exception as exc:
            if not accepted:
                if isinstance(exc, AcpError):
                    raise
                logger.exception("a v2 prompt of session %s failed", self.session_id)
                raise InternalError("Internal error; see the agent log") from None
            logger.exception("a v2 turn of session %s failed", self.session_id)
            self.stream.send(state_idle("end_turn") | {"_meta": _error(type(exc).__name__)})

    async def _run_command(
        self,
        slot: TurnSlot,
        invocation: CommandInvocation,
        blocks: Sequence[v1_types.ContentBlock],
        task_status: TaskStatus[str],
    ) -> None:
        """A built-in command in the turn's place (see `_commands`)."""
        message_id = new_id("msg")
        task_status.started(message_id)
        typed = shared_converter(include_unstable=True).unstructure(list(blocks))
        self.stream.send(state_update("running"))
        for body in said(message_id, "user_message_chunk", typed):
            self.stream.send(body)
        commands = self.handle.commands
        reply = await slot.run(lambda: commands.run(invocation, self))
        if reply is None:
            self.stream.send(state_idle("cancelled"))
            return
        answer = [{"type": "text", "text": reply}]
        for body in said(new_id("msg"), "agent_message_chunk", answer):
            self.stream.send(body)
        self.stream.send(state_idle("end_turn"))

    # --- the commands' host: what a command changes, through the handle ------------------

    async def adopt(self, values: Mapping[str, Any]) -> None:
        """Record and apply new settings (`/mode`, `/model`); the client is sent the
        complete option set (`config_option_update`)."""
        from acp_agent.adapters.acp2._options import config_option_update

        await self.handle.adopt(values)
        self.stream.send(config_option_update(self.handle, self._models))
        self.settings_adopted(values)

    def settings_adopted(self, values: Mapping[str, Any]) -> None:
        """This client adopted `values` (an option, a command's settings); nothing more
        over stdio (the app server tells the session's other clients)."""

    def show_settings(self, values: Mapping[str, Any]) -> None:
        """Another client adopted settings: this client is sent the complete option set
        (`config_option_update`)."""
        from acp_agent.adapters.acp2._options import config_option_update

        self.stream.send(config_option_update(self.handle, self._models))

    async def set_title(self, title: str) -> None:
        """Record the title (its `session_info_update` comes from the timeline)."""
        await self.handle.set_title(title)

    async def _title_after(self, parts: Sequence[Any]) -> None:
        """An untitled session takes its first prompt's title (best effort)."""
        if self.handle.title:
            return
        from acp_agent.agent import title_from_prompt

        title = title_from_prompt(parts)
        if title is not None:
            with contextlib.suppress(Exception):
                await self.handle.set_title(title)

    @property
    def busy(self) -> bool:
        """Whether a turn this client started is still running."""
        return bool(self._turns)

    async def settled(self, budget_s: float) -> bool:
        """Whether the turns this client started are over, waiting up to `budget_s` for
        them (one that went idle may still be naming the session)."""
        with anyio.move_on_after(budget_s):
            await self._no_turns.wait()
        return not self._turns

    async def unfollow(self) -> None:
        """Stop following the session (to follow it anew from a replay)."""
        if self.subscription is not None:
            await self.subscription.disconnect()
            self.subscription = None

    def cancel_tool_call(self, call_id: str) -> None:
        """Cut one tool call of the running turn short; -32602 if there is none such."""
        if not self.handle.cancel_tool_call(call_id):
            raise InvalidParams(
                f"Invalid params: toolCallId: no tool call {call_id!r} is running or waiting"
            )

    async def close(self) -> None:
        """Cancel the turns (they record how they ended), then unload the session."""
        with anyio.CancelScope(shield=True):
            await self.handle.cancel()
            with anyio.move_on_after(_CLOSE_BUDGET_S):
                await self.handle.wait_idle()
            self._stop_turns()
            self.stream.close()
            await self.handle.unload()

    async def aclose(self) -> None:
        """Stop the turns still running (shutdown): each records itself interrupted, and
        its follower ends (bounded: the session's close cancels what is left)."""
        with anyio.CancelScope(shield=True):
            await self.handle.cancel()
            self._stop_turns()
            await self.settled(_CLOSE_BUDGET_S)

    def _stop_turns(self) -> None:
        for scope in self._turns:
            scope.cancel()


def _error(kind: str) -> dict[str, Any]:
    return {"acp-agent": {"error": {"kind": kind}}}
