"""Problems a language server reports, and which of them a change introduced.

A server reports every problem of a file after each change; what matters to the
model is what the change added. A problem after the change is old when the file
had one before with the same server, code and message on the line the change moved
it to (lines are mapped through the change with difflib); everything else is new.
Problems two servers report alike (the same place, the same message) are described
once, naming both.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import attrs

from acp_agent.values import Value

__all__ = ("Problem", "alike_key", "compare", "describe", "line_map", "new_problems")


@attrs.frozen
class Problem(Value):
    """One diagnostic, with 1-based lines and columns."""

    server: str
    path: str
    line: int
    column: int
    severity: str
    message: str
    code: str | None = None
    end_line: int | None = None
    end_column: int | None = None

    def same_issue(self, other: Problem) -> bool:
        return (self.server, self.code, self.message) == (other.server, other.code, other.message)


def alike_key(problem: Problem) -> tuple[object, ...]:
    """What makes two servers' problems the same one: the file, the range, the message."""
    return (
        problem.path,
        problem.line,
        problem.column,
        problem.end_line,
        problem.end_column,
        problem.message,
    )


def line_map(before: str, after: str) -> dict[int, int]:
    """Where each unchanged 1-based line of `before` is in `after`."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    mapped: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            mapped[block.a + offset + 1] = block.b + offset + 1
    return mapped


def new_problems(
    before: Sequence[Problem], after: Sequence[Problem], before_text: str, after_text: str
) -> list[Problem]:
    """The problems of `after` that `before` did not have (moved lines followed)."""
    return compare(before, after, before_text, after_text)[0]


def compare(
    before: Sequence[Problem], after: Sequence[Problem], before_text: str, after_text: str
) -> tuple[list[Problem], list[Problem]]:
    """(the problems the change brought in, the ones it took away), lines mapped once."""
    moved = line_map(before_text, after_text)
    old: dict[tuple[str, str | None, str, int], list[Problem]] = {}
    for problem in before:
        key = (problem.server, problem.code, problem.message, moved.get(problem.line, -1))
        old.setdefault(key, []).append(problem)
    fresh = []
    for problem in after:
        matches = old.get((problem.server, problem.code, problem.message, problem.line))
        if matches:
            matches.pop()
        else:
            fresh.append(problem)
    return fresh, [problem for left in old.values() for problem in left]


def describe(problems: Sequence[Problem], *, shown: str | None = None) -> str:
    """The problems, one line each: `path:line:column: severity [server code] message`;
    problems alike (`alike_key`) are one line naming every server: `[ruff F821, pylsp]`."""
    alike: dict[tuple[object, ...], list[Problem]] = {}
    for problem in problems:
        alike.setdefault(alike_key(problem), []).append(problem)
    lines = []
    for same in alike.values():
        first = same[0]
        sources = dict.fromkeys(f"{p.server} {p.code}" if p.code else p.server for p in same)
        where = shown or first.path
        lines.append(
            f"{where}:{first.line}:{first.column}: {first.severity} "
            f"[{', '.join(sources)}] {first.message}"
        )
    return "\n".join(lines)
