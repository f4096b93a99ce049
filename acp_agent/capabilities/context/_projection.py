"""The projection: a branch's timeline, as the messages the model reads.

`Projection` folds published events incrementally into the messages a model request
carries (`_messages`: which event makes which message), the rule and state ledgers
(what holds now), the guide, and where a compaction may end (its boundaries); the
latest compaction stands for the history up to its boundary.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Final

from acp_agent.capabilities.context._guide import GuideEntry
from acp_agent.capabilities.context._messages import (
    CONTEXT_FACTS,
    MISSING_RESULT_TEXT,
    SOURCED_FACTS,
    MessageBuilder,
    ProjectedMessage,
    render_context_fact,
    user_input_parts,
)
from acp_agent.capabilities.context._rules import RuleLedger
from acp_agent.capabilities.context._state_sources import StateLedger
from acp_agent.capabilities.context._token_budget import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_text_tokens,
)
from acp_agent.core import (
    CompactionRecorded,
    ConversationRewound,
    Event,
    GuideAdopted,
    ModelRequestStarted,
    Payload,
    ToolResultRecorded,
    UserInputAdopted,
    encode_payload,
    is_hidden,
)
from acp_agent.models import Message, Text
from acp_agent.toolkit import tag, wrap

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

#: Facts that hold whatever the conversation became: kept in a rewound stretch.
_HOLDING_FACTS: Final = (*SOURCED_FACTS, GuideAdopted)
#: What the projection notes besides the messages (`Projection._note`): rewinds,
#: requests, the guide, compactions, the sourced facts.
_NOTED: Final = frozenset(
    {ConversationRewound, ModelRequestStarted, GuideAdopted, CompactionRecorded, *SOURCED_FACTS}
)
#: Facts that make (part of) a message: a compaction must cover at least one.
_VISIBLE_FACTS: Final = (
    *CONTEXT_FACTS,
    UserInputAdopted,
    ModelRequestStarted,
    ToolResultRecorded,
)


def render_compaction(
    compaction: CompactionRecorded, rules: RuleLedger, state: StateLedger
) -> Message:
    """The message that stands for history up to `covers_lte`: summary, then restatement."""
    summary = tag("summary", [("compaction", compaction.compaction_id)], compaction.summary)
    blocks = [RESTATEMENT_PREAMBLE, *rules.restatement(), *state.restatement()]
    restatement = wrap("restatement", [("compaction", compaction.compaction_id)], blocks)
    return Message("user", [Text(summary), Text(restatement)])


def _applies(covers_lte: int, seq: int, floor: int) -> bool:
    """Whether a compaction recorded at `seq` that covers up to `covers_lte` takes effect:
    it covers more than the one in effect (up to `floor`), and only what came before it."""
    return floor < covers_lte < seq


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
        self._builder = MessageBuilder()
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
            if _applies(payload.covers_lte, event.seq, floor):
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
        elif isinstance(payload, SOURCED_FACTS):
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
        builder = MessageBuilder()
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
        if not _applies(compaction.covers_lte, seq, floor):
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
        self._events, self._builder, self._token_sums = [], MessageBuilder(), [0]
        self._boundaries = []
        last_seq = self.last_seq
        for event in kept:
            if event.starts_batch and self._builder.at_rest and self._events:
                self._boundaries.append((int(self._events[-1].seq), len(self._events)))
            self._events.append(event)
            self._builder.feed(event)
        self.last_seq = last_seq
