"""What looks at a tool call's file changes once the call has made them.

The tool executor hands the files a call changed (what each held before and holds
now) to the session's `ChangeReview`, if one is registered (`CHANGE_REVIEW`; the
language servers of `acp_agent.lsp` are one), and adds what it says to the call's
result: the model reads it with the result, the person sees it in the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import attrs

from acp_agent.values import Value

__all__ = ("ChangeReview", "ChangedFile")


@attrs.frozen
class ChangedFile(Value):
    """One file a call changed: its bytes before (None: it did not exist) and now
    (None: it is gone)."""

    path: Path
    before: bytes | None
    after: bytes | None


class ChangeReview(Protocol):
    """Looks at changed files; never raises, and returns within its own time bound."""

    async def review(self, files: Sequence[ChangedFile]) -> str | None:
        """What the model and the person should know about these changes (new
        problems), as text; None when there is nothing to say."""
        ...
