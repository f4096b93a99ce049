"""Checkpoints: contents kept by digest per session, entries read without following links."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest

from acp_agent.capabilities.session import CheckpointStore
from acp_agent.capabilities.session._checkpoints import entries_under, entry_digest, read_entry
from acp_agent.core import SessionId
from acp_agent.store import SqliteStore
from tests.core.support import new_session


def test_a_content_is_kept_once_and_comes_back_only_intact(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "checkpoints")
    digest = hashlib.sha256(b"hello\n").hexdigest()

    assert store.save("sess_1", b"hello\n")
    assert store.save("sess_1", b"hello\n")  # the same content: no second copy
    kept = list((tmp_path / "checkpoints" / "sess_1").iterdir())
    loaded = store.load("sess_1", digest)
    kept[0].write_bytes(b"tampered")

    assert [p.name for p in kept] == [digest]
    assert loaded == b"hello\n"
    assert store.load("sess_1", digest) is None  # a changed copy is never restored
    assert store.load("sess_2", digest) is None


def test_a_fork_gets_the_contents_and_a_deleted_session_loses_them(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "checkpoints")
    store.save("sess_1", b"one")
    digest = hashlib.sha256(b"one").hexdigest()

    store.copy_session("sess_1", "sess_fork")
    store.forget("sess_1")

    assert store.load("sess_fork", digest) == b"one"
    assert store.load("sess_1", digest) is None
    assert not (tmp_path / "checkpoints" / "sess_1").exists()


def test_without_a_folder_nothing_is_kept(tmp_path: Path) -> None:
    store = CheckpointStore(None)

    assert store.save("sess_1", b"x") is False
    assert store.load("sess_1", hashlib.sha256(b"x").hexdigest()) is None


def test_entries_are_read_as_they_are_links_included(tmp_path: Path) -> None:
    (tmp_path / "dir" / "deep").mkdir(parents=True)
    (tmp_path / "dir" / "a.txt").write_bytes(b"a")
    (tmp_path / "dir" / "deep" / "b.txt").write_bytes(b"b")
    os.symlink("a.txt", tmp_path / "dir" / "link")
    os.chmod(tmp_path / "dir" / "a.txt", 0o640)

    entry = read_entry(tmp_path / "dir" / "a.txt")
    link = read_entry(tmp_path / "dir" / "link")
    listed = [p.relative_to(tmp_path) for p in entries_under(tmp_path / "dir")]

    assert (entry.data, entry.mode, entry.link) == (b"a", 0o640, None)
    assert entry.digest == hashlib.sha256(b"a").hexdigest()
    assert (link.link, link.data) == ("a.txt", None)
    assert link.digest != entry.digest
    assert entry_digest(tmp_path / "missing") is None
    assert listed == [Path("dir/a.txt"), Path("dir/deep/b.txt"), Path("dir/link")]


@pytest.mark.anyio
async def test_contents_a_change_names_follow_the_session_through_the_store(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(tmp_path / "sessions.sqlite3", person="me")
    try:
        session_id = str((await new_session(store)).session_id)
        here = CheckpointStore(tmp_path / "here", store)
        here.save(session_id, b"before")
        digest = hashlib.sha256(b"before").hexdigest()
        await here.share(session_id, [digest, "0" * 64])  # one not kept here: skipped
        elsewhere = CheckpointStore(tmp_path / "elsewhere", store)  # another machine's disk

        loaded = await anyio.to_thread.run_sync(elsewhere.load, session_id, digest)
        missing = await anyio.to_thread.run_sync(elsewhere.load, session_id, "1" * 64)
        cached = (tmp_path / "elsewhere" / session_id / digest).read_bytes()
        unshared = CheckpointStore(tmp_path / "third")
        alone = await anyio.to_thread.run_sync(unshared.load, session_id, digest)
    finally:
        await store.aclose()

    assert loaded == b"before"
    assert cached == b"before"  # kept on this disk too from then on
    assert missing is None
    assert alone is None  # without the store, only the disk counts


@pytest.mark.anyio
async def test_a_folder_from_before_the_store_goes_into_it_once_intact_contents_only(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(tmp_path / "sessions.sqlite3", person="me")
    try:
        session_id = str((await new_session(store)).session_id)
        old = CheckpointStore(tmp_path / "checkpoints")  # as kept before the store
        for data in (b"a", b"b", b"damaged"):
            old.save(session_id, data)
        damaged = hashlib.sha256(b"damaged").hexdigest()
        (tmp_path / "checkpoints" / session_id / damaged).write_bytes(b"tampered")
        shared = CheckpointStore(tmp_path / "checkpoints", store)

        await shared.share_folder(session_id)
        old.save(session_id, b"later")
        await shared.share_folder(session_id)  # once: the mark says it was done

        def kept(data: bytes) -> bytes | None:
            return anyio.from_thread.run(
                store.get_file,
                SessionId(session_id),
                "checkpoint",
                hashlib.sha256(data).hexdigest(),
            )

        found = await anyio.to_thread.run_sync(
            lambda: [kept(data) for data in (b"a", b"b", b"damaged", b"later")]
        )
    finally:
        await store.aclose()

    assert found == [b"a", b"b", None, None]
