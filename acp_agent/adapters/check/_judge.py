"""The rules that hold for every line an agent writes, judged as each line arrives.

Nothing is kept but counts and a bounded sample: `Tally` counts each problem and
keeps the first place each distinct one was seen, so a flood of lines costs time,
never memory, and the evidence still says how many problems there were of each
kind. The schema validator is built once for the whole run, and a line seen a
moment ago (a flood repeats itself) is not validated twice.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Final

from acp_agent.adapters.check._replies import short
from protocol.validation import UNDEFINED_KEY, WireValidator

__all__ = ("NOT_JSON", "Tally", "WireJudge")

#: Distinct problems a tally keeps a first sighting of (the rest are only counted).
_DISTINCT: Final = 64
#: Recent notification lines whose problems are remembered, and the longest one.
_MEMO_LINES: Final = 256
_MEMO_BYTES: Final = 4096


class _NotJson:
    """The decoded value of a line that is not JSON."""

    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Final = _NotJson()


class Tally:
    """How often each problem was seen, and where each distinct one was seen first."""

    def __init__(self) -> None:
        self.count = 0
        self.lines = 0
        self._first: dict[str, tuple[str, int]] = {}  # problem -> (where first, how many)
        #: Problems of kinds past the first `_DISTINCT`: counted, not told apart.
        self._past_cap = 0

    def __bool__(self) -> bool:
        return self.count > 0

    def add(self, problems: list[str], where: str) -> None:
        """The `problems` of one line, seen at `where`."""
        if not problems:
            return
        self.lines += 1
        for problem in problems:
            self.count += 1
            known = self._first.get(problem)
            if known is not None:
                self._first[problem] = (known[0], known[1] + 1)
            elif len(self._first) < _DISTINCT:
                self._first[problem] = (where, 1)
            else:
                self._past_cap += 1

    @property
    def distinct(self) -> str:
        """How many kinds of problem, in words ("3 distinct")."""
        return f"{'over ' if self._past_cap else ''}{len(self._first)} distinct"

    def evidence(self, shown: int = 3) -> list[str]:
        """The most frequent kinds, each with its count and first place; how many more."""
        ranked = sorted(self._first.items(), key=lambda item: -item[1][1])
        lines = [f"{n}x {problem} (first at {where})" for problem, (where, n) in ranked[:shown]]
        rest = ranked[shown:]
        if rest:
            lines.append(
                f"and {len(rest)} more kind(s), {sum(n for _, (_, n) in rest)} problem(s) in all"
            )
        if self._past_cap:
            lines.append(f"and {self._past_cap} problem(s) of still more kinds")
        return lines


class WireJudge:
    """Every line of every process, held to the rules that hold for all messages."""

    def __init__(self) -> None:
        self._validator = WireValidator()
        self._memo: OrderedDict[bytes, list[str]] = OrderedDict()
        self.lines = 0
        self.messages = 0
        self.not_json = Tally()
        self.oversized = Tally()
        self.invalid = Tally()
        self.undefined = Tally()
        self.unadvertised = Tally()
        #: Responses whose id is one we sent, exactly (value and type).
        self.ids_echoed = 0
        self.ids_wrong = Tally()

    def line(self, line: bytes, message: Any, asked: dict[Any, str], where: str) -> None:
        """Judge one stdout line; `message` is it decoded (`NOT_JSON` when it is not)."""
        self.lines += 1
        if message is NOT_JSON:
            self.not_json.add([f"not JSON: {short(line, 80)}"], where)
            return
        self.messages += 1
        problems = self._problems(line, message, asked)
        self.undefined.add([p for p in problems if UNDEFINED_KEY in p], where)
        self.invalid.add([p for p in problems if UNDEFINED_KEY not in p], where)

    def _problems(self, line: bytes, message: Any, asked: dict[Any, str]) -> list[str]:
        if not isinstance(message, dict):
            return [f"not a JSON-RPC message (a JSON {type(message).__name__})"]
        memo = "id" not in message and len(line) <= _MEMO_BYTES
        if memo and (known := self._memo.get(line)) is not None:
            self._memo.move_to_end(line)
            return known
        try:
            problems = [p[:300] for p in self._validator.message_problems(message, asked)]
        except RecursionError:
            problems = ["nested too deeply to check against the schema"]
        if memo:
            self._memo[line] = problems
            if len(self._memo) > _MEMO_LINES:
                self._memo.popitem(last=False)
        return problems
