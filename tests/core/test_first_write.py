"""A new session's first write: the same rows from the light SQLite path as from any store.

`FirstWrite.fact_row` writes the `ConfigurationAdopted` row without the events'
module, so it is held here to what the codec writes for the same event; and a
session the SQLite file wrote before its store existed reads back, through the
store made of that file, as one written by the store itself.
"""

from __future__ import annotations

from pathlib import Path

from acp_agent.core import (
    ConfigurationAdopted,
    FirstWrite,
    decode_event,
    encode_event,
    new_session_record,
    write_first,
)
from acp_agent.store import MemoryStore, SqliteFile, StoreOpening

SETTINGS = {
    "model": "openai/gpt-fake",
    "mode": "ask",
    "system_prompt": {"mode": "append", "text": "Réponds en français."},
}


def first_write(**settings: object) -> FirstWrite:
    record = new_session_record("/work/project", at=12.5, owner="ada")
    return FirstWrite(record, settings or SETTINGS, producer="capabilities.session")


def test_the_light_fact_row_is_the_codecs_row_of_its_configuration_adopted() -> None:
    first = first_write()
    event = first.fact()

    assert first.fact_row() == encode_event(event)
    assert event.payload == ConfigurationAdopted(first.config_id, SETTINGS)
    assert decode_event(first.fact_row()) == event


async def test_a_session_the_file_wrote_reads_back_through_the_store_made_of_it(
    tmp_path: Path,
) -> None:
    first = first_write()
    opening = StoreOpening(file=await SqliteFile.open(tmp_path / "sessions.sqlite3"))
    try:
        await opening.write_first(first)
        store = opening.store()
        record = await store.get_session(first.record.session_id)
        branches = await store.list_branches(first.record.session_id)
        events = await store.read(first.record.main_branch_id)
        # Written by the file, leased to its owner: the store made of it may append.
        await store.acquire_session(first.record.session_id)
    finally:
        await opening.aclose()

    assert record == first.record
    assert branches == [first.main]
    assert events == [first.fact()]


async def test_any_store_writes_the_same_session_through_create_session() -> None:
    first = first_write(model=None, mode="plan")
    store = MemoryStore()
    await write_first(store, first)

    assert await store.get_session(first.record.session_id) == first.record
    assert await store.read(first.record.main_branch_id) == [first.fact()]
