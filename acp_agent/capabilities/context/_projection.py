"""The projection: a branch's timeline, as the messages the model reads.

Events become messages like this (every rendering is a pure function of the
events, so the same history always gives the same bytes, and a message
never changes once later events arrive: the provider's prompt cache holds):

=============================== ===============================================
events                          message
=============================== ===============================================
`UserInputAdopted`              user: the person's text untagged, attachments as
                                `<attachment>`, images as images
`ModelRequestStarted` ...       assistant: reasoning, text and tool calls of one
(deltas, `ToolCallRequested`)   reply, in order
`ToolResultRecorded`            user: the results for every call of the reply
                                before it, in call order (once all are in); their
                                runtime tag names neutralized (`tags`)
state, rule, notification,      user: one tagged text part each, a message per
branch message facts            batch; facts recorded while a reply or its tool
                                calls are open join the results message after
                                the results (nothing may separate a tool call
                                from its result)
`CompactionRecorded`            user: `<summary>` and `<restatement>` in place of
                                everything up to `covers_lte`
`ConversationRewound`           user: a `<notification>` that the conversation was
                                rewound (files put back, what was not undone);
                                history from its anchor up to it is left out,
                                except rules, state and the guide, which hold
=============================== ===============================================

Facts the model does not read (permissions, turn endings, progress) are
skipped. `Projection` folds events incrementally; it also keeps the rule and
state ledgers (what holds now) and where a compaction may end (its boundaries).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any, Final

import attrs

from acp_agent.capabilities.context._guide import GuideEntry
from acp_agent.capabilities.context._notifications import render_notification
from acp_agent.capabilities.context._rules import RuleLedger, render_rule_payload
from acp_agent.capabilities.context._state_sources import (
    StateLedger,
    render_state,
    render_state_cleared,
)
from acp_agent.capabilities.context._token_budget import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_message_tokens,
    estimate_text_tokens,
)
from acp_agent.content import (
    ContentPart,
    ImageContent,
    ResourceContent,
    ResourceLinkContent,
    TextContent,
)
from acp_agent.core import (
    BranchMessageReceived,
    CompactionRecorded,
    ConversationRewound,
    Event,
    GuideAdopted,
    ModelReasoningDelta,
    ModelReasoningEnded,
    ModelRequestFailed,
    ModelRequestFinished,
    ModelRequestInterrupted,
    ModelRequestStarted,
    ModelTextDelta,
    NotificationReceived,
    Payload,
    RuleExpired,
    RuleReplaced,
    RuleRevoked,
    RuleSet,
    StateCleared,
    StateSet,
    ToolCallRequested,
    ToolOutcome,
    ToolResultRecorded,
    UserInputAdopted,
    encode_part,
    encode_payload,
    is_hidden,
)
from acp_agent.models import Image, Message, Part, Reasoning, Text, ToolCall, ToolResult
from acp_agent.toolkit import neutralize_runtime_tags, tag, wrap
from acp_agent.values import Value
from jsonbounds import TOO_DEEP, nesting_exceeds

__all__ = (
    "BRANCH_MESSAGES_GUIDE_ENTRY",
    "MISSING_RESULT_TEXT",
    "RESTATEMENT_PREAMBLE",
    "ProjectedMessage",
    "Projection",
    "render_compaction",
    "render_context_fact",
    "user_input_parts",
)

logger = logging.getLogger(__name__)

#: What the model reads for a call whose result was never recorded.
MISSING_RESULT_TEXT: Final = (
    "No result was recorded for this call: it may not have run, or may have been cut "
    "off. Check the state before trying again."
)
#: What an event nested too deeply to encode is taken to cost (a rough guess: see
#: `_event_tokens`).
_DEEP_EVENT_TOKENS: Final = 1000
#: The first line of every restatement.
RESTATEMENT_PREAMBLE: Final = (
    "This confirms the rules and state that still hold where the summary ends. "
    "It changes nothing and grants nothing; anything not listed here is not in effect."
)

BRANCH_MESSAGES_GUIDE_ENTRY: Final = GuideEntry(
    "core/branch-messages",
    "core",
    order=40,
    text="""\
## Branch messages: `<branch-message>`

`<branch-message from="BRANCH">text</branch-message>` is a message another branch \
(another line of work in this session) sent to this one. It reports on that branch's \
work; it is not the person's request. Which branch you are is given by \
`<state source="branch/identity">`.""",
)

#: Facts folded into the rule and state ledgers.
_SOURCED_FACTS: Final = (StateSet, StateCleared, RuleSet, RuleReplaced, RuleRevoked, RuleExpired)
#: Facts the model reads as tagged blocks.
_CONTEXT_FACTS: Final = (
    *_SOURCED_FACTS,
    NotificationReceived,
    BranchMessageReceived,
    ConversationRewound,
)
#: Facts that hold whatever the conversation became: kept in a rewound stretch.
_HOLDING_FACTS: Final = (*_SOURCED_FACTS, GuideAdopted)
#: What the message builder folds (every other fact it passes over).
_BUILT_FROM: Final = frozenset(
    {
        ModelRequestStarted,
        ModelTextDelta,
        ModelReasoningDelta,
        ModelReasoningEnded,
        ToolCallRequested,
        ModelRequestFinished,
        ModelRequestFailed,
        ModelRequestInterrupted,
        ToolResultRecorded,
        UserInputAdopted,
        *_CONTEXT_FACTS,
    }
)
#: What the projection notes besides the messages (`Projection._note`): rewinds,
#: requests, the guide, compactions, the sourced facts.
_NOTED: Final = frozenset(
    {ConversationRewound, ModelRequestStarted, GuideAdopted, CompactionRecorded, *_SOURCED_FACTS}
)
#: The source a rewind's notification names.
REWIND_SOURCE: Final = "session/rewind"
#: Facts that make (part of) a message: a compaction must cover at least one.
_VISIBLE_FACTS: Final = (
    *_CONTEXT_FACTS,
    UserInputAdopted,
    ModelRequestStarted,
    ToolResultRecorded,
)


@attrs.frozen
class ProjectedMessage(Value):
    """A message and the newest seq it renders (the cache prefix is decided by it)."""

    message: Message
    last_seq: int
    #: Its estimated tokens, worked out once: every later request carries it again.
    tokens: int = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "tokens", estimate_message_tokens(self.message))


def render_context_fact(payload: Payload) -> str | None:
    """The tagged block for a state, rule, notification or branch-message fact."""
    if isinstance(payload, StateSet):
        return render_state(payload.source, payload.value)
    if isinstance(payload, StateCleared):
        return render_state_cleared(payload.source)
    if isinstance(payload, NotificationReceived):
        return render_notification(payload.source, payload.text)
    if isinstance(payload, BranchMessageReceived):
        return tag("branch-message", [("from", payload.sender_branch_id)], payload.text)
    if isinstance(payload, ConversationRewound):
        return render_notification(REWIND_SOURCE, _rewind_text(payload))
    return render_rule_payload(payload)


def _rewind_text(rewound: ConversationRewound) -> str:
    lines = [
        "The person rewound the conversation to just before one of their messages: what "
        "came after it is no longer part of this conversation, and the files the agent "
        "had changed since are as they were then."
    ]
    if rewound.restored:
        lines.append("Put back: " + ", ".join(rewound.restored))
    if rewound.removed:
        lines.append("Removed (created after that message): " + ", ".join(rewound.removed))
    if rewound.not_undone:
        lines.append(
            "Not undone (these ran, and their effects remain): " + "; ".join(rewound.not_undone)
        )
    return "\n".join(lines)


def render_compaction(
    compaction: CompactionRecorded, rules: RuleLedger, state: StateLedger
) -> Message:
    """The message that stands for history up to `covers_lte`: summary, then restatement."""
    summary = tag("summary", [("compaction", compaction.compaction_id)], compaction.summary)
    blocks = [RESTATEMENT_PREAMBLE, *rules.restatement(), *state.restatement()]
    restatement = wrap("restatement", [("compaction", compaction.compaction_id)], blocks)
    return Message("user", [Text(summary), Text(restatement)])


def user_input_parts(content: Sequence[ContentPart]) -> list[Part]:
    """The person's content parts as message parts (a tool's kinds have no place here)."""
    parts: list[Part] = []
    for part in content:
        if isinstance(part, TextContent):
            if part.text:
                parts.append(Text(part.text))
        elif isinstance(part, ImageContent):
            if part.data:
                parts.append(Image(part.data, part.mime_type or "image/png"))
        elif isinstance(part, ResourceLinkContent):
            attributes = [("uri", part.uri)]
            if part.name:
                attributes.append(("name", part.name))
            parts.append(Text(tag("attachment", attributes)))
        elif isinstance(part, ResourceContent):
            attributes = [("uri", part.uri)]
            if part.mime_type:
                attributes.append(("mime", part.mime_type))
            parts.append(Text(tag("attachment", attributes, part.text or None)))
    return parts


def _result_text(payload: ToolResultRecorded) -> str:
    """What the model reads of a result: outside content, so no runtime tag survives in it."""
    return neutralize_runtime_tags(_raw_result_text(payload))


def _raw_result_text(payload: ToolResultRecorded) -> str:
    if payload.model_text is not None:
        return payload.model_text
    pieces = []
    for part in payload.content:
        if isinstance(part, TextContent):
            pieces.append(part.text)
        else:
            pieces.append(json.dumps(encode_part(part), ensure_ascii=False, sort_keys=True))
    text = "\n".join(pieces)
    if text:
        return text
    if payload.outcome is ToolOutcome.INTERRUPTED:
        return "The call was interrupted; it may have had effects."
    if payload.outcome is ToolOutcome.NOT_EXECUTED:
        return "The call was not executed."
    return "(no output)"


def _arguments_text(arguments: dict[str, Any]) -> str:
    if nesting_exceeds(arguments):
        # Only a store written before arguments were bounded at the edge holds these.
        arguments = {"__invalid_arguments__": f"(arguments {TOO_DEEP}; not shown)"}
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


@attrs.define
class _Reply:
    """An assistant reply being folded: its parts and its tool calls."""

    request_id: str
    last_seq: int
    parts: list[Part] = attrs.Factory(list)
    text: list[str] = attrs.Factory(list)
    reasoning: list[str] = attrs.Factory(list)
    calls: list[str] = attrs.Factory(list)
    #: The batch that ended the reply (its tool calls may still follow in it), or None.
    ended_batch: int | None = None

    def flush_text(self) -> None:
        if self.text:
            self.parts.append(Text("".join(self.text)))
            self.text.clear()

    def flush_reasoning(self, signature: str | None = None, redacted: bool = False) -> None:
        if self.reasoning or redacted:
            self.parts.append(Reasoning("".join(self.reasoning), signature, redacted))
            self.reasoning.clear()

    def message(self) -> Message | None:
        self.flush_reasoning()
        self.flush_text()
        return Message("assistant", self.parts) if self.parts else None

    def copy(self) -> _Reply:
        return attrs.evolve(
            self,
            parts=list(self.parts),
            text=list(self.text),
            reasoning=list(self.reasoning),
            calls=list(self.calls),
        )


class _MessageBuilder:
    """The state machine of the table in the module docstring."""

    def __init__(self) -> None:
        self.messages: list[ProjectedMessage] = []
        self._reply: _Reply | None = None
        #: Calls of the last assistant message still waiting for their results.
        self._pending: list[str] = []
        self._results: dict[str, ToolResult] = {}
        self._results_seq = 0
        #: Facts held back while a reply or its calls are open: (text, seq).
        self._deferred: list[tuple[str, int]] = []
        #: The batch of the last message made of facts (later facts of it join it).
        self._facts_batch: int | None = None

    def copy(self) -> _MessageBuilder:
        other = _MessageBuilder()
        other.messages = list(self.messages)
        other._reply = self._reply.copy() if self._reply is not None else None
        other._pending = list(self._pending)
        other._results = dict(self._results)
        other._results_seq = self._results_seq
        other._deferred = list(self._deferred)
        other._facts_batch = self._facts_batch
        return other

    @property
    def at_rest(self) -> bool:
        """No reply is open with tool calls and no call waits for its result."""
        reply = self._reply
        open_reply = reply is not None and (reply.ended_batch is None or bool(reply.calls))
        return not open_reply and not self._pending

    def feed(self, event: Event) -> None:
        payload, seq = event.payload, event.seq
        reply = self._reply
        if type(payload) is ModelTextDelta:  # most events of a long history: a few steps
            if reply is not None and payload.request_id == reply.request_id:
                if reply.reasoning:
                    reply.flush_reasoning()
                reply.text.append(payload.text)
                reply.last_seq = seq
            return
        if type(payload) not in _BUILT_FROM:
            return  # a call's steps, a turn's end, a guide: nothing the model reads here
        mine = reply is not None and getattr(payload, "request_id", None) == reply.request_id
        if isinstance(payload, ModelRequestStarted):
            self.settle()
            self._reply = _Reply(payload.request_id, seq)
        elif isinstance(payload, ModelReasoningDelta):
            if mine and reply is not None:
                reply.flush_text()
                reply.reasoning.append(payload.text)
                reply.last_seq = seq
        elif isinstance(payload, ModelReasoningEnded):
            if mine and reply is not None:
                reply.flush_text()
                reply.flush_reasoning(payload.signature, payload.redacted)
                reply.last_seq = seq
        elif isinstance(payload, ToolCallRequested):
            if mine and reply is not None:
                reply.flush_reasoning()
                reply.flush_text()
                arguments = _arguments_text(payload.arguments)
                reply.parts.append(ToolCall(payload.call_id, payload.tool, arguments))
                reply.calls.append(payload.call_id)
                reply.last_seq = seq
        elif isinstance(
            payload, ModelRequestFinished | ModelRequestFailed | ModelRequestInterrupted
        ):
            if mine and reply is not None:
                reply.ended_batch = int(event.batch_id)
                reply.last_seq = seq
        elif isinstance(payload, ToolResultRecorded):
            self._close_reply()
            if payload.call_id in self._pending and payload.call_id not in self._results:
                self._results[payload.call_id] = ToolResult(
                    payload.call_id, _result_text(payload), payload.is_error
                )
                self._results_seq = seq
                if len(self._results) == len(self._pending):
                    self._emit_results()
        elif isinstance(payload, UserInputAdopted):
            self.settle()
            parts = user_input_parts(payload.content)
            if parts:
                self._append(Message("user", parts), seq)
        elif isinstance(payload, _CONTEXT_FACTS):
            text = render_context_fact(payload)
            if text is None:
                return
            if reply is not None and reply.ended_batch not in (None, int(event.batch_id)):
                self._close_reply()  # the reply ended in an earlier batch: nothing joins it
            if self._reply is not None or self._pending:
                self._deferred.append((text, seq))
            else:
                self._add_fact(text, seq, int(event.batch_id))

    def settle(self) -> None:
        """Close whatever is open: the reply, its results (missing ones synthesized)."""
        self._close_reply()
        if self._pending:
            for call_id in self._pending:
                if call_id not in self._results:
                    self._results[call_id] = ToolResult(call_id, MISSING_RESULT_TEXT, True)
            self._emit_results()
        elif self._deferred:
            self._emit_deferred()

    def _close_reply(self) -> None:
        reply, self._reply = self._reply, None
        if reply is None:
            return
        message = reply.message()
        if message is not None:
            self._append(message, reply.last_seq)
            self._pending = list(reply.calls)
            self._results = {}
        if not self._pending and self._deferred:
            self._emit_deferred()

    def _emit_results(self) -> None:
        parts: list[Part] = [self._results[call_id] for call_id in self._pending]
        last_seq = self._results_seq
        for text, seq in self._deferred:
            parts.append(Text(text))
            last_seq = max(last_seq, seq)
        self._pending, self._results, self._deferred = [], {}, []
        self._append(Message("user", parts), last_seq)

    def _emit_deferred(self) -> None:
        parts: list[Part] = [Text(text) for text, _ in self._deferred]
        last_seq = max(seq for _, seq in self._deferred)
        self._deferred = []
        self._append(Message("user", parts), last_seq)

    def _add_fact(self, text: str, seq: int, batch: int) -> None:
        if self._facts_batch == batch and self.messages:
            last = self.messages[-1]
            message = Message("user", [*last.message.parts, Text(text)])
            self.messages[-1] = ProjectedMessage(message, seq)
        else:
            self._append(Message("user", [Text(text)]), seq)
        self._facts_batch = batch

    def _append(self, message: Message, last_seq: int) -> None:
        self.messages.append(ProjectedMessage(message, last_seq))
        self._facts_batch = None


def _event_tokens(event: Event) -> int:
    """A rough size of what `event` adds to the projection (for choosing a boundary)."""
    if isinstance(event.payload, UserInputAdopted | ToolResultRecorded | ModelRequestStarted):
        overhead = MESSAGE_OVERHEAD_TOKENS
    else:
        overhead = 0
    try:
        return overhead + estimate_text_tokens(encode_payload(event.payload))
    except RecursionError:
        # Only a store written before input was bounded at the edges holds such an event.
        return overhead + _DEEP_EVENT_TOKENS


class Projection:
    """A branch's history folded into messages, ledgers and compaction boundaries, incrementally.

    Feed it every published event in order (`feed`); `messages()` is then what a
    model request carries. The latest `CompactionRecorded` replaces history up to
    its `covers_lte` with its summary and a restatement of the rules and state
    that held there; later events follow as usual.
    """

    def __init__(self, hidden: Sequence[tuple[int, int]] = ()) -> None:
        self.last_seq = 0
        #: The stretches rewinds took out of the conversation (`hidden_ranges`).
        self.hidden = list(hidden)
        #: A rewind arrived that this projection did not know of when it folded what it
        #: takes out: fold the branch again, into `Projection(self.hidden)`.
        self.stale = False
        #: The seq of the newest `ModelRequestStarted`; 0 when none.
        self.last_request_seq = 0
        #: The newest guide adoption, if any.
        self.guide: GuideAdopted | None = None
        #: The compaction in effect, and the seq of its record.
        self.compaction: CompactionRecorded | None = None
        self.compaction_seq = 0
        #: What holds now (every event folded).
        self.rules = RuleLedger()
        self.state = StateLedger()
        self._sourced: list[tuple[int, Payload]] = []
        #: Events after the compaction's `covers_lte` (all, without one).
        self._events: list[Event] = []
        self._builder = _MessageBuilder()
        self._prelude: ProjectedMessage | None = None
        #: (batch end seq, how many of `_events` come up to it) where a compaction may
        #: end: whole batches, no reply or tool call left open.
        self._boundaries: list[tuple[int, int]] = []
        #: The tokens of `_events[:n]` at `n`, summed when a compaction looks for its end
        #: (estimating each event while folding would cost a long load's first prompt).
        self._token_sums: list[int] = [0]

    def feed(self, events: Iterable[Event]) -> None:
        """Fold published events, in seq order (whole batches)."""
        events = events if isinstance(events, list) else list(events)
        # A long session's first fold: what comes before its last compaction only has to
        # be noted, since the compaction makes the messages again from the events after
        # its boundary (`_apply_compaction`).
        cut = self._last_compaction_at(events)
        for event in events[:cut]:
            seq = event.seq
            if seq <= self.last_seq:
                continue
            self.last_seq = seq
            payload = event.payload
            if (type(payload) in _NOTED or self.hidden) and not self._note(payload, build=False):
                continue
            self._events.append(event)
        # Thousands of events on a long session's first fold: each step here is paid per
        # event, so the seqs are compared as they are (ints) and only the rare kinds (and
        # any event once a rewind hid something) are looked at before the builder.
        builder = self._builder
        for event in events[cut:] if cut else events:
            seq = event.seq
            if seq <= self.last_seq:
                continue
            if seq == int(event.batch_id) and builder.at_rest:  # `starts_batch`
                self._boundaries.append((self.last_seq, len(self._events)))
            self.last_seq = seq
            payload = event.payload
            if (type(payload) in _NOTED or self.hidden) and not self._note(payload):
                builder = self._builder  # a compaction starts a builder of its own
                continue
            self._events.append(event)
            builder.feed(event)

    def _last_compaction_at(self, events: list[Event]) -> int:
        """Where in `events` the last compaction that will apply is, as `_note` and
        `_apply_compaction` decide it (0: none). A rewind among them hides only what
        comes before it, so it changes none of these decisions."""
        floor = self.compaction.covers_lte if self.compaction is not None else 0
        hidden, at = self.hidden, 0
        for index, event in enumerate(events):
            payload = event.payload
            if type(payload) is not CompactionRecorded or event.seq <= self.last_seq:
                continue
            if hidden and is_hidden(event.seq, hidden):
                continue
            if floor < payload.covers_lte < event.seq:
                floor, at = payload.covers_lte, index
        return at

    def _note(self, payload: Payload, *, build: bool = True) -> bool:
        """Note a rewind, request, guide, compaction or sourced fact just folded (at
        `last_seq`); whether the event goes on to the messages (not one a rewind hid,
        not a compaction, which rebuilds them, unless not `build`: a later one will)."""
        seq = self.last_seq
        if isinstance(payload, ConversationRewound):
            stretch = (payload.anchor_seq, seq)
            if stretch not in self.hidden:
                self.hidden.append(stretch)
                self.stale = True
        elif (
            self.hidden and is_hidden(seq, self.hidden) and not isinstance(payload, _HOLDING_FACTS)
        ):
            return False
        if isinstance(payload, ModelRequestStarted):
            self.last_request_seq = seq
        elif isinstance(payload, GuideAdopted):
            self.guide = payload
        elif isinstance(payload, CompactionRecorded):
            self._apply_compaction(payload, seq, build=build)
            return False
        elif isinstance(payload, _SOURCED_FACTS):
            self.rules.apply(payload, seq)
            self.state.apply(payload, seq)
            self._sourced.append((seq, payload))
        return True

    def messages(self) -> list[ProjectedMessage]:
        """The messages a request carries now: prelude, then history, all settled."""
        builder = self._builder.copy()
        builder.settle()
        prelude = [self._prelude] if self._prelude is not None else []
        return prelude + builder.messages

    def messages_through(self, lte: int) -> list[ProjectedMessage]:
        """The messages for history up to `lte` only (what a compaction summarises)."""
        builder = _MessageBuilder()
        for event in self._events:
            if int(event.seq) > lte:
                break
            builder.feed(event)
        builder.settle()
        prelude = [self._prelude] if self._prelude is not None else []
        return prelude + builder.messages

    def boundaries(self) -> list[tuple[int, int]]:
        """Where a new compaction may end, with the tokens it would keep after each.

        Each is `(covers_lte, tokens after it)`, oldest first; the current end is
        included when history is at rest there. Every boundary covers at least one
        event the model reads that the compaction in effect does not.
        """
        visible = [int(e.seq) for e in self._events if isinstance(e.payload, _VISIBLE_FACTS)]
        if not visible:
            return []
        total = self._tokens_before(len(self._events))
        points = [(seq, total - self._tokens_before(n)) for seq, n in self._boundaries]
        if self._builder.at_rest:
            points.append((self.last_seq, 0))
        return [(seq, kept) for seq, kept in points if seq >= visible[0]]

    def _tokens_before(self, count: int) -> int:
        """The estimated tokens of the first `count` events of `_events`."""
        sums = self._token_sums
        while len(sums) <= count:
            sums.append(sums[-1] + _event_tokens(self._events[len(sums) - 1]))
        return sums[count]

    def ledgers_at(self, lte: int) -> tuple[RuleLedger, StateLedger]:
        """The rules and state that held after seq `lte`."""
        rules, state = RuleLedger(), StateLedger()
        for seq, payload in self._sourced:
            if seq > lte:
                break
            rules.apply(payload, seq)
            state.apply(payload, seq)
        return rules, state

    def _apply_compaction(
        self, compaction: CompactionRecorded, seq: int, *, build: bool = True
    ) -> None:
        floor = self.compaction.covers_lte if self.compaction is not None else 0
        if compaction.covers_lte <= floor or compaction.covers_lte >= seq:
            logger.warning(
                "ignoring compaction %s: it covers up to %s, the one in effect up to %s",
                compaction.compaction_id,
                compaction.covers_lte,
                floor,
            )
            return
        kept = [event for event in self._events if event.seq > compaction.covers_lte]
        if not build:  # a later compaction in the same fold builds the messages
            self.compaction, self.compaction_seq, self._events = compaction, seq, kept
            return
        rules, state = self.ledgers_at(compaction.covers_lte)
        self.compaction, self.compaction_seq = compaction, seq
        self._prelude = ProjectedMessage(render_compaction(compaction, rules, state), seq)
        self._events, self._builder, self._token_sums = [], _MessageBuilder(), [0]
        self._boundaries = []
        last_seq = self.last_seq
        for event in kept:
            if event.starts_batch and self._builder.at_rest and self._events:
                self._boundaries.append((int(self._events[-1].seq), len(self._events)))
            self._events.append(event)
            self._builder.feed(event)
        self.last_seq = last_seq
