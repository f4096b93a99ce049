"""One open v2 session: its handle, its update stream, and the turns its prompts started.

A v2 prompt is answered once the person's message is inserted (`{messageId}`);
the turn goes on behind the answer, and its end reaches the client as a
`state_update` (`idle` with the stop reason) in the stream (`_stream`). So the
turn runs in a task of the session's own, not the request's: a `session/cancel`,
`session/close` or the agent's shutdown cancels it, and it records how it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from acp_agent.adapters.acp2._commands import command_in, said
from acp_agent.adapters.acp2._stream import V2Stream
from acp_agent.adapters.acp2._wire import state_idle, state_update
from acp_agent.agent import (
    DeliveryStopped,
    SessionHandle,
    SessionSubscription,
    StoreError,
    TurnEnded,
    TurnInterrupted,
    TurnSlot,
    new_id,
)
from protocol.converter import shared_converter
from protocol.errors import InternalError, InvalidParams, RequestCancelled

if TYPE_CHECKING:
    from acp_agent.adapters.acp._prompt_content import PromptContent
    from acp_agent.agent import CommandInvocation
    from protocol import types as v1_types

__all__ = ("V2Session",)

logger = logging.getLogger(__name__)

#: How long closing a session waits for its turn to settle.
_CLOSE_BUDGET_S = 5.0


class V2Session:
    """An open session as one v2 client sees it (see the module docstring)."""

    def __init__(self, handle: SessionHandle, stream: V2Stream) -> None:
        self.handle: SessionHandle = handle
        self.stream = stream
        self.subscription: SessionSubscription | None = None
        self._turns: set[asyncio.Task[None]] = set()

    @classmethod
    def unopened(cls, stream: V2Stream) -> V2Session:
        """A session's side made before its handle opens (its prompter sends through
        `stream`); the handle is set once it is open."""
        v2_session = cls.__new__(cls)
        v2_session.stream = stream
        v2_session.subscription = None
        v2_session._turns = set()
        return v2_session

    @property
    def session_id(self) -> str:
        return str(self.handle.id)

    async def prompt(self, blocks: Sequence[v1_types.ContentBlock], content: PromptContent) -> str:
        """Insert the person's message and start its turn; return the message's id once
        inserted (the turn runs on); the error that kept it from being inserted if not."""
        loop = asyncio.get_running_loop()
        accepted: asyncio.Future[str] = loop.create_future()
        task = loop.create_task(
            self._run(blocks, content, accepted), name=f"v2 turn of {self.session_id}"
        )
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)
        return await asyncio.shield(accepted)

    async def _run(
        self,
        blocks: Sequence[v1_types.ContentBlock],
        content: PromptContent,
        accepted: asyncio.Future[str],
    ) -> None:
        from acp_agent.agent import PromptTooLarge

        subscription = self.subscription
        try:
            async with self.handle.turn_slot() as slot:
                if slot.cancelled:
                    _refuse(accepted, RequestCancelled("Request cancelled before insertion"))
                    return
                try:
                    parts, sent = await content.record(blocks)
                    invocation, parts, sent = command_in(self.handle, parts, sent)
                    if invocation is not None:
                        await self._run_command(slot, invocation, blocks, accepted)
                        return
                    turn = await slot.start(parts, sent=sent)
                except PromptTooLarge as exc:
                    _refuse(accepted, InvalidParams(f"Invalid params: prompt: {exc}"))
                    return
                except StoreError as exc:
                    _refuse(accepted, InternalError(f"Internal error: the store failed: {exc}"))
                    return
                accepted.set_result(str(turn.turn_id))
                if subscription is None:
                    raise InternalError("Internal error: the session's updates are not followed")
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
            logger.exception("a v2 turn of session %s failed", self.session_id)
            if not accepted.done():
                _refuse(accepted, InternalError("Internal error; see the agent log"))
            else:
                self.stream.send(state_idle("end_turn") | {"_meta": _error(type(exc).__name__)})
        finally:
            if not accepted.done():
                accepted.cancel()

    async def _run_command(
        self,
        slot: TurnSlot,
        invocation: CommandInvocation,
        blocks: Sequence[v1_types.ContentBlock],
        accepted: asyncio.Future[str],
    ) -> None:
        """A built-in command in the turn's place (see `_commands`)."""
        message_id = new_id("msg")
        accepted.set_result(message_id)
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
        """Record and apply new settings (`/mode`, `/model`)."""
        await self.handle.adopt(values)

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
        return not all(task.done() for task in self._turns)

    async def settled(self, budget_s: float) -> bool:
        """Whether the turns this client started are over, waiting up to `budget_s` for
        them (one that went idle may still be naming the session)."""
        if self._turns:
            await asyncio.wait(list(self._turns), timeout=budget_s)
        return all(task.done() for task in self._turns)

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
            for task in list(self._turns):
                task.cancel()
            self.stream.close()
            await self.handle.unload()

    async def aclose(self) -> None:
        """Stop the turns still running (shutdown): each records itself interrupted."""
        await self.handle.cancel()
        tasks = list(self._turns)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task


def _refuse(accepted: asyncio.Future[str], error: Exception) -> None:
    if not accepted.done():
        accepted.set_exception(error)


def _error(kind: str) -> dict[str, Any]:
    return {"acp-agent": {"error": {"kind": kind}}}
