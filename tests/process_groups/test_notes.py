"""Killing what a dead agent left running: start marks and the notes on disk, real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_agent.process_groups import GroupNotes
from acp_agent.process_marks import GONE, kill_group_of, start_mark
from tests.support.processes import alive, group_members

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="start marks are read from /proc (Linux)"
)


def _group(command: str) -> subprocess.Popen[bytes]:
    """`command` leading a process group of its own, as a local job runs."""
    return subprocess.Popen(["bash", "-c", command], start_new_session=True)


def _gone(pgid: int, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return True
        time.sleep(0.02)
    return False


def test_a_group_is_killed_only_while_its_leader_is_the_same_process():
    leader = _group("sleep 1000 & wait")
    try:
        mark = start_mark(leader.pid)
        assert mark is not None
        assert mark != GONE
        # A recorded mark that is not the leader's: another process took the pid.
        assert not kill_group_of(leader.pid, "another-boot:1")
        assert alive(leader.pid)
        assert not kill_group_of(leader.pid, None)  # unsure: nothing is killed
        assert kill_group_of(leader.pid, mark)
        leader.wait(timeout=5)
        assert _gone(leader.pid)
    finally:
        leader.kill()


def test_members_left_after_their_leader_died_are_still_killed():
    # The leader waits for a line before it exits, so its mark is taken while it lives
    # (a leader that exited at once left "dead" as its mark on a loaded machine).
    leader = subprocess.Popen(
        ["bash", "-c", "sleep 1000 & read _ ; exit 0"],
        start_new_session=True,
        stdin=subprocess.PIPE,
    )
    mark = start_mark(leader.pid)
    assert leader.stdin is not None
    leader.stdin.write(b"go\n")
    leader.stdin.close()
    leader.wait(timeout=5)
    time.sleep(0.1)
    assert len(group_members(leader.pid)) == 1  # the sleep outlived its leader
    assert mark is not None
    # The same pgid recorded on another machine (a session taken over here): not ours.
    assert not kill_group_of(leader.pid, "another-boot:" + mark.partition(":")[2])
    assert len(group_members(leader.pid)) == 1
    assert kill_group_of(leader.pid, mark)
    assert _gone(leader.pid)


def test_the_sweep_kills_groups_of_a_dead_agent_and_leaves_a_live_agents(tmp_path: Path):
    dead_agent = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_agent.wait()
    orphan = _group("sleep 1000 & wait")
    kept = _group("sleep 1000 & wait")
    try:
        notes = GroupNotes(tmp_path)
        assert notes.add("job_kept", kept.pid, start_mark(kept.pid)) is None  # ours: we run
        (tmp_path / "job_orphan.json").write_text(
            json.dumps(
                {
                    "pgid": orphan.pid,
                    "start_mark": start_mark(orphan.pid),
                    "agent_pid": dead_agent.pid,
                    "agent_mark": "a-boot:42",
                }
            )
        )
        (tmp_path / "job_broken.json").write_text("{")
        assert GroupNotes(tmp_path).sweep() == 1
        assert _gone(orphan.pid)
        assert alive(kept.pid)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["job_kept.json"]
        notes.remove("job_kept")
        assert list(tmp_path.iterdir()) == []
    finally:
        for process in (orphan, kept):
            kill_group_of(process.pid, start_mark(process.pid))
            process.wait(timeout=5)
