"""Checks every store applies the same way, before it writes anything."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from acp_agent.core import NO_SEQ, BranchRecord, SessionRecord

if TYPE_CHECKING:
    from acp_agent.core import Event

__all__ = ("check_new_session",)


def check_new_session(session: SessionRecord, main: BranchRecord, history: Sequence[Event]) -> None:
    """Raise ValueError unless `main` is the session's root and `history` is dense from 1."""
    if main.session_id != session.session_id or main.branch_id != session.main_branch_id:
        raise ValueError("the main branch record does not belong to the session")
    if main.parent_id is not None or main.cut_seq != NO_SEQ:
        raise ValueError("a session's main branch has no parent")
    for expected, event in enumerate(history, start=1):
        if event.branch_id != main.branch_id or event.seq != expected:
            raise ValueError("history must be the main branch's events, dense from seq 1")
