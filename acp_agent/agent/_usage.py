"""What a session's model requests used and cost, read from its main line's record.

    tally = UsageTally(price=price_of)       # a front end's, fed every event in order
    tally.feed(event)                       # True when the session's usage changed
    tally.session                           # UsageReport: all of it, by line of work
    tally.turn(turn_id)                     # what the session used during that turn

Everything comes from facts on the main line, so a replay tallies what the
live session did: main's own requests (`ModelRequestFinished`, with the
provider's own counts and, where the model's prices are known, their cost)
and its compactions' (`CompactionRecorded.usage`, priced as main's requests
are), and each branch's, as its latest showing (`BranchShown.usage`) says: a
child's showing carries all it used so far, and it is recorded during
main's turns. So a turn's usage is what the session used from the end of
the turn before to the end of this one: its own requests and its branches'
(a branch that worked between turns counts in the next turn, where its work
is shown). A fork's history is its source's up to the cut, and so is its
usage up to there: its replay shows what its source's showed.

A request recorded without a cost (an older record) is priced with today's
prices, when `price` knows them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from acp_agent.core import (
    BranchShown,
    CompactionRecorded,
    Event,
    ModelRequestFinished,
    ModelRequestStarted,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    Usage,
)
from acp_agent.values import Value

__all__ = ("MAIN_BRANCH", "BranchUsage", "UsageReport", "UsageTally", "usage_json")

#: The main line's name in a report.
MAIN_BRANCH: Final = "main"
#: The facts a tally reads.
_FED: Final = frozenset(
    {
        ModelRequestStarted,
        ModelRequestFinished,
        CompactionRecorded,
        BranchShown,
        TurnEnded,
        TurnInterrupted,
    }
)


@attrs.frozen
class BranchUsage(Value):
    """What one line of work used: `main`, or a branch (its id and title)."""

    branch_id: str
    usage: Usage
    title: str | None = None


@attrs.frozen
class UsageReport(Value):
    """Tokens and cost, in all and by line of work (main first, then the branches)."""

    total: Usage
    branches: tuple[BranchUsage, ...] = ()

    def since(self, earlier: UsageReport) -> UsageReport:
        """What was used after `earlier` (a report of the same session, before this one);
        lines that used nothing meanwhile are left out."""
        before = {branch.branch_id: branch.usage for branch in earlier.branches}
        branches = []
        for branch in self.branches:
            added = branch.usage.minus(before.get(branch.branch_id, Usage()))
            if added.total_tokens or added.cost_usd:
                branches.append(BranchUsage(branch.branch_id, added, branch.title))
        return UsageReport(self.total.minus(earlier.total), tuple(branches))

    def as_json(self) -> dict[str, Any]:
        """The report as `_meta` and `exec --json` carry it (ACP's `Usage` names; the wire
        keeps its first names, `lines` and `line`, for the branches)."""
        return {
            **usage_json(self.total),
            "lines": [
                {"line": branch.branch_id, "title": branch.title, **usage_json(branch.usage)}
                for branch in self.branches
            ],
        }


def usage_json(usage: Usage) -> dict[str, Any]:
    """One usage with ACP's `Usage` field names, and its cost (null when unknown)."""
    return {
        "totalTokens": usage.total_tokens,
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "thoughtTokens": usage.reasoning_tokens,
        "cachedReadTokens": usage.cache_read_tokens,
        "cachedWriteTokens": usage.cache_write_tokens,
        "cost": None
        if usage.cost_usd is None
        else {"amount": round(usage.cost_usd, 6), "currency": "USD"},
    }


class UsageTally:
    """Folds a session's main-line events into its usage (see the module docstring).

    **Parameters:**

    * `price`: what a model's usage cost at today's prices (None: unknown), for
      requests recorded without a cost.
    """

    def __init__(self, *, price: Callable[[str, Usage], float | None] | None = None) -> None:
        self._price = price
        self._main = Usage()
        #: Each branch's latest usage and title, in the order they first showed.
        self._branches: dict[str, BranchUsage] = {}
        self._models: dict[str, str] = {}
        self._at_last_turn_end = UsageReport(Usage())
        #: Each turn's report at its end and the one before it (a turn's usage is the
        #: difference, worked out when asked: a replay feeds thousands of turns).
        self._turns: dict[TurnId, tuple[UsageReport, UsageReport]] = {}
        #: Input and output of main's last request: the context it filled.
        self.last_context = 0
        self.last_model: str | None = None

    def feed(self, event: Event) -> bool:
        """Fold one event in; True when the session's usage changed."""
        payload = event.payload
        if type(payload) not in _FED:
            return False  # most events: deltas, tool calls, facts
        if isinstance(payload, ModelRequestStarted):
            self._models[payload.request_id] = payload.model
            self.last_model = payload.model
            return False
        if isinstance(payload, TurnEnded | TurnInterrupted):
            session = self.session
            self._turns[payload.turn_id] = (self._at_last_turn_end, session)
            self._at_last_turn_end = session
            return False
        if isinstance(payload, ModelRequestFinished):
            usage = self._priced(payload.usage, self._models.pop(payload.request_id, None))
            self._main = self._main.plus(usage)
            self.last_context = usage.total_tokens
            return usage.total_tokens > 0
        if isinstance(payload, CompactionRecorded):
            # The summary's request, with the model main's requests use.
            usage = self._priced(payload.usage, self.last_model)
            self._main = self._main.plus(usage)
            return usage.total_tokens > 0
        if isinstance(payload, BranchShown) and payload.usage is not None:
            known = self._branches.get(payload.branch_id)
            before = Usage() if known is None else known.usage
            self._branches[payload.branch_id] = BranchUsage(
                payload.branch_id, payload.usage, payload.title
            )
            return payload.usage != before
        return False

    def _priced(self, usage: Usage, model: str | None) -> Usage:
        if usage.cost_usd is not None or self._price is None or model is None:
            return usage
        cost = self._price(model, usage)
        return Usage(
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens,
            cost,
        )

    @property
    def session(self) -> UsageReport:
        """All the session used so far."""
        total = self._main
        for branch in self._branches.values():
            total = total.plus(branch.usage)
        return UsageReport(total, (BranchUsage(MAIN_BRANCH, self._main), *self._branches.values()))

    def turn(self, turn_id: TurnId) -> UsageReport | None:
        """What the session used from the end of the turn before to the end of `turn_id`
        (None until its end was fed)."""
        ends = self._turns.get(turn_id)
        return None if ends is None else ends[1].since(ends[0])
