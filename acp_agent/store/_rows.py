"""Sessions, snapshots and rules to table rows and back: the same for the SQL stores.

SQLite and PostgreSQL keep the same columns in the same order (see
`SESSION_COLUMNS`, `SNAPSHOT_COLUMNS`, `RULE_COLUMNS`); only their
placeholders differ, so each store writes its own statements around these.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Final

from acp_agent.core import ForkOrigin, PermissionRule, SessionRecord, Snapshot

__all__ = (
    "BRANCH_COLUMNS",
    "BRANCH_EVENT_COLUMNS",
    "EVENT_COLUMNS",
    "RULE_COLUMNS",
    "SESSION_COLUMNS",
    "SNAPSHOT_COLUMNS",
    "rule_record",
    "session_record",
    "session_row",
    "snapshot_record",
    "snapshot_row",
)

logger = logging.getLogger(__name__)

EVENT_COLUMNS: Final = (
    "branch_id, seq, batch_id, kind, payload, producer, recorded_at, format_version"
)
#: `EVENT_COLUMNS` less the branch id, for reading one branch (`decode_branch_rows`).
BRANCH_EVENT_COLUMNS: Final = EVENT_COLUMNS.removeprefix("branch_id, ")
SESSION_COLUMNS: Final = (
    "session_id, cwd, main_branch_id, title, created_at, updated_at,"
    " fork_session_id, fork_branch_id, fork_seq, additional_directories, owner"
)
BRANCH_COLUMNS: Final = "branch_id, session_id, parent_id, cut_seq, label, created_at, closed_at"
SNAPSHOT_COLUMNS: Final = (
    "branch_id, interpreter, anchor_seq, interpreter_version, anchor_digest, ancestry,"
    " state, checksum, created_at"
)
RULE_COLUMNS: Final = (
    "rule_id, workspace, tool, scope, pattern, decision, created_at, session_id, call_id,"
    " revoked_at, owner"
)


def session_row(session: SessionRecord) -> tuple[Any, ...]:
    """The session's row, in `SESSION_COLUMNS` order."""
    origin = session.fork_origin
    return (
        session.session_id,
        session.cwd,
        session.main_branch_id,
        session.title,
        session.created_at,
        session.updated_at,
        None if origin is None else origin.session_id,
        None if origin is None else origin.branch_id,
        None if origin is None else origin.seq,
        json.dumps(list(session.additional_directories)),
        session.owner,
    )


def session_record(row: Sequence[Any]) -> SessionRecord:
    """The session a row in `SESSION_COLUMNS` order holds."""
    session_id, cwd, main_branch_id, title, created_at, updated_at, *fork, directories, owner = row
    origin = None if fork[0] is None else ForkOrigin(*fork)
    return SessionRecord(
        session_id,
        cwd,
        main_branch_id,
        created_at,
        updated_at,
        title,
        origin,
        _directories(session_id, directories),
        owner,
    )


def _directories(session_id: str, stored: object) -> tuple[str, ...]:
    """A session's stored additional directories (a JSON array of strings). Unreadable ones
    read as none, so one damaged row neither hides the session nor fails the list (fewer
    roots only means more is asked about)."""
    try:
        value = json.loads(stored) if isinstance(stored, str) else None
    except ValueError:
        value = None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        logger.warning("session %s: its additional directories are unreadable", session_id)
        return ()
    return tuple(value)


def snapshot_row(snapshot: Snapshot) -> tuple[Any, ...]:
    """The snapshot's row, in `SNAPSHOT_COLUMNS` order."""
    return (
        snapshot.branch_id,
        snapshot.interpreter,
        snapshot.anchor_seq,
        snapshot.interpreter_version,
        snapshot.anchor_digest,
        json.dumps(snapshot.ancestry),
        snapshot.state,
        snapshot.checksum,
        snapshot.created_at,
    )


def snapshot_record(row: Sequence[Any]) -> Snapshot:
    """The snapshot a row in `SNAPSHOT_COLUMNS` order holds."""
    branch_id, interpreter, anchor, version, digest, ancestry, state, checksum, created_at = row
    try:
        parts = tuple((str(b), int(s)) for b, s in json.loads(ancestry))
    except (TypeError, ValueError):
        parts = ()  # unreadable: it will not match any lineage, so it is skipped
    return Snapshot(
        branch_id, interpreter, version, anchor, digest, parts, bytes(state), checksum, created_at
    )


def rule_record(row: Sequence[Any]) -> PermissionRule:
    """The rule a row in `RULE_COLUMNS` order holds."""
    return PermissionRule(*row)
