"""Text in a Markdown code block that nothing in the text can close.

A tool's output, a question about a call and what a front end shows of a
job are put in a code block the same way: the fence is one backtick longer
than the longest run of backticks inside, so workspace text cannot end the
block early and be read as the agent's own words.
"""

from __future__ import annotations

import re

__all__ = ("fenced",)

_BACKTICKS = re.compile(r"`{3,}")


def fenced(text: str, info: str = "") -> str:
    """`text` as a Markdown code block whose fence no line of it can close."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=2)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{body}{fence}"
