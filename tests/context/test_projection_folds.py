"""A long history folded at once ends where folding it batch by batch ends.

A projection fed many events at once notes what comes before the last compaction
that applies without building its messages (`Projection._last_compaction_at`):
that compaction builds them again from its boundary. Everything the projection
answers must be what folding the same events batch by batch gives (the path a live
session takes, each batch as it is published), with compactions, ignored
compactions, rewinds and the refold a rewind asks for, as the context engine
does it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_agent.capabilities.context._projection import Projection
from acp_agent.core import (
    CompactionRecorded,
    ConversationRewound,
    Event,
    NotificationReceived,
    RuleRevoked,
    RuleSet,
    Seq,
    StateSet,
    UserInputAdopted,
)
from tests.context.test_projection import History, reply, result, said

#: One step of a history: a turn (with how many tool calls), a fact, a compaction (how
#: far back its boundary is, as a share of the history), a rewind (to which message).
_STEPS = st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("fact"), st.sampled_from(["state", "rule", "revoke", "note"])),
    st.tuples(st.just("compact"), st.floats(0.0, 1.0)),
    st.tuples(st.just("rewind"), st.floats(0.0, 1.0)),
)


def _history(steps: Sequence[tuple[Any, ...]]) -> History:
    history = History()
    for number, step in enumerate(steps):
        if step[0] == "turn":
            _, calls, with_fact = step
            facts = [StateSet("environment/date", f"day {number}")] if with_fact else []
            history.batch(said(f"turn {number}"), *facts)
            ids = [(f"call_{number}_{i}", "read") for i in range(calls)]
            reply(history, f"req_{number}_a", f"Reading {number}.", *ids)
            if ids:
                history.batch(NotificationReceived("tools/bash", f"job {number} ran"))
                for call_id, _ in ids:
                    history.batch(result(call_id, f"text {number}"))
                reply(history, f"req_{number}_b", f"Done {number}.")
        elif step[0] == "fact":
            fact = {
                "state": StateSet("git/branch", f"topic-{number}"),
                "rule": RuleSet("workspace/AGENTS.md", ".", f"Rule {number}."),
                "revoke": RuleRevoked("workspace/AGENTS.md", ".", "its file was deleted"),
                "note": NotificationReceived("tools/bash", f"note {number}"),
            }[step[1]]
            history.batch(fact)
        elif step[0] == "compact" and history.events:
            # Any boundary, valid or not (at or past its own seq, or short of the one in
            # effect): the projection decides which apply.
            covers_lte = int(step[1] * (history.last_seq + 3))
            history.batch(CompactionRecorded(f"cmp_{number}", Seq(covers_lte), f"sum {number}"))
        elif step[0] == "rewind":
            anchors = [e.seq for e in history.events if isinstance(e.payload, UserInputAdopted)]
            if anchors:
                anchor = anchors[min(len(anchors) - 1, int(step[1] * len(anchors)))]
                history.batch(ConversationRewound(f"rw_{number}", "turn_1", int(anchor), [], []))
    return history


def _folded(chunks: Sequence[Sequence[Event]], *, refold: bool = True) -> Projection:
    """The events fed chunk by chunk, as the context engine feeds them: a rewind the
    projection did not know of makes it fold everything again without what it hides
    (unless not `refold`: then the projection is left stale)."""
    projection = Projection()
    seen: list[Event] = []
    for chunk in chunks:
        seen.extend(chunk)
        projection.feed(chunk)
        if projection.stale and refold:
            projection_again = Projection(projection.hidden)
            projection_again.feed(list(seen))
            projection = projection_again
    return projection


def _batches(events: Sequence[Event]) -> list[list[Event]]:
    batches: dict[int, list[Event]] = {}
    for event in events:
        batches.setdefault(int(event.batch_id), []).append(event)
    return list(batches.values())


def _answers(projection: Projection, events: Sequence[Event]) -> dict[str, Any]:
    """Everything a projection tells its engine and a compaction."""
    seqs = [int(e.seq) for e in events]
    probes = sorted({seqs[0], seqs[len(seqs) // 2], seqs[-1]})
    return {
        "messages": [(p.message, p.last_seq, p.tokens) for p in projection.messages()],
        "boundaries": projection.boundaries(),
        "compaction": (projection.compaction, projection.compaction_seq),
        "last": (projection.last_seq, projection.last_request_seq, projection.guide),
        "hidden": sorted(projection.hidden),
        "ledgers": (projection.rules.restatement(), projection.state.restatement()),
        "through": [
            [p.message for p in projection.messages_through(lte)]
            for lte in probes
            if projection.compaction is None or lte > projection.compaction.covers_lte
        ],
        "ledgers_at": [
            tuple(ledger.restatement() for ledger in projection.ledgers_at(lte)) for lte in probes
        ],
    }


@settings(max_examples=300, deadline=None)
@given(st.lists(_STEPS, min_size=1, max_size=30), st.data())
def test_folding_at_once_or_in_pieces_answers_as_batch_by_batch(
    steps: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    history = _history(steps)
    events = history.events
    if not events:
        return
    expected = _answers(_folded(_batches(events)), events)
    assert _answers(_folded([events]), events) == expected
    # Stale too: what a rewind is about to take out is folded the same way.
    stale = _answers(_folded(_batches(events), refold=False), events)
    assert _answers(_folded([events], refold=False), events) == stale
    # Two pieces, split anywhere between batches (a load, then what a turn adds).
    starts = [i for i, e in enumerate(events) if int(e.seq) == int(e.batch_id)]
    split = data.draw(st.sampled_from(starts))
    assert _answers(_folded([events[:split], events[split:]]), events) == expected


def test_a_long_history_is_built_from_its_last_compaction_on() -> None:
    steps: list[tuple[Any, ...]] = []
    for turn in range(12):
        steps.append(("turn", turn % 3, True))
        if turn in (4, 9):
            steps.append(("compact", 0.8))
    events = _history(steps).events
    projection = Projection()
    last = max(i for i, e in enumerate(events) if isinstance(e.payload, CompactionRecorded))
    assert projection._last_compaction_at(events) == last
    assert _answers(_folded([events]), events) == _answers(_folded(_batches(events)), events)


def test_a_compaction_a_rewind_took_out_is_not_where_the_messages_are_built_from() -> None:
    steps: list[tuple[Any, ...]] = [
        ("turn", 1, True),
        ("turn", 0, False),
        ("turn", 2, True),
        ("compact", 0.5),
        ("turn", 0, True),
        ("rewind", 0.5),  # to the second turn's message: the compaction is taken out
        ("turn", 1, False),
    ]
    events = _history(steps).events
    rewound = _folded([events], refold=False)
    assert rewound.stale
    again = Projection(rewound.hidden)
    assert again._last_compaction_at(events) == 0
    assert _answers(_folded([events]), events) == _answers(_folded(_batches(events)), events)
