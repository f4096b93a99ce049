"""What a batch changes in a store's query tables: the same rules for every store.

A store applies them in the batch's own transaction: the `BranchCreated` of a
new branch inserts its row (its first seq must then be the cut + 1),
`BranchEnded` closes it, `ToolResultRecorded` is tracked for `has_result`, and
`SessionMetadataChanged` sets the session title.
"""

from __future__ import annotations

import attrs

from acp_agent.core._events import (
    Batch,
    BranchCreated,
    BranchEnded,
    SessionMetadataChanged,
    ToolResultRecorded,
)
from acp_agent.core._ids import CallId, Seq
from acp_agent.core._store import BranchRecord
from acp_agent.values import Value

__all__ = ("BatchProjection", "project_batch")


@attrs.frozen
class BatchProjection(Value):
    """What a batch changes in the store's query tables, applied in its transaction."""

    #: The row to insert when the batch opens a new branch.
    created_branch: BranchRecord | None
    #: When the batch ends its branch.
    closed_at: float | None
    #: (call, seq of its result) for each result the batch records.
    results: tuple[tuple[CallId, Seq], ...]
    #: Whether the batch sets the session title, and to what.
    title_changed: bool
    title: str | None


def project_batch(batch: Batch) -> BatchProjection:
    """The query-table changes a batch implies, the same for every store.

    Also applied to a fork's copied history as one batch: copied `BranchCreated`
    and `BranchEnded` facts name other branches, so only results carry over.
    """
    created: BranchRecord | None = None
    closed_at: float | None = None
    results: list[tuple[CallId, Seq]] = []
    title_changed = False
    title: str | None = None
    for event in batch.events:
        payload = event.payload
        if isinstance(payload, ToolResultRecorded):
            results.append((payload.call_id, event.seq))
        elif isinstance(payload, BranchCreated):
            # Only the branch's own creation fact opens it; a copied one is just history.
            if payload.branch_id == batch.branch_id:
                created = BranchRecord(
                    branch_id=payload.branch_id,
                    session_id=batch.session_id,
                    parent_id=payload.parent_id,
                    cut_seq=payload.cut_seq,
                    label=payload.label,
                    created_at=event.recorded_at,
                )
        elif isinstance(payload, BranchEnded):
            if payload.branch_id == batch.branch_id:
                closed_at = event.recorded_at
        elif isinstance(payload, SessionMetadataChanged):
            title_changed, title = True, payload.title
    return BatchProjection(created, closed_at, tuple(results), title_changed, title)
