"""The model loop: a branch's turns as model steps, and tool batches between them.

One `ModelLoop` per branch (a branch service, subscribed to its timeline).
A turn goes through these states::

    IDLE ──input adopted──▶ PREPARING ──request recorded──▶ STREAMING
      ▲                        ▲                              │
      │                        │ all results published        │ reply ended normally
      │                        │                              ▼
      └──────── ENDING ◀── no tool calls ──────────── (tool calls?) ──▶ AWAITING_TOOLS

- PREPARING: the context is prepared (`ContextPreparer`) from the published
  history and the tools of the current generation; `ModelRequestStarted` is
  recorded, binding the request id to that generation for the executor.
- STREAMING: the provider's events are recorded as they come
  (`ModelTextDelta`, `ModelReasoningDelta`, `ModelReasoningEnded`), by group
  commit (`CoalescingRecorder`): one durable batch per commit, order kept.
- On a normal end with tool calls, `ModelRequestFinished` and the batch's
  `ToolCallRequested` facts (with their presentation) are recorded as one
  batch and handed to the executor; the loop continues when every call's
  result is published (AWAITING_TOOLS). Otherwise the turn ends (ENDING).

Stop reasons (`TurnEnded.stop_reason`, a `TurnStopReason`): `end_turn`, `max_tokens` (the reply
hit its cap, or the context window was exceeded even after compacting twice
in the turn: the older history, then all of it, long messages truncated), `max_turn_requests` (more
model requests in the turn than allowed), `refusal`; a cancelled turn ends
with `TurnInterrupted` instead. A provider failure keeps what was streamed,
records `ModelRequestFailed` (the person sees why) and ends the turn; a
cancellation records `ModelRequestInterrupted` the same way. The provider's
stream is closed at once in both cases.

A turn's steps run as the turn's work (`Turn.start_soon`), so cancelling the
turn cancels them, and the turn is over only once they have settled.

A message the person sends while the turn runs (`steer`) is queued on the
turn and taken in at its next step boundary (after the current reply, or
after the tool batch it proposed): recorded as input that joined the turn
(`UserInputAdopted` with `joined_turn`), right before the next request, which
reads it. A reply that would have ended the turn is followed by one more
request for it. A turn that ends before another request (cancelled, failed,
out of requests, a reply cut at `max_tokens`) records what is queued right
before its ending (the loop watches the branch's turns end): what the person
sent is never lost, and the model reads it with the next prompt.

`start_turn()` has the context engine record what changed in state and rules
(so they precede the person's words), begins the turn, and pairs the
`Turn` it returns with the published `UserInputAdopted`; whichever comes
second starts the first step.

One module past 600 lines on purpose: the turn's steps (context, request,
stream, proposals, compaction on overflow, the ending) share one state
machine; the pieces with an idea of their own live in their own modules
(`capabilities/execution/_proposals.py`, `capabilities/execution/_recorder.py`,
`core/_cuts.py`).
"""

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio
import attrs

from acp_agent.capabilities.context import CompactionError, CompactionTrigger
from acp_agent.capabilities.controls import SessionControls
from acp_agent.capabilities.execution import (
    CallProposals,
    CoalescingRecorder,
    ToolExecutor,
    record_delta,
    tool_spec,
)
from acp_agent.capabilities.session import ToolGeneration, ToolSet
from acp_agent.content import ContentPart
from acp_agent.core import (
    Branch,
    CallId,
    CompactionCancelled,
    CompactionFailed,
    CompactionRecorded,
    CompactionStarted,
    Event,
    EventDraft,
    FailureKind,
    ModelReasoningDelta,
    ModelReasoningEnded,
    ModelRequestFailed,
    ModelRequestFinished,
    ModelRequestInterrupted,
    ModelRequestStarted,
    ModelStopReason,
    ModelTextDelta,
    ScopeClosed,
    Seq,
    Timeline,
    ToolCallRequested,
    ToolResultRecorded,
    Turn,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    TurnState,
    TurnStopReason,
    Usage,
    UserInputAdopted,
    new_id,
)
from acp_agent.models import (
    AuthenticationFailed,
    ContextWindowExceeded,
    ModelHandle,
    ModelNotFound,
    ModelRequest,
    ModelSource,
    ProviderConnectError,
    ProviderConnectionLost,
    ProviderError,
    ProviderNotConfigured,
    ProviderOverloaded,
    ProviderResponseInvalid,
    ProviderTimeout,
    QuotaExceeded,
    RateLimited,
    ReasoningDelta,
    ReasoningEffort,
    ReasoningEnded,
    ReplyBuilder,
    StopReason,
    StreamBroken,
    TextDelta,
    ToolSpec,
    UsageReported,
)
from acp_agent.values import Value

if TYPE_CHECKING:
    from acp_agent.models import Pricing

__all__ = (
    "DEFAULT_MAX_TURN_REQUESTS",
    "LOOP_PRODUCER",
    "ContextPreparer",
    "LoopSettings",
    "LoopState",
    "ModelLoop",
    "PreparedContext",
    "PromptTooLarge",
    "error_kind",
)

logger = logging.getLogger(__name__)

#: The facts a rebuild reads: proposals, and what opens and ends turns, requests and
#: compactions.
_REBUILT_FROM: Final = frozenset(
    {
        ToolCallRequested,
        CompactionStarted,
        CompactionRecorded,
        CompactionFailed,
        CompactionCancelled,
        UserInputAdopted,
        TurnEnded,
        TurnInterrupted,
        ModelRequestStarted,
        ModelRequestFinished,
        ModelRequestFailed,
        ModelRequestInterrupted,
    }
)

#: The producer of the loop's facts.
LOOP_PRODUCER: Final = "capabilities.loop"
#: Why a compaction the agent was making when it stopped has no summary.
_COMPACTION_RESTARTED: Final = "interrupted by a restart; history stays as it was"
#: Compactions a turn makes after overflows: the older history, then all of it.
_OVERFLOW_COMPACTIONS: Final = 2
#: What the person reads after an overflow's message, when the agent compacts and retries.
_COMPACTING: Final = (
    ". The conversation is longer than the model takes (about {window} tokens, it seems), "
    "so it is being summarised, the longest messages truncated to their beginning and end, "
    "and the request sent again."
)
#: ... and when it compacted twice in the turn already.
_GAVE_UP: Final = (
    ". It did not fit even after summarising the conversation twice; send a shorter "
    "message, or start a new session."
)
#: Model requests one turn may make before it ends with `max_turn_requests`.
DEFAULT_MAX_TURN_REQUESTS: Final = 50

#: What a reply's stop reason, as a provider said it, is recorded as.
_REPLY_STOPS: Final = {reason: ModelStopReason(reason.value) for reason in StopReason}
#: How the turn ends after a reply that proposed no tool call.
_TURN_STOPS: Final = {
    StopReason.END_TURN: TurnStopReason.END_TURN,
    StopReason.MAX_TOKENS: TurnStopReason.MAX_TOKENS,
    StopReason.REFUSAL: TurnStopReason.REFUSAL,
}
#: `ModelRequestFailed.error` by exception class, most specific first.
_ERROR_KINDS: Final[tuple[tuple[type[ProviderError], FailureKind], ...]] = (
    (ProviderNotConfigured, FailureKind.NOT_CONFIGURED),
    (StreamBroken, FailureKind.STREAM_BROKEN),
    (RateLimited, FailureKind.RATE_LIMITED),
    (QuotaExceeded, FailureKind.QUOTA),
    (ProviderOverloaded, FailureKind.OVERLOADED),
    (ContextWindowExceeded, FailureKind.CONTEXT_WINDOW),
    (AuthenticationFailed, FailureKind.AUTHENTICATION),
    (ModelNotFound, FailureKind.MODEL_NOT_FOUND),
    (ProviderTimeout, FailureKind.TIMEOUT),
    (ProviderConnectError, FailureKind.CONNECT),
    (ProviderConnectionLost, FailureKind.CONNECTION_LOST),
    (ProviderResponseInvalid, FailureKind.INVALID_RESPONSE),
)


def error_kind(error: ProviderError) -> FailureKind:
    """The kind `ModelRequestFailed.error` gives a provider failure."""
    for cls, kind in _ERROR_KINDS:
        if isinstance(error, cls):
            return kind
    return FailureKind.PROVIDER_ERROR


class PromptTooLarge(Exception):
    """The person's message alone is larger than the model takes; it was not recorded.

    Cutting it would have the model act on something the person did not send,
    so it is refused whole, saying how large a message may be.
    """

    def __init__(self, tokens: int, limit: int, window: int) -> None:
        super().__init__(
            f"the message is about {tokens} tokens, and this model takes at most about "
            f"{limit} in one message (its context window is {window} tokens)"
        )
        self.tokens = tokens
        self.limit = limit
        self.window = window


class LoopState(enum.Enum):
    """Where the loop of a branch is."""

    #: No turn runs.
    IDLE = "idle"
    #: Preparing the next request's context.
    PREPARING = "preparing"
    #: A model request is in flight; its deltas are being recorded.
    STREAMING = "streaming"
    #: A tool batch is with the executor; the loop waits for its results.
    AWAITING_TOOLS = "awaiting_tools"
    #: The turn's end is being recorded.
    ENDING = "ending"


class PreparedContext(Protocol):
    """What a context preparer returns: the request, and the guide version it uses."""

    @property
    def request(self) -> ModelRequest: ...

    @property
    def guide_version(self) -> str | None: ...


class ContextPreparer(Protocol):
    """Builds the next model request from the branch's history (the context engine)."""

    async def prepare(
        self,
        *,
        turn_id: TurnId,
        model: str,
        provider: Any,
        tools: Sequence[ToolSpec] = (),
        max_output_tokens: int | None = None,
        reasoning_effort: ReasoningEffort | None = None,
    ) -> PreparedContext: ...

    def note_usage(self, input_tokens: int, output_tokens: int) -> None:
        """The provider reported usage for the last prepared request."""
        ...

    def note_overflow(self) -> int:
        """The provider refused the last prepared request as too long; returns the window."""
        ...

    def input_limit(self, tools: Sequence[ToolSpec] = ()) -> int:
        """The most tokens the person's message may cost."""
        ...

    def window(self) -> int:
        """The context window requests must fit (configured, or learned smaller)."""
        ...

    def input_tokens(self, content: Sequence[ContentPart]) -> int:
        """What the person's content costs as a message."""
        ...

    async def start_turn(self, turn_id: TurnId | None = None) -> Sequence[Any]:
        """Record state and rule changes before the turn's input is adopted."""
        ...

    async def warm(self) -> None:
        """Fold the history published so far now, ahead of the next request."""
        ...

    async def compact(
        self,
        *,
        model: str,
        provider: Any,
        tools: Sequence[ToolSpec] = (),
        trigger: CompactionTrigger = CompactionTrigger.ON_DEMAND,
        keep_everything: bool = False,
    ) -> Any:
        """Replace older history with a summary (raises `CompactionError` when it cannot)."""
        ...


@attrs.frozen
class LoopSettings(Value):
    """Limits and knobs of the model loop."""

    max_turn_requests: int = DEFAULT_MAX_TURN_REQUESTS
    max_output_tokens: int | None = None
    reasoning_effort: ReasoningEffort | None = None


@attrs.define(eq=False)
class _TurnRun:
    """What the loop knows about the turn it runs."""

    turn: Turn
    requests: int = 0
    #: The calls of the batch with the executor that have no published result yet.
    pending: set[CallId] = attrs.field(factory=set)
    #: How often the turn compacted history after the context window overflowed.
    overflow_compactions: int = 0
    #: Messages sent during the turn, waiting for its next step boundary.
    steering: list[UserInputAdopted] = attrs.field(factory=list)


class ModelLoop:
    """Runs a branch's turns: model steps, tool batches, the turn's end (a branch service)."""

    name = "model loop"

    def __init__(
        self,
        branch: Branch,
        *,
        executor: ToolExecutor,
        toolset: ToolSet,
        models: ModelSource,
        controls: SessionControls,
        context: ContextPreparer,
        settings: LoopSettings | None = None,
        new_request_id: Callable[[], str] = lambda: new_id("req"),
        hidden_tools: frozenset[str] = frozenset(),
    ) -> None:
        """`hidden_tools` are the tools this branch is not offered (a branch never starts
        a branch)."""
        self.branch = branch
        self.hidden_tools = hidden_tools
        self.executor = executor
        self.toolset = toolset
        self.models = models
        self.controls = controls
        self.context = context
        self.settings = settings if settings is not None else LoopSettings()
        self._new_request_id = new_request_id
        self._state = LoopState.IDLE
        self._run: _TurnRun | None = None
        self._begun: dict[TurnId, Turn] = {}
        self._adopted: set[TurnId] = set()
        self._proposals = CallProposals()
        self._handle: ModelHandle | None = None
        branch.observe_turns(self)  # what is queued for a turn is recorded before it ends

    @property
    def state(self) -> LoopState:
        return self._state

    # --- rebuild and live events --------------------------------------------------------

    async def rebuild(self, timeline: Timeline) -> Seq:
        """Learn the history; end a turn, a request and a compaction left open by a restart.

        Only the branch's own events count as its turns and requests: what a child
        inherits belongs to its parent (and never has anything open: its cut is quiet).
        """
        open_turn: TurnId | None = None
        open_requests: list[str] = []
        open_compactions: list[str] = []
        own = self.branch.id
        for event in await timeline.read():
            payload = event.payload
            if type(payload) not in _REBUILT_FROM:
                continue  # most of a history: deltas, the rest of a call's life, facts
            if isinstance(payload, ToolCallRequested):
                self._proposals.seen([payload.call_id])
            if event.branch_id != own:
                continue
            if isinstance(payload, CompactionStarted):
                open_compactions.append(payload.compaction_id)
            elif isinstance(payload, CompactionRecorded | CompactionFailed | CompactionCancelled):
                if payload.compaction_id in open_compactions:
                    open_compactions.remove(payload.compaction_id)
            elif isinstance(payload, UserInputAdopted) and payload.begins_turn:
                open_turn = TurnId(payload.input_id)
            elif isinstance(payload, TurnEnded | TurnInterrupted):
                open_turn = None
            elif isinstance(payload, ModelRequestStarted):
                open_requests.append(payload.request_id)
            elif (
                isinstance(
                    payload, ModelRequestFinished | ModelRequestFailed | ModelRequestInterrupted
                )
                and payload.request_id in open_requests
            ):
                open_requests.remove(payload.request_id)
        drafts = [
            EventDraft(ModelRequestInterrupted(request_id, "restart"), LOOP_PRODUCER)
            for request_id in open_requests
        ]
        drafts += [
            EventDraft(CompactionFailed(compaction_id, _COMPACTION_RESTARTED), LOOP_PRODUCER)
            for compaction_id in open_compactions
        ]
        if open_turn is not None:
            drafts.append(EventDraft(TurnInterrupted(open_turn), LOOP_PRODUCER))
        if drafts:
            await timeline.append(drafts)
        return timeline.last_published_seq

    async def handle(self, event: Event) -> None:
        payload = event.payload
        if isinstance(payload, UserInputAdopted):
            if not payload.begins_turn:
                return  # it joined the running turn (`steer`)
            turn_id = TurnId(payload.input_id)
            self._adopted.add(turn_id)
            self._begin_if_paired(turn_id)
        elif isinstance(payload, ToolResultRecorded):
            run = self._run
            if run is not None and payload.call_id in run.pending:
                run.pending.discard(payload.call_id)
                if not run.pending and self._state is LoopState.AWAITING_TOOLS:
                    self._start_step(run)
        elif isinstance(payload, TurnEnded | TurnInterrupted):
            self._adopted.discard(payload.turn_id)
            self._begun.pop(payload.turn_id, None)
            if self._run is not None and self._run.turn.turn_id == payload.turn_id:
                self._run = None
                self._state = LoopState.IDLE

    # --- turns ----------------------------------------------------------------------------

    async def start_turn(
        self,
        turn_id: TurnId,
        content: Sequence[ContentPart],
        *,
        sent: Sequence[ContentPart | None] = (),
    ) -> Turn:
        """Begin a turn with `content` and run it; `AlreadyStarted` while another turn runs.

        `sent`: what the person sent for each part the agent changed
        (`UserInputAdopted.sent`). `PromptTooLarge`, with nothing recorded, for a
        message the model cannot take even with all history compacted away.
        """
        specs = self._offered(self.toolset.current)
        tokens, limit = self.context.input_tokens(content), self.context.input_limit(specs)
        if tokens > limit:
            raise PromptTooLarge(tokens, limit, self.context.window())
        if self.branch.turn is None:
            # Today's state and rules go on record before the person's words.
            await self.context.start_turn(turn_id)
        turn = await self.branch.begin_turn(turn_id, content, sent=sent)
        self._begun[turn_id] = turn
        self._begin_if_paired(turn_id)
        return turn

    def steer(
        self, content: Sequence[ContentPart], *, sent: Sequence[ContentPart | None] = ()
    ) -> str | None:
        """Queue `content`, a message sent while the turn runs, for the turn's next step
        boundary (see the module docstring); returns the id it will be recorded under.
        None, with nothing queued, when no turn runs or the one running is ending.
        `sent` as for `start_turn`.

        `PromptTooLarge`, with nothing queued, for a message the model cannot take.
        """
        run = self._run
        if (
            run is None
            or self._state in (LoopState.IDLE, LoopState.ENDING)
            or run.turn.state is not TurnState.RUNNING
        ):
            return None
        specs = self._offered(self.toolset.current)
        tokens, limit = self.context.input_tokens(content), self.context.input_limit(specs)
        if tokens > limit:
            raise PromptTooLarge(tokens, limit, self.context.window())
        message = UserInputAdopted(new_id("msg"), content, sent, joined_turn=run.turn.turn_id)
        run.steering.append(message)
        return message.input_id

    async def _adopt_steering(self, run: _TurnRun) -> None:
        """Record the messages queued for the turn, each as input that joined it, in one
        batch."""
        if not run.steering:
            return
        taken, run.steering = run.steering, []
        await self.branch.append([EventDraft(message, LOOP_PRODUCER) for message in taken])

    # --- the branch's turns, as a `TurnObserver` ------------------------------------------

    async def turn_started(self, turn: Turn) -> None:
        return None

    async def turn_ending(self, turn: Turn) -> None:
        """Right before any ending of the turn is recorded: what is still queued for it
        goes on record first (the turn took it, though no request read it)."""
        run = self._run
        if run is not None and run.turn is turn and run.steering:
            try:
                await self._adopt_steering(run)
            except Exception:
                logger.exception("messages sent during turn %s could not be recorded", turn)

    def _begin_if_paired(self, turn_id: TurnId) -> None:
        turn = self._begun.get(turn_id)
        if turn is None or turn_id not in self._adopted:
            return
        del self._begun[turn_id]
        self._adopted.discard(turn_id)
        run = self._run = _TurnRun(turn)
        self._state = LoopState.PREPARING
        self._start_step(run)

    def _start_step(self, run: _TurnRun) -> None:
        self._state = LoopState.PREPARING
        # A turn cancelled meanwhile takes no work; it records how it ended itself.
        with contextlib.suppress(ScopeClosed):
            run.turn.start_soon(lambda: self._step(run), name=f"model step {run.turn.turn_id}")

    # --- one model step ---------------------------------------------------------------------

    async def _step(self, run: _TurnRun) -> None:
        turn_id = run.turn.turn_id
        if run.requests >= self.settings.max_turn_requests:
            await self._end(run, TurnStopReason.MAX_TURN_REQUESTS)
            return
        # A step boundary: what the person sent meanwhile goes into this request.
        await self._adopt_steering(run)
        request_id = self._new_request_id()
        try:
            handle = self._open_model()
        except ProviderNotConfigured as exc:
            await self.branch.append(
                [
                    EventDraft(
                        ModelRequestFailed(request_id, FailureKind.NOT_CONFIGURED, str(exc)),
                        LOOP_PRODUCER,
                    )
                ]
            )
            await self._end(run, TurnStopReason.END_TURN)
            return
        generation = self.toolset.current
        specs = self._offered(generation)
        prepared = await self.context.prepare(
            turn_id=turn_id,
            model=handle.model,
            provider=handle.provider,
            tools=specs,
            max_output_tokens=self.settings.max_output_tokens,
            # The session's thinking effort (its `thought_level` option), else the default.
            reasoning_effort=self.controls.reasoning_effort or self.settings.reasoning_effort,
        )
        bindings = self.executor.bindings

        def bind(_: Event) -> Callable[[], None]:
            bindings.bind(request_id, generation)
            return lambda: bindings.unbind(request_id)

        started = ModelRequestStarted(request_id, turn_id, handle.model_id, prepared.guide_version)
        await self.branch.append([EventDraft(started, LOOP_PRODUCER, register=bind)])
        run.requests += 1
        self._state = LoopState.STREAMING
        await self._stream(run, request_id, handle, prepared.request, generation)

    def _offered(self, generation: ToolGeneration) -> list[ToolSpec]:
        hidden = self.hidden_tools
        return [tool_spec(d) for d in generation.definitions if d.name not in hidden]

    def _open_model(self) -> ModelHandle:
        model_id = self.controls.model_id
        handle = self._handle
        if handle is None or handle.model_id != (model_id or handle.model_id):
            handle = self._handle = self.models.open(model_id)
        return handle

    async def _stream(
        self,
        run: _TurnRun,
        request_id: str,
        handle: ModelHandle,
        request: ModelRequest,
        generation: ToolGeneration,
    ) -> None:
        builder = ReplyBuilder()
        failure: ProviderError | None = None
        recorder = CoalescingRecorder(self.branch.append)
        async with anyio.create_task_group() as group:
            group.start_soon(recorder.run, name=f"deltas of {request_id}")
            try:
                async with handle.provider.stream(request) as events:
                    async for event in events:
                        # The deltas' text is recorded here; the reply builder keeps the
                        # rest (tool calls, usage, how the reply ended).
                        if isinstance(event, TextDelta):
                            record_delta(
                                recorder, ModelTextDelta, request_id, event.text, LOOP_PRODUCER
                            )
                            continue
                        if isinstance(event, ReasoningDelta):
                            record_delta(
                                recorder, ModelReasoningDelta, request_id, event.text, LOOP_PRODUCER
                            )
                            continue
                        builder.add(event)
                        if isinstance(event, ReasoningEnded):
                            reasoning = event.reasoning
                            ended = ModelReasoningEnded(
                                request_id, reasoning.signature, reasoning.redacted
                            )
                            recorder.add(EventDraft(ended, LOOP_PRODUCER))
                        elif isinstance(event, UsageReported):
                            self.context.note_usage(event.input_tokens, event.output_tokens)
            except ProviderError as exc:
                failure = exc
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await recorder.flush()
                    await self.branch.append(
                        [
                            EventDraft(
                                ModelRequestInterrupted(request_id, "cancelled"), LOOP_PRODUCER
                            )
                        ]
                    )
                raise
            finally:
                recorder.close()
        await recorder.flush()
        if failure is not None:
            await self._failed(run, request_id, failure, handle, request)
            return
        reply = builder.reply()
        usage = _usage(reply.usage, handle.pricing)
        calls = reply.tool_calls
        stop = reply.stop_reason or StopReason.END_TURN
        if calls and stop in (StopReason.END_TURN, StopReason.TOOL_USE):
            stop = StopReason.TOOL_USE
        elif calls:
            logger.info("request %s stopped with %s; its tool calls are dropped", request_id, stop)
            calls = ()
        elif stop is StopReason.TOOL_USE:
            stop = StopReason.END_TURN  # it said tool_use but proposed no complete call
        finished = EventDraft(
            ModelRequestFinished(request_id, _REPLY_STOPS[stop], usage), LOOP_PRODUCER
        )
        if not calls:
            await self.branch.append([finished])
            if run.steering and stop is StopReason.END_TURN:
                # A message came during the reply: the turn goes on to answer it.
                self._start_step(run)
                return
            await self._end(run, _TURN_STOPS.get(stop, TurnStopReason.END_TURN))
            return
        roots = self.controls.roots
        propose = self._proposals.propose
        requests = [propose(request_id, call, generation, roots) for call in calls]
        run.pending = {request.call_id for request in requests}
        self._state = LoopState.AWAITING_TOOLS
        # Recorded and handed over together: a cancel arriving now finds the batch with
        # the executor, which records "not executed" for it.
        with anyio.CancelScope(shield=True):
            await self.branch.append([finished, *(EventDraft(r, LOOP_PRODUCER) for r in requests)])
            await self.executor.accept(run.turn, requests)

    async def _failed(
        self,
        run: _TurnRun,
        request_id: str,
        failure: ProviderError,
        handle: ModelHandle,
        request: ModelRequest,
    ) -> None:
        kind = error_kind(failure)
        logger.warning("model request %s failed (%s): %s", request_id, kind, failure)
        overflowed = kind == FailureKind.CONTEXT_WINDOW
        compacting = overflowed and run.overflow_compactions < _OVERFLOW_COMPACTIONS
        message = str(failure)
        if compacting:
            window = self.context.note_overflow()
            message = message.rstrip(". ") + _COMPACTING.format(window=window)
        elif overflowed:
            message = message.rstrip(". ") + _GAVE_UP
        await self.branch.append(
            [EventDraft(ModelRequestFailed(request_id, kind, message), LOOP_PRODUCER)]
        )
        if compacting:
            # Summarise older history (the second time: all of it), then try again.
            run.overflow_compactions += 1
            try:
                await self.context.compact(
                    model=handle.model,
                    provider=handle.provider,
                    tools=request.tools,
                    trigger=CompactionTrigger.OVERFLOW,
                    keep_everything=run.overflow_compactions == _OVERFLOW_COMPACTIONS,
                )
            except (CompactionError, ProviderError) as exc:
                logger.warning("could not compact after %s overflowed: %s", request_id, exc)
            else:
                await self._step(run)
                return
        await self._end(run, TurnStopReason.MAX_TOKENS if overflowed else TurnStopReason.END_TURN)

    async def _end(self, run: _TurnRun, stop_reason: TurnStopReason) -> None:
        self._state = LoopState.ENDING
        await self.branch.end_turn(run.turn.turn_id, stop_reason)


def _usage(reported: UsageReported | None, pricing: Pricing | None) -> Usage:
    """The provider's counts as recorded, with what they cost at the model's prices."""
    if reported is None:
        return Usage()
    return Usage(
        reported.input_tokens,
        reported.output_tokens,
        reported.cache_read_tokens,
        reported.cache_write_tokens,
        reported.reasoning_tokens,
        None if pricing is None else pricing.cost_usd(reported),
    )
