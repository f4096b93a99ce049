"""Where a line of work may be cut: by prompt (a fork), or where nothing is open (a branch).

A fork keeps "the first n prompts with everything they produced": that is
history up to the end of prompt n's turn, moved forward to the next batch end.
Without n it is the whole published history, or, while a turn runs, history
up to the last turn that ended. A fork may name a message instead
(`message_cut`): through the turn a message belongs to, or, for a person's
message, up to just before it.

A branch started while its parent works inherits history up to the latest
batch end where no model reply, tool call or compaction is open
(`quiet_cut`): it never inherits half of a tool batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from acp_agent.core._branch import Branch
from acp_agent.core._errors import IllegalCut
from acp_agent.core._events import (
    CompactionCancelled,
    CompactionFailed,
    CompactionRecorded,
    CompactionStarted,
    ConversationRewound,
    Event,
    ModelRequestFailed,
    ModelRequestFinished,
    ModelRequestInterrupted,
    ModelRequestStarted,
    ToolCallRequested,
    ToolResultRecorded,
    TurnEnded,
    TurnInterrupted,
    UserInputAdopted,
)
from acp_agent.core._ids import NO_SEQ, Seq, TurnId

__all__ = ("hidden_ranges", "is_hidden", "message_cut", "prompt_cut", "quiet_cut")


def hidden_ranges(events: Iterable[Event]) -> list[tuple[int, int]]:
    """The `[anchor, rewind)` seq ranges rewinds took out of the conversation
    (`ConversationRewound`): recorded still, but not read or replayed."""
    return [
        (event.payload.anchor_seq, int(event.seq))
        for event in events
        if isinstance(event.payload, ConversationRewound)
    ]


def is_hidden(seq: int, ranges: Sequence[tuple[int, int]]) -> bool:
    """Whether `seq` is inside one of `hidden_ranges`."""
    return any(start <= seq < end for start, end in ranges)


async def prompt_cut(branch: Branch, through: int | None = None) -> Seq:
    """The batch end after prompt `through`'s turn (1-based), or after the last turn.

    Raises `IllegalCut` when the branch has fewer prompts than `through`, or that
    prompt's turn has not finished.
    """
    prompts: list[TurnId] = []
    endings: dict[TurnId, Seq] = {}
    events = await branch.read()
    hidden = hidden_ranges(events)  # a prompt a rewind took back is not counted
    for event in events:
        payload = event.payload
        if (
            isinstance(payload, UserInputAdopted)
            and payload.begins_turn
            and not is_hidden(int(event.seq), hidden)
        ):
            prompts.append(TurnId(payload.input_id))
        elif isinstance(payload, TurnEnded | TurnInterrupted):
            endings[payload.turn_id] = event.seq
    last = branch.timeline.last_published_seq
    if through is None:
        if branch.turn is None:
            return last
        cut = max(endings.values(), default=NO_SEQ)
    else:
        if through > len(prompts):
            raise IllegalCut(f"the session has {len(prompts)} prompt(s)")
        ending = endings.get(prompts[through - 1])
        if ending is None:
            raise IllegalCut(f"prompt {through} has not finished")
        cut = ending
    return await _batch_end_from(branch, cut)


async def message_cut(branch: Branch, message_id: str, *, before: bool = False) -> Seq:
    """The batch end after the turn that message `message_id` belongs to, or (`before`)
    the last batch end before a person's message, so the fork can send it anew.

    A person's message is named by its turn id (one sent during a turn, by its own id:
    it belongs to the turn it joined), a reply by its model request's id (the ids the
    ACP chunks carry). Raises `IllegalCut` for an id this branch does not have, a reply
    or a message sent during a turn named with `before`, or a turn that has not
    finished.
    """
    found: TurnId | None = None
    endings: dict[TurnId, Seq] = {}
    events = await branch.read()
    hidden = hidden_ranges(events)
    for event in events:
        payload = event.payload
        if is_hidden(int(event.seq), hidden) and getattr(payload, "input_id", None) == message_id:
            raise IllegalCut(f"message {message_id} was rewound away")
        if isinstance(payload, UserInputAdopted) and payload.input_id == message_id:
            if before and not payload.begins_turn:
                # Before it, its turn was running: no quiet place to cut.
                raise IllegalCut(f"{message_id} was sent during a turn; fork before that turn")
            if before:
                return await _batch_end_before(branch, event.seq)
            found = payload.turn_id
        elif isinstance(payload, ModelRequestStarted) and payload.request_id == message_id:
            if before:
                raise IllegalCut(f"{message_id} is a reply, not a person's message")
            found = payload.turn_id
        elif isinstance(payload, TurnEnded | TurnInterrupted):
            endings[payload.turn_id] = event.seq
    if found is None:
        raise IllegalCut(f"the session has no message {message_id}")
    ending = endings.get(found)
    if ending is None:
        raise IllegalCut(f"the turn of message {message_id} has not finished")
    return await _batch_end_from(branch, ending)


async def _batch_end_from(branch: Branch, seq: Seq) -> Seq:
    """`seq`, moved forward to the batch end it is in."""
    last = branch.timeline.last_published_seq
    while seq < last and not await branch.timeline.is_batch_end(seq):
        seq = Seq(seq + 1)
    return seq


async def _batch_end_before(branch: Branch, seq: Seq) -> Seq:
    """The last batch end before `seq` (`NO_SEQ` when there is none)."""
    cut = Seq(seq - 1)
    while cut > NO_SEQ and not await branch.timeline.is_batch_end(cut):
        cut = Seq(cut - 1)
    return cut


async def quiet_cut(branch: Branch) -> Seq:
    """The latest published batch end at which no reply, tool call or compaction is open."""
    open_work: set[str] = set()
    quiet = NO_SEQ
    async for batch in branch.timeline.batches():
        for event in batch:
            payload = event.payload
            if isinstance(payload, ModelRequestStarted):
                open_work.add(payload.request_id)
            elif isinstance(
                payload, ModelRequestFinished | ModelRequestFailed | ModelRequestInterrupted
            ):
                open_work.discard(payload.request_id)
            elif isinstance(payload, ToolCallRequested):
                open_work.add(payload.call_id)
            elif isinstance(payload, ToolResultRecorded):
                open_work.discard(payload.call_id)
            elif isinstance(payload, CompactionStarted):
                open_work.add(payload.compaction_id)
            elif isinstance(payload, CompactionRecorded | CompactionFailed | CompactionCancelled):
                open_work.discard(payload.compaction_id)
        if not open_work:
            quiet = batch[-1].seq
    return quiet
