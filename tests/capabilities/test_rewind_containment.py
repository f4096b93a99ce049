"""A rewind's restores, checked where they act: nothing outside the workspace is touched.

The end-to-end refusal is in `tests/faults/test_rewind_links.py`; here the last
line of defence, the check right before each file is acted on (a link made after
the plan was drawn up), and an unconfirmed write's record.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from acp_agent.capabilities.session import CheckpointStore
from acp_agent.capabilities.session._checkpoints import UNKNOWN_AFTER
from acp_agent.capabilities.session._rewind import _Change, _plan, _restore
from acp_agent.core import CallId, FileChanged


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_path_that_leads_outside_when_it_is_acted_on_is_left_alone(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "kept.txt").write_text("theirs\n")
    (outside / "made.txt").write_text("theirs too\n")
    (workspace / "sub").symlink_to(outside, target_is_directory=True)
    store = CheckpointStore(tmp_path / "checkpoints")
    store.save("sess", b"before\n")
    restores = [
        (
            str(workspace / "sub" / "kept.txt"),
            FileChanged(CallId("c"), "", digest(b"before\n"), "x", before_saved=True),
        ),
        (str(workspace / "sub" / "made.txt"), FileChanged(CallId("c"), "", None, "y")),
        (str(workspace / "plain.txt"), FileChanged(CallId("c"), "", None, "z")),
    ]
    (workspace / "plain.txt").write_text("the agent's\n")

    outcome = _restore(restores, store, "sess", (workspace,))

    assert outcome == (
        (),
        (str(workspace / "plain.txt"),),
        (),
        (str(workspace / "sub" / "kept.txt"), str(workspace / "sub" / "made.txt")),
    )
    assert (outside / "kept.txt").read_text() == "theirs\n"
    assert (outside / "made.txt").read_text() == "theirs too\n"
    assert not (workspace / "plain.txt").exists()


def test_a_file_whose_write_went_unconfirmed_and_then_changed_is_a_conflict(
    tmp_path: Path,
) -> None:
    # The agent asked the editor for b"new"; unconfirmed, it recorded the file's content
    # then (still b"old") as changing to an unknown one. The editor wrote it afterwards.
    path = tmp_path / "f.txt"
    path.write_bytes(b"new")
    changes = [
        _Change((1.0, 1), FileChanged(CallId("c"), str(path), digest(b"old"), digest(b"new"))),
        _Change((1.0, 2), FileChanged(CallId("c"), str(path), digest(b"old"), UNKNOWN_AFTER)),
    ]

    plan = _plan(changes, (tmp_path,))
    path.write_bytes(b"old")  # the write never landed after all: nothing to restore
    unchanged = _plan(changes, (tmp_path,))

    assert plan.conflicts == (f"{path}: changed outside the agent since it last wrote it",)
    assert (unchanged.restores, unchanged.conflicts) == ([], ())
