"""Registering process groups before they run, and the reaper that ends them, with real
processes: a gate holds the command until admitted, the reaper kills what it holds when
its pipe closes (and only that), and a registration that could not be made says why."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_agent.process_groups import GroupRegistry, Registration
from acp_agent.process_marks import kill_group_of, start_mark
from tests.support.processes import alive, group_members

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="start marks are read from /proc (Linux)"
)

#: A group whose leader waits on a child: two members.
TREE = ["bash", "-c", "sleep 1000 & wait"]


def _until(condition: object, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def _spawn(registry: GroupRegistry, argv: list[str]) -> tuple[subprocess.Popen[bytes], object]:
    """`argv` in a group of its own, registered as the agent's spawners do."""
    with registry.gate(argv) as gate:
        process = subprocess.Popen(gate.argv, stdin=gate.stdin, start_new_session=True)
        return process, gate.admit(process.pid)


@pytest.fixture
def groups() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        kill_group_of(process.pid, start_mark(process.pid))
        process.kill()
        process.wait()


def test_a_command_waits_at_the_gate_until_its_group_is_registered(tmp_path: Path):
    registry = GroupRegistry(tmp_path / "notes")
    marker = tmp_path / "ran"
    with registry.gate(["sh", "-c", f"echo ran > {marker}"]) as gate:
        process = subprocess.Popen(gate.argv, stdin=gate.stdin, start_new_session=True)
        time.sleep(0.2)
        assert not marker.exists()  # started, and held
        registration = gate.admit(process.pid)
    assert process.wait(timeout=5) == 0
    assert marker.read_text() == "ran\n"
    assert isinstance(registration, Registration)
    assert registration.unguarded is None
    [note] = (tmp_path / "notes").iterdir()
    assert json.loads(note.read_text())["pgid"] == process.pid
    registration.release()
    assert list((tmp_path / "notes").iterdir()) == []


def test_a_command_never_admitted_runs_nothing(tmp_path: Path):
    registry = GroupRegistry(tmp_path / "notes")
    marker = tmp_path / "ran"
    with registry.gate(["sh", "-c", f"echo ran > {marker}"]) as gate:
        process = subprocess.Popen(gate.argv, stdin=gate.stdin, start_new_session=True)
    assert process.wait(timeout=5) == 125
    assert not marker.exists()


def test_a_missing_program_fails_before_anything_starts(tmp_path: Path):
    registry = GroupRegistry(tmp_path / "notes")
    with pytest.raises(FileNotFoundError):
        registry.gate(["no-such-program-anywhere"])
    with pytest.raises(FileNotFoundError):
        registry.gate(["./missing"], cwd=tmp_path)


def test_the_reaper_ends_what_it_holds_when_its_agent_dies_and_then_exits(tmp_path: Path):
    """A small agent registers two groups, releases one, and is killed with -9."""
    notes = tmp_path / "notes"
    program = f"""
import subprocess, sys, time
from pathlib import Path
from acp_agent.process_groups import GroupRegistry
registry = GroupRegistry(Path({str(notes)!r}), reaper=True)
pgids = []
for _ in range(2):
    with registry.gate({TREE!r}) as gate:
        process = subprocess.Popen(gate.argv, stdin=gate.stdin, start_new_session=True)
        registration = gate.admit(process.pid)
    pgids.append(process.pid)
registration.release()  # the second: over, as far as the agent knows
print(*pgids, registry.reaper_pid, flush=True)
time.sleep(1000)
"""
    agent = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    assert agent.stdout is not None
    held, released, reaper = map(int, agent.stdout.readline().split())
    try:
        assert _until(lambda: len(group_members(held)) == 2 and len(group_members(released)) == 2)
        assert alive(reaper)
        agent.send_signal(signal.SIGKILL)
        agent.wait()
        assert _until(lambda: group_members(held) == [])
        assert _until(lambda: not alive(reaper))
        assert len(group_members(released)) == 2  # let go of: not the reaper's to end
        assert list(notes.glob("*.json")) == []
    finally:
        agent.stdout.close()
        for pgid in (held, released):
            kill_group_of(pgid, start_mark(pgid))


def test_a_reaper_that_died_is_replaced_and_told_of_every_group_held(
    tmp_path: Path, groups: list[subprocess.Popen[bytes]]
):
    registry = GroupRegistry(None, reaper=True)
    first, _ = _spawn(registry, TREE)
    groups.append(first)
    reaper = registry.reaper_pid
    assert reaper is not None
    os.kill(reaper, signal.SIGKILL)
    assert _until(lambda: not alive(reaper))
    second, _ = _spawn(registry, TREE)
    groups.append(second)
    assert registry.reaper_pid not in (None, reaper)
    assert _until(lambda: len(group_members(first.pid)) == len(group_members(second.pid)) == 2)
    registry.close()  # as the agent's death closes the pipe
    assert _until(lambda: group_members(first.pid) == group_members(second.pid) == [])


def test_a_group_registered_nowhere_says_why(tmp_path: Path, groups: list[subprocess.Popen[bytes]]):
    taken = tmp_path / "jobs"
    taken.write_text("a file where the notes' folder should be")
    process, registration = _spawn(GroupRegistry(taken, reaper=False), ["true"])
    groups.append(process)
    assert isinstance(registration, Registration)
    assert registration.unguarded is not None
    assert str(taken) in registration.unguarded
    assert "no reaper" in registration.unguarded
