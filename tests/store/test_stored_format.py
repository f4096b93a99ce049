"""A store an older acp-agent wrote loads and shows what that version showed, byte for byte.

The fixture (`data/format_v1/`, see `stored_format`) was written by the real agent
at event format 1 and holds every kind of content: the person's blocks (text with
annotations and `_meta`, an image, links read and not, resources, blobs), tool
results (text, diffs, terminals of the editor's and of our own, an MCP image, a
plan, an error), a template, a failure, a refusal, a compaction, a branch, a fork
and a rewind. A real agent process loads each session from a copy of the file (and,
where PostgreSQL's programs are installed, from a PostgreSQL database holding the
same rows); the replay must show what the writing version's replay showed (the
same messages and tool calls, now in fewer updates: a message in one chunk, a call
once in its last state), and the messages the model reads and the headless
transcript must equal its own.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from acp_agent.store import PostgresStore, SqliteStore, copy_sessions
from protocol import types
from protocol.converter import shared_converter
from tests.store.stored_format import (
    FORMAT_V1,
    copy_store,
    fixture_sessions,
    projected,
    replay_lines,
    transcript_of,
)
from tests.support import agent_env
from tests.support.conversation import Conversation, shown
from tests.support.postgres import fresh_database, skip_without_postgres

pytestmark = pytest.mark.e2e

SESSIONS = fixture_sessions()
SCRIPT = FORMAT_V1 / "script.json"


def expected_replay() -> list[str]:
    return (FORMAT_V1 / "replay.jsonl").read_text("utf-8").splitlines()


def as_then(lines: Sequence[str]) -> list[str]:
    """Replayed lines without what was added to the wire since the fixture was written:
    `usage_update`'s `_meta` (the session's token counts, by line of work)."""
    then = []
    for line in lines:
        message = json.loads(line)
        update = message["params"]["update"]
        if update["sessionUpdate"] == "usage_update" and "_meta" in update:
            del update["_meta"]
            line = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        then.append(line)
    return then


def same_lines(actual: Sequence[str], expected: Sequence[str]) -> None:
    """`actual == expected`, failing with a readable diff of the first lines that differ."""
    if list(actual) != list(expected):
        diff = difflib.unified_diff(expected, actual, "written then", "shown now", lineterm="")
        pytest.fail("\n".join(list(diff)[:40]))


def conversations(lines: Sequence[str]) -> dict[str, Conversation]:
    """What each session's replayed lines show (`tests.support.conversation`)."""
    converter = shared_converter(include_unstable=True)
    updates: dict[str, list[types.SessionUpdate]] = {}
    for line in lines:
        params = json.loads(line)["params"]
        update = converter.structure(params["update"], types.SessionUpdate)
        updates.setdefault(params["sessionId"], []).append(update)
    return {session_id: shown(shown_updates) for session_id, shown_updates in updates.items()}


def same_conversations(actual: Sequence[str], expected: Sequence[str]) -> None:
    """Each session shows what it showed then, in no more updates."""
    now, then = conversations(actual), conversations(expected)
    assert now.keys() == then.keys()
    for session_id, conversation in now.items():
        assert conversation == then[session_id], session_id
    assert len(actual) < len(expected)


async def test_each_session_replays_as_the_version_that_wrote_it_replayed(tmp_path: Path):
    home = tmp_path / "home"
    copy_store(home)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    replay = await replay_lines(home, workspace, SESSIONS["sessions"], script=SCRIPT)
    same_conversations(as_then(replay), expected_replay())


async def test_the_model_reads_the_history_as_it_did(tmp_path: Path):
    store = tmp_path / "store.sqlite3"
    store.write_bytes((FORMAT_V1 / "store.sqlite3").read_bytes())
    folded = await projected(store, SESSIONS["main_branches"])
    expected = json.loads((FORMAT_V1 / "projection.json").read_text("utf-8"))
    assert folded == expected


def test_the_headless_transcript_reads_the_replay_as_it_did():
    transcript = transcript_of(expected_replay())
    same_lines(transcript.splitlines(), (FORMAT_V1 / "transcript.md").read_text().splitlines())


async def test_the_same_rows_in_postgresql_replay_the_same(tmp_path: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    cluster = skip_without_postgres(pytest.skip)
    with fresh_database(cluster) as url:
        source = await SqliteStore.open(_copy(tmp_path))
        target = await PostgresStore.open(url)
        try:
            await copy_sessions(source, target)
        finally:
            await source.aclose()
            await target.aclose()
        _as_written(url, _copy(tmp_path))
        replay = await replay_lines(
            tmp_path / "home",
            workspace,
            SESSIONS["sessions"],
            script=SCRIPT,
            env=agent_env(ACP_AGENT_STORE=url),
        )
    same_conversations(as_then(replay), expected_replay())


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "source.sqlite3"
    if not copy.exists():
        copy.write_bytes((FORMAT_V1 / "store.sqlite3").read_bytes())
    return copy


def _as_written(url: str, sqlite_file: Path) -> None:
    """Put back every event as the writing version stored it: a copy stores each event as
    the copying version encodes it, and a database that version wrote holds the old rows."""
    import sqlite3

    import psycopg

    with sqlite3.connect(sqlite_file) as source:
        rows = source.execute(
            "SELECT payload, format_version, branch_id, seq FROM events"
        ).fetchall()
    source.close()
    with psycopg.connect(url) as connection:
        with connection.cursor() as cursor:
            cursor.executemany(
                "UPDATE events SET payload = %s, format_version = %s "
                "WHERE branch_id = %s AND seq = %s",
                rows,
            )
            assert cursor.rowcount == len(rows)  # each row found, once
        stored = connection.execute("SELECT count(*) FROM events").fetchone()
    assert stored == (len(rows),)
