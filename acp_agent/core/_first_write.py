"""A new session's first write: what the answer that creates it waits for, and no more.

    record = new_session_record("/work/project", at=time.time(), owner="ada")
    first = FirstWrite(record, {"model": "openai/gpt-4.1", "mode": "ask"}, producer=...)
    await write_first(store, first)   # or a store's own light path (`SqliteFile`)

The session's row (leased to the writer), its main branch, and the settings it was
answered with as the branch's first fact, a `ConfigurationAdopted`, in one
transaction: from then on it survives a crash and loads as it was answered.

Made from this module alone (the ids, the records), so a store can write it before
the runtime's modules load (the events' vocabulary alone is 15 ms of CPU), and an
editor waits for a `session/new` answer at every start. `fact_row` therefore writes
the fact's row itself, exactly as the codec writes that `ConfigurationAdopted`
(`tests/core/test_first_write.py` holds the two together).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from acp_agent.core._ids import NO_SEQ, BatchId, BranchId, Seq, SessionId, new_id
from acp_agent.core._store import BranchRecord, SessionRecord, Store
from acp_agent.values import Value

if TYPE_CHECKING:
    from acp_agent.core._codec import EventRow
    from acp_agent.core._events import Event

__all__ = ("FirstWrite", "main_branch_record", "new_session_record", "write_first")

#: `ConfigurationAdopted.KIND` and the event format it is written at (`EVENT_FORMAT_VERSION`).
_FACT_KIND: Final = "configuration.adopted"
_FACT_FORMAT: Final = 2


@attrs.frozen
class FirstWrite(Value):
    """A new session as its first write stores it (see the module docstring)."""

    record: SessionRecord
    #: The settings it starts with, as `ConfigurationAdopted.values`.
    settings: Mapping[str, Any]
    #: Who records the settings (the session controls).
    producer: str
    config_id: str = attrs.field(factory=lambda: new_id("cfg"))

    @property
    def main(self) -> BranchRecord:
        return main_branch_record(self.record)

    def fact_row(self) -> EventRow:
        """The first fact's row: `encode_event` of its `ConfigurationAdopted`."""
        payload = {"config_id": self.config_id, "values": dict(self.settings)}
        return (
            self.record.main_branch_id,
            1,
            1,
            _FACT_KIND,
            json.dumps(payload, ensure_ascii=False, separators=(",", ":")),
            self.producer,
            self.record.created_at,
            _FACT_FORMAT,
        )

    def fact(self) -> Event:
        """The first fact as an event (this loads the events' vocabulary)."""
        from acp_agent.core._events import ConfigurationAdopted, Event

        adopted = ConfigurationAdopted(self.config_id, dict(self.settings))
        return Event(
            self.record.main_branch_id,
            Seq(1),
            BatchId(1),
            adopted,
            self.producer,
            self.record.created_at,
        )


def main_branch_record(session: SessionRecord) -> BranchRecord:
    """The record of `session`'s main branch, as its first write stores it."""
    return BranchRecord(
        branch_id=session.main_branch_id,
        session_id=session.session_id,
        parent_id=None,
        cut_seq=NO_SEQ,
        label="main",
        created_at=session.created_at,
    )


def new_session_record(
    cwd: str,
    *,
    at: float,
    title: str | None = None,
    additional_directories: Sequence[str] = (),
    owner: str = "",
) -> SessionRecord:
    """The record of a new session in `cwd`, created at `at`, with fresh ids, `owner`'s."""
    return SessionRecord(
        SessionId(new_id("sess")),
        cwd,
        BranchId(new_id("br")),
        at,
        at,
        title,
        additional_directories=tuple(additional_directories),
        owner=owner,
    )


async def write_first(store: Store, first: FirstWrite) -> None:
    """Write `first` through any store's `create_session`, leased to this process."""
    await store.create_session(first.record, first.main, history=[first.fact()])
