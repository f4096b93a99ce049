"""Where a line of work may be cut by prompt: after the n-th prompt's turn, or the last one.

A fork keeps "the first n prompts with everything they produced": that is
history up to the end of prompt n's turn, moved forward to the next batch end.
Without n it is the whole published history, or, while a turn runs, history
up to the last turn that ended.
"""

from __future__ import annotations

from acp_agent.core._branch import Branch
from acp_agent.core._errors import IllegalCut
from acp_agent.core._events import TurnEnded, TurnInterrupted, UserInputAdopted
from acp_agent.core._ids import NO_SEQ, Seq, TurnId

__all__ = ("prompt_cut",)


async def prompt_cut(branch: Branch, through: int | None = None) -> Seq:
    """The batch end after prompt `through`'s turn (1-based), or after the last turn.

    Raises `IllegalCut` when the branch has fewer prompts than `through`, or that
    prompt's turn has not finished.
    """
    prompts: list[TurnId] = []
    endings: dict[TurnId, Seq] = {}
    for event in await branch.read():
        payload = event.payload
        if isinstance(payload, UserInputAdopted):
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
    while cut < last and not await branch.timeline.is_batch_end(cut):
        cut = Seq(cut + 1)
    return cut
