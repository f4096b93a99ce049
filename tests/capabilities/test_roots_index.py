"""What a command changed under the roots: each file's content kept before it, compared after."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from acp_agent.capabilities.session import CheckpointStore, RootsIndex
from acp_agent.capabilities.session._roots_index import TooManyFiles


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Kept:
    """A checkpoint store that counts what it is given."""

    def __init__(self, folder: Path) -> None:
        self.store = CheckpointStore(folder)
        self.saved: list[bytes] = []

    def save(self, data: bytes) -> bool:
        self.saved.append(data)
        return self.store.save("sess_1", data, durable=False)


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "gone.txt").write_text("bye\n")
    (root / ".gitignore").write_text("build/\n")
    for tool_made in ("build", ".venv", ".pytest_cache", "node_modules", "src/__pycache__", ".git"):
        (root / tool_made).mkdir(parents=True)
        (root / tool_made / "f").write_text("made by a tool\n")
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (root / ".pytest_cache" / "CACHEDIR.TAG").write_text(
        "Signature: 8a477f597d28d172789f06886806bc55\n"
    )
    return root


def test_a_commands_changes_are_found_with_what_each_file_held_before(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    kept = Kept(tmp_path / "checkpoints")
    index = RootsIndex(kept.save)

    before = index.tree([root])
    (root / "src" / "a.py").write_text("a = 2\n")
    (root / "gone.txt").unlink()
    (root / "new" / "deep").mkdir(parents=True)
    (root / "new" / "deep" / "b.txt").write_text("bee\n")
    os.symlink("src/a.py", root / "link")
    for tool_made in ("build", ".venv", ".pytest_cache", "node_modules", "src/__pycache__", ".git"):
        (root / tool_made / "f").write_text("changed by a tool\n")
    _, facts = index.changes(before, [root], "call_1")

    changes = {Path(f.path).relative_to(root).as_posix(): f for f in facts}
    assert sorted(changes) == ["gone.txt", "link", "new/deep/b.txt", "src/a.py"]
    edited = changes["src/a.py"]
    assert (edited.before, edited.after) == (sha(b"a = 1\n"), sha(b"a = 2\n"))
    assert edited.before_saved
    assert edited.before_mode is not None
    assert kept.store.load("sess_1", sha(b"a = 1\n")) == b"a = 1\n"
    assert changes["gone.txt"].after is None
    assert kept.store.load("sess_1", changes["gone.txt"].before or "") == b"bye\n"
    made = changes["new/deep/b.txt"]
    assert (made.before, made.made_dirs) == (None, [str(root / "new"), str(root / "new/deep")])
    assert {f.call_id for f in facts} == {"call_1"}


def test_unchanged_files_are_not_read_again_and_a_quick_rewrite_is_still_seen(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    for path in root.rglob("*"):
        os.utime(path, ns=(1_000_000_000, 1_000_000_000), follow_symlinks=False)
    kept = Kept(tmp_path / "checkpoints")
    index = RootsIndex(kept.save)

    index.tree([root])
    first = len(kept.saved)
    before = index.tree([root])
    again = len(kept.saved) - first
    # The same size, right after the walk.
    (root / "src" / "a.py").write_text("a = 3\n")
    _, facts = index.changes(before, [root], "call_2")

    assert sorted(kept.saved[:first]) == [b"a = 1\n", b"build/\n", b"bye\n"]
    assert again == 0  # nothing changed: nothing read again
    assert [Path(f.path).name for f in facts] == ["a.py"]
    assert kept.saved[-1] == b"a = 3\n"  # the new content is kept for the next command


def test_past_the_limit_nothing_is_tracked(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    for n in range(5):
        (root / f"f{n}.txt").write_text(str(n))

    with pytest.raises(TooManyFiles, match="more than 4 files"):
        RootsIndex(lambda data: True, max_files=4).tree([root])


def test_a_large_file_is_compared_by_digest_without_keeping_it(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    big = root / "big.bin"
    big.write_bytes(b"x" * 2048)
    kept = Kept(tmp_path / "checkpoints")
    index = RootsIndex(kept.save, max_kept_bytes=1024)

    before = index.tree([root])
    big.write_bytes(b"y" * 2048)
    _, facts = index.changes(before, [root], "call_3")

    assert [(Path(f.path).name, f.before_saved) for f in facts] == [("big.bin", False)]
    assert all(len(data) <= 1024 for data in kept.saved)


def test_past_the_sessions_budget_contents_are_compared_not_kept(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    kept = Kept(tmp_path / "checkpoints")
    index = RootsIndex(kept.save, budget_bytes=len("a = 1\n"))
    (root / "gone.txt").unlink()

    before = index.tree([root])
    (root / ".gitignore").write_text("build/\nmore/\n")
    (root / "src" / "a.py").write_text("a = 2\n")
    _, facts = index.changes(before, [root], "call_5")

    assert {Path(f.path).name: f.before_saved for f in facts} == {".gitignore": False, "a.py": True}


def test_a_file_newly_ignored_is_not_taken_as_removed(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    index = RootsIndex(lambda data: True)

    before = index.tree([root])
    (root / ".gitignore").write_text("build/\ngone.txt\n")
    _, facts = index.changes(before, [root], "call_4")

    assert [Path(f.path).name for f in facts] == [".gitignore"]
