"""One `session/prompt`: its turn (or slash command), from the request to its answer.

    response = await run_prompt(acp_session, params.prompt, models)

In order: the prompt's content is checked (-32602 before anything waits);
it takes its place in the session's turn queue (`SessionHandle.turn_slot`),
so a `session/cancel` right behind it sees it; it waits (bounded) for MCP
servers still connecting and for the turn before it; the commands are
refreshed if they changed; the content is read (links through the editor or
the disk) and recorded. A built-in slash command then runs in place of a
turn; a template is expanded and sent as the person's message. Otherwise the
turn starts, and the prompt waits until the editor's stream has sent the
turn's end, so nothing of the turn follows the answer. The session's notices
go out while a prompt is open (those held since the last one as it starts).
After the first exchange the session gets a title, before the answer.

Whatever fails underneath, the prompt is answered: cancelled (`cancelled`,
even if the turn finished at that moment), a provider failure (`end_turn`
with `_meta["acp-agent"].error`), a message too large for the model
(`prompt_too_large`, not recorded), a store that cannot record the turn
(`storage_full` / `storage_unavailable`, told directly). An answer to a
message that was recorded names it: `_meta["acp-agent"].messageId`, the id
its replayed `user_message_chunk`s carry and `session/fork` takes.

An answer to a turn that ran says what it used: `_meta["acp-agent"].usage`
has `turn` and `session`
(`UsageReport.as_json`: the counts, the cost where the models' prices are
known, and each line of work's part). A turn's usage is what the session used
from the end of the turn before to the end of this one, its branches'
included (`acp_agent.agent.UsageTally`). With `--unstable`, ACP's own `usage`
(a field of the unstable schema no client capability negotiates) has the
turn's token counts too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import anyio

from acp_agent.adapters.acp._session import AcpSession
from acp_agent.agent import (
    AlreadyStarted,
    DeliveryStopped,
    StoreError,
    StoreFull,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    TurnSlot,
    new_id,
)
from acp_agent.content import ContentPart, TextContent, as_sent
from acp_agent.toolkit import Notice, NoticeSeverity
from protocol import types
from protocol.errors import InternalError

if TYPE_CHECKING:
    from acp_agent.agent import CommandInvocation, PromptTooLarge
    from acp_agent.models import ModelSource

__all__ = ("run_prompt",)

logger = logging.getLogger(__name__)

#: How long a prompt whose handler is cancelled waits for its turn to settle.
_SETTLE_BUDGET_S: Final = 0.5
_STOP_REASONS: Final = {reason.value: reason for reason in types.StopReason}
_CANCELLED: Final = types.PromptResponse(stop_reason=types.StopReason.CANCELLED)


async def run_prompt(
    acp_session: AcpSession, blocks: Sequence[types.ContentBlock], models: ModelSource
) -> types.PromptResponse:
    """Run one prompt of `acp_session` (see the module docstring) and answer it."""
    from acp_agent.adapters.acp._prompt_content import PromptContent

    controls = acp_session.handle.controls
    content = PromptContent(
        controls.client,
        controls.roots,
        images=models.traits(controls.model_id).images,
        model=controls.model_id,
    )
    content.check(blocks)
    # Notices held since the last prompt go out now; none after this one is answered.
    with acp_session.notices.prompt_open():
        # Its place in the queue is taken before the first await: a cancel right behind
        # sees it.
        async with acp_session.turn_slot() as slot:
            if slot.cancelled:
                return _CANCELLED
            return await _run(acp_session, slot, blocks, content)


async def _run(
    acp_session: AcpSession,
    slot: TurnSlot,
    blocks: Sequence[types.ContentBlock],
    reader: Any,
) -> types.PromptResponse:
    from acp_agent.agent import PromptTooLarge, SessionReadOnly

    turn_id: TurnId | None = None
    #: The person's message, once recorded (the answer names it).
    message_id: TurnId | None = None
    storage: StoreError | None = None
    try:
        await acp_session.refresh_commands()
        content, sent = await reader.record(blocks)
        if slot.cancelled:
            return _CANCELLED
        invocation, content, sent = _command_in(acp_session, content, sent)
        if invocation is not None:
            return await _run_command(acp_session, slot, invocation)
        subscription = acp_session.subscription
        if subscription is None:
            raise InternalError("Internal error: the session's updates are not followed")
        try:
            turn = await slot.start(content, sent=sent)
            turn_id = message_id = turn.turn_id
            outcome = await turn.outcome(seen_by=subscription)
        except PromptTooLarge as exc:
            return _too_large(acp_session, exc)
        except SessionReadOnly as exc:
            return _read_only(acp_session, exc)
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
                await slot.cancel_turn()
            raise
        storage = _store_error_in(outcome.unrecorded) or _store_error_in(turn.failure)
        ended = isinstance(outcome.ending, TurnEnded)
        if storage is None and (
            ended or (slot.cancelled and isinstance(outcome.ending, TurnInterrupted))
        ):
            await _title_after_exchange(acp_session, as_sent(content, sent))
    except StoreError as exc:
        # Nothing of the turn could be recorded (a full disk, most likely).
        storage = exc
    if slot.cancelled:
        # Cancelled, even if the turn happened to finish at the same moment.
        logger.info("Turn %s in session %s cancelled", turn_id, acp_session.session_id)
        return _with_usage(acp_session, _cancelled(message_id), turn_id)
    if storage is not None:
        return _storage_failed(acp_session, storage, message_id)
    if not isinstance(outcome.ending, TurnEnded):
        # Interrupted without our cancel: the session is closing.
        return _with_usage(acp_session, _cancelled(message_id), turn_id)
    stop = _STOP_REASONS.get(outcome.ending.stop_reason)
    if stop is None:
        raise InternalError("Internal error: the turn failed; see the agent log for details")
    ours: dict[str, Any] = {"messageId": message_id}
    if outcome.failure is not None:
        failure = outcome.failure
        ours["error"] = {"kind": failure.error, "message": failure.message}
    answer = types.PromptResponse(stop_reason=stop, meta={"acp-agent": ours})
    return _with_usage(acp_session, answer, turn_id)


def _with_usage(
    acp_session: AcpSession, answer: types.PromptResponse, turn_id: TurnId | None
) -> types.PromptResponse:
    """`answer`, saying what its turn and the session used, once the stream tallied the
    turn's end (see the module docstring)."""
    tally = acp_session.usage
    report = None if tally is None or turn_id is None else tally.turn(turn_id)
    if tally is None or report is None:
        return answer
    total = report.total
    meta = dict(answer.meta or {})
    ours = dict(meta.get("acp-agent") or {})
    ours["usage"] = {"turn": report.as_json(), "session": tally.session.as_json()}
    meta["acp-agent"] = ours
    if not acp_session.unstable:
        return types.evolve(answer, meta=meta)
    return types.evolve(
        answer,
        usage=types.Usage(
            total_tokens=total.total_tokens,
            input_tokens=total.input_tokens,
            output_tokens=total.output_tokens,
            thought_tokens=total.reasoning_tokens,
            cached_read_tokens=total.cache_read_tokens,
            cached_write_tokens=total.cache_write_tokens,
        ),
        meta=meta,
    )


def _cancelled(turn_id: TurnId | None) -> types.PromptResponse:
    """A cancelled answer; it names the person's message when that was recorded."""
    if turn_id is None:
        return _CANCELLED
    return types.PromptResponse(
        stop_reason=types.StopReason.CANCELLED, meta={"acp-agent": {"messageId": turn_id}}
    )


# --- slash commands -------------------------------------------------------------------


def _command_in(
    acp_session: AcpSession, content: list[ContentPart], sent: list[ContentPart | None]
) -> tuple[CommandInvocation | None, list[ContentPart], list[ContentPart | None]]:
    """A built-in command to run, or the content to send (a template expanded), and what
    the person sent for each part changed."""
    from acp_agent.agent import parse_invocation

    runner = acp_session.handle.commands
    templates = {template.spec.name: template for template in runner.templates()}
    builtins = runner.builtin_names()
    invocation = parse_invocation(content, builtins | frozenset(templates))
    if invocation is None or invocation.name in builtins:
        return invocation, content, sent
    # A template is the person's text: recorded expanded, replayed as typed.
    expanded = TextContent(templates[invocation.name].expand(invocation.arguments))
    return None, [expanded, *content[1:]], [content[0], *sent[1:]]


async def _run_command(
    acp_session: AcpSession, slot: TurnSlot, invocation: CommandInvocation
) -> types.PromptResponse:
    """Run a built-in command; its answer is shown, and the prompt ends its turn."""
    commands = acp_session.handle.commands
    reply = await slot.run(lambda: commands.run(invocation, acp_session))
    if reply is None:
        return _CANCELLED
    # What the command recorded (a compaction's updates) goes out before its reply and
    # the answer: nothing of it may follow the response.
    if acp_session.subscription is not None:
        await acp_session.subscription.caught_up()
    _say(acp_session, reply)
    logger.info("Session %s ran /%s", acp_session.session_id, invocation.name)
    return types.PromptResponse(stop_reason=types.StopReason.END_TURN)


# --- after the exchange ---------------------------------------------------------------


async def _title_after_exchange(acp_session: AcpSession, sent: Sequence[ContentPart]) -> None:
    """Give an untitled session the title of its first prompt, as sent (best effort)."""
    if acp_session.handle.title:
        return
    from acp_agent.agent import title_from_prompt

    title = title_from_prompt(sent)
    if title is None:
        return
    try:
        await acp_session.set_title(title)
    except Exception:
        logger.warning("session %s could not be titled", acp_session.session_id, exc_info=True)


def _read_only(acp_session: AcpSession, error: Exception) -> types.PromptResponse:
    """The answer to a prompt in a session whose workspace is not on this machine: not
    sent, nothing recorded, saying why (its history stays readable)."""
    text = f"This message was not sent: {error}."
    logger.info("prompt in session %s refused: %s", acp_session.session_id, error)
    _say(acp_session, text)
    meta = {"acp-agent": {"error": {"kind": "read_only", "message": str(error)}}}
    return types.PromptResponse(stop_reason=types.StopReason.END_TURN, meta=meta)


def _too_large(acp_session: AcpSession, error: PromptTooLarge) -> types.PromptResponse:
    """The answer to a message the model cannot take: refused whole, before it is recorded,
    saying how large one may be (the person's words are never cut behind their back)."""
    text = (
        f"This message was not sent: {error}. Send it in smaller parts, or attach large "
        "files as links (the agent reads them with its tools, a part at a time)."
    )
    logger.info("prompt in session %s refused: %s", acp_session.session_id, error)
    _say(acp_session, text)
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


def _storage_failed(
    acp_session: AcpSession, error: StoreError, message_id: TurnId | None
) -> types.PromptResponse:
    """The answer to a prompt the store could not record: the person is told directly
    (nothing can be recorded: a notice, or a message of its own for a client that takes
    no notices), and the turn ends normally so the editor is not stuck."""
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
    if acp_session.notices.shown:
        title = "The disk is full" if isinstance(error, StoreFull) else "The session store failed"
        acp_session.notices.post(Notice(NoticeSeverity.ERROR, title, text))
    else:
        logger.error("turn in session %s stopped: %s", acp_session.session_id, error)
        _say(acp_session, text)
    ours: dict[str, Any] = {"error": {"kind": kind, "message": str(error)}}
    if message_id is not None:
        ours["messageId"] = message_id
    return types.PromptResponse(stop_reason=types.StopReason.END_TURN, meta={"acp-agent": ours})


def _say(acp_session: AcpSession, text: str) -> None:
    """Tell the person `text` directly, as a message of its own (not a recorded reply)."""
    chunk = types.AgentMessageChunk(content=types.TextContent(text=text), message_id=new_id("msg"))
    acp_session.stream.send(chunk)


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
