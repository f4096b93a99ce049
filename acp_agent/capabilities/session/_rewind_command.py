"""`/rewind`: the person's messages to go back to, and `/rewind N` going back.

`/rewind` lists the messages still in the conversation with what followed
each (the files changed, and what ran that no rewind undoes); `/rewind N`
rewinds to just before message N (`Rewinder.rewind`) and says what it did.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Final

from acp_agent.capabilities.session._rewind import (
    Rewinder,
    RewindOutcome,
    RewindPoint,
    RewindRefused,
)
from acp_agent.toolkit import CommandSpec, ExtraCommand

__all__ = ("rewind_commands",)

_SPEC: Final = CommandSpec(
    "rewind",
    "Go back to just before one of your messages: the files and the conversation",
    "message number",
)


def rewind_commands(rewinder: Rewinder, workspace: Path) -> dict[str, ExtraCommand]:
    """`/rewind` (list the points) and `/rewind N` (go back to one)."""

    def shown(paths: Iterable[str]) -> str:
        return ", ".join(f"`{_relative(path, workspace)}`" for path in paths)

    async def rewind(arguments: str) -> str:
        words = arguments.split()
        points = await rewinder.points()
        if not words:
            return _listing(points, shown)
        if len(words) != 1 or not words[0].isdigit():
            return (
                "Usage: `/rewind` lists your messages; `/rewind <message number>` goes back to one."
            )
        number = int(words[0])
        point = next((p for p in points if p.number == number), None)
        if point is None:
            return f"There is no message {number} to go back to; `/rewind` lists them."
        try:
            outcome = await rewinder.rewind(point.message_id)
        except RewindRefused as exc:
            return f"Not rewound: {exc}."
        return _report(outcome, point, shown)

    return {"rewind": ExtraCommand(_SPEC, rewind)}


def _listing(points: Sequence[RewindPoint], shown: Callable[[Iterable[str]], str]) -> str:
    if not points:
        return "There is no message to go back to yet."
    rows = ["| # | Your message | Files changed after it | Not undone by a rewind |"]
    rows.append("|---|---|---|---|")
    for point in points:
        changed = shown(point.changed) if point.changed else "none"
        effects = _cell("; ".join(point.effects)) if point.effects else "none"
        rows.append(f"| {point.number} | {_cell(point.text)} | {changed} | {effects} |")
    return (
        "\n".join(rows)
        + "\n\n`/rewind <message number>` goes back to just before that message: the files "
        "the agent changed since are put back (unless one was changed outside the agent: then "
        "nothing changes), and the conversation after it is left out from then on."
    )


def _report(
    outcome: RewindOutcome, point: RewindPoint, shown: Callable[[Iterable[str]], str]
) -> str:
    if not outcome.rewound:
        listed = "\n".join(f"- {_cell(conflict)}" for conflict in outcome.conflicts)
        return (
            "Not rewound, and nothing was changed: these files were changed outside the "
            "agent since it last wrote them, or their path now leads outside the "
            f"workspace:\n{listed}\n\nKeep what you need of them, undo those changes (or "
            "remove the link), and rewind again."
        )
    lines = [f'Rewound to just before message {point.number} ("{_cell(point.text)}").']
    if outcome.restored:
        lines.append(f"Put back: {shown(outcome.restored)}.")
    if outcome.removed:
        lines.append(f"Removed (created after it): {shown(outcome.removed)}.")
    if not outcome.restored and not outcome.removed:
        lines.append("No file needed putting back.")
    if outcome.not_undone:
        lines.append(
            "Not undone (these ran, and their effects remain): "
            + "; ".join(outcome.not_undone)
            + "."
        )
    lines.append(
        "The conversation from that message on is left out of what the model reads from "
        "now on (it stays recorded)."
    )
    return "\n\n".join(lines)


def _relative(path: str, workspace: Path) -> str:
    if Path(path).is_relative_to(workspace):
        return os.path.relpath(path, workspace)
    return path


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
