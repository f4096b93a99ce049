"""A load sends lines kept with the session: byte for byte what translating the history sends.

The live stream keeps a chunk of replay lines as each turn ends, and a load keeps what
it had to translate (`adapters/acp/_replay_kept.py`); a later load sends the chunks as
they are. These tests make sessions through the real agent (a real subprocess, the
scripted model, a real SQLite file), then load each twice: once from its kept chunks,
once with them deleted from the file (the whole history translated), and compare the
lines byte for byte. A rewind, which takes back events a chunk showed, and a session
kept by an earlier load are covered too.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from protocol import methods, types
from tests.adapters.acp.session_support import NOTES_TURNS, call
from tests.support import EditorClient, running_agent, write_script
from tests.support.editor_client import allow_all

pytestmark = pytest.mark.e2e

REWIND = "_acp-agent/rewind"


def conversation(path: Path) -> Path:
    """Four turns: thoughts, text in pieces, calls (one asking permission), a plan."""
    return write_script(
        path,
        *NOTES_TURNS,
        [{"text": "It "}, {"sleep_ms": 20}, {"text": "says "}, {"sleep_ms": 20}, {"text": "milk."}],
        [{"text": "Again, "}, call("read", "r2", path="notes.txt")],
        [{"text": "the same."}],
        [{"text": "After the rewind."}],
        [{"text": "Later still."}],
    )


def database(home: Path) -> Path:
    return home / "data" / "sessions.sqlite3"


def kept_chunks(home: Path, session_id: str) -> list[bytes]:
    """The replay chunks the session keeps (every key), in order."""
    with sqlite3.connect(database(home)) as db:
        rows = db.execute(
            "SELECT data FROM session_outputs WHERE session_id = ? AND key LIKE 'replay/%'"
            " ORDER BY key, chunk",
            (session_id,),
        ).fetchall()
    return [bytes(data) for (data,) in rows]


def forget_chunks(home: Path, session_id: str) -> None:
    with sqlite3.connect(database(home)) as db:
        db.execute(
            "DELETE FROM session_outputs WHERE session_id = ? AND key LIKE 'replay/%'",
            (session_id,),
        )


async def wait_for_chunks(home: Path, session_id: str, count: int) -> list[bytes]:
    """The session's chunks once there are `count` of them (they are kept in the
    background, after the turn's answer)."""
    with anyio.fail_after(10):
        # Another process writes them to a file: nothing to wait on but the file.
        while len(chunks := kept_chunks(home, session_id)) < count:  # noqa: ASYNC110
            await anyio.sleep(0.02)
    return chunks


async def loaded_lines(
    home: Path, script: Path, session_id: str, workspace: Path, *, unstable: bool = False
) -> list[bytes]:
    """The lines a fresh agent sends before answering a `session/load` of the session."""
    async with running_agent(home, script=script, unstable=unstable) as client:
        start = len(client.received)
        answer = await client.request_raw(
            methods.SESSION_LOAD,
            {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []},
        )
        assert "result" in answer, answer
        lines = client.received[start:]
    updates = [line for line in lines if b'"session/update"' in line]
    assert len(updates) == len(lines) - 1  # the answer, after every update
    return updates


def workspace_at(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("remember the milk\n")
    return workspace


async def test_a_load_sends_the_chunks_kept_live_byte_for_byte_as_translating_it_all(
    tmp_path: Path,
) -> None:
    workspace = workspace_at(tmp_path)
    script = conversation(tmp_path / "conversation.json")
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(workspace)
        client.answers = ["allow_once"]
        for text in ("Summarise notes.txt", "What does it say?", "Read it again"):
            answer = await client.prompt(session_id, text)
            assert answer.stop_reason == types.StopReason.END_TURN
        live = await wait_for_chunks(home, session_id, 3)  # a chunk per turn

    kept = await loaded_lines(home, script, session_id, workspace)
    forget_chunks(home, session_id)
    translated = await loaded_lines(home, script, session_id, workspace)
    after_translating = kept_chunks(home, session_id)
    again = await loaded_lines(home, script, session_id, workspace)

    assert len(live) == 3
    assert kept == translated  # byte for byte
    assert [u for u in kept if b'"usage_update"' in u] != []  # shown once, from the chunks
    assert sum(b'"usage_update"' in u for u in kept) == 1
    # The translating load kept its lines (one chunk), and the next load sent them.
    assert len(after_translating) == 1
    assert again == translated


async def test_after_a_rewind_a_load_translates_from_what_it_took_back(tmp_path: Path) -> None:
    workspace = workspace_at(tmp_path)
    script = conversation(tmp_path / "conversation.json")
    home = tmp_path / "home"
    async with running_agent(
        home,
        script=script,
        client=EditorClient(decide=allow_all, unstable=True),
        unstable=True,
    ) as client:
        session_id = await client.new_session(workspace)
        answers = [
            await client.prompt(session_id, text)
            for text in ("Summarise notes.txt", "What does it say?", "Read it again")
        ]
        await wait_for_chunks(home, session_id, 3)
        meta = answers[1].meta
        assert meta is not None
        rewound = await client.request_raw(
            REWIND, {"sessionId": session_id, "messageId": meta["acp-agent"]["messageId"]}
        )
        assert rewound["result"]["rewound"] is True
        after = await client.prompt(session_id, "Once more")
        assert after.stop_reason == types.StopReason.END_TURN

    chunks = kept_chunks(home, session_id)
    kept = await loaded_lines(home, script, session_id, workspace, unstable=True)
    forget_chunks(home, session_id)
    translated = await loaded_lines(home, script, session_id, workspace, unstable=True)

    assert len(chunks) == 3  # the turns before the rewind; none kept live after it
    assert kept == translated
    shown = b"\n".join(kept)
    assert b"After the rewind." in shown
    assert b"It says milk." not in shown  # the turn the rewind took back
