"""Names of things and of places in a timeline.

`Seq` is a position in one branch's timeline: dense from 1, `NO_SEQ` (0)
means "none yet". Ids are opaque strings with a readable prefix so a log
line says what kind of thing it names.
"""

from __future__ import annotations

import uuid
from typing import Final, NewType

__all__ = (
    "NO_SEQ",
    "BatchId",
    "BranchId",
    "CallId",
    "Seq",
    "SessionId",
    "TurnId",
    "new_id",
)

#: A position in a branch's timeline, dense from 1; stored positions are inclusive.
Seq = NewType("Seq", int)

#: "No event yet": the position before the first event.
NO_SEQ: Final = Seq(0)

#: A batch is named by the seq of its first event; unique within a branch's history,
#: and stable when history is inherited by a child branch or copied into a fork.
BatchId = NewType("BatchId", int)

SessionId = NewType("SessionId", str)
BranchId = NewType("BranchId", str)
#: A tool call, as the model named it; unique within one branch's history.
CallId = NewType("CallId", str)
#: One prompt and the work it starts, until it ends or is interrupted.
TurnId = NewType("TurnId", str)


def new_id(prefix: str) -> str:
    """A fresh random id such as `sess_5f0c…`; the prefix says what it names."""
    return f"{prefix}_{uuid.uuid4().hex}"
