"""Checkpoints: contents kept by digest per session, entries read without following links."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from acp_agent.capabilities.session import CheckpointStore
from acp_agent.capabilities.session._checkpoints import entries_under, entry_digest, read_entry


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
