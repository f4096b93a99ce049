"""The job manager with in-memory parts: what it records and tells a line, however a job ends,
and what a new agent (a restart, a takeover) finds of a job it could not end."""

from __future__ import annotations

import contextlib
import json
import socket
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from acp_agent.capabilities.jobs import JobManager, SavedOutputs
from acp_agent.capabilities.jobs._manager import JobState
from acp_agent.core import (
    BranchId,
    CallId,
    JobEnded,
    JobStarted,
    NotificationReceived,
    Seq,
    SessionId,
)
from acp_agent.process_marks import start_mark
from acp_agent.store import MemoryStore
from acp_agent.toolkit import JobExit, JobLimitReached, JobOutput


class _Scope:
    def __init__(self, group: anyio.abc.TaskGroup) -> None:
        self.group = group

    def start_soon(self, func: Any, *, name: object = None) -> None:
        self.group.start_soon(func)


class _Line:
    """A line of work as the manager uses it: an id, a scope, facts recorded."""

    id = BranchId("br_main")
    parent_id = None
    cut_seq = Seq(0)

    def __init__(self, group: anyio.abc.TaskGroup) -> None:
        self.scope = _Scope(group)
        self.facts: list[Any] = []

    async def record_fact(self, payload: Any, *, producer: str = "") -> Any:
        self.facts.append(payload)
        return payload


class _Process:
    """A job that ends when stopped, or when its `wait` is told to fail."""

    via = "client"
    pgid = None
    start_mark = None
    terminal_id = "term_1"

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.ended = anyio.Event()
        self.released = 0

    async def wait(self) -> JobExit:
        if self.fail:
            raise RuntimeError("the terminal went away")
        await self.ended.wait()
        return JobExit(None, "SIGTERM")

    async def output(self) -> JobOutput:
        return JobOutput("partial\n", 8)

    async def stop(self) -> None:
        self.ended.set()

    async def release(self) -> None:
        self.released += 1


def _kinds(line: _Line) -> list[type]:
    return [type(fact) for fact in line.facts]


async def test_a_job_whose_terminal_fails_is_lost_and_reported_not_a_failed_line():
    async with anyio.create_task_group() as group:
        line, process = _Line(group), _Process(fail=True)
        manager = JobManager()
        job = await manager.start(line, "call_1", "npm run dev", "/w", _started(process))  # type: ignore[arg-type]
        await manager.wait(job, 5)
    assert job.state is JobState.LOST
    assert process.released >= 1
    assert _kinds(line) == [JobStarted, JobEnded, NotificationReceived]
    assert line.facts[1].state == "lost"
    assert "was lost: the agent could no longer follow it, and ended it" in line.facts[2].text


@pytest.mark.parametrize(("by", "told"), [("model", False), ("person", True)])
async def test_a_stopped_job_is_reported_only_when_the_person_stopped_it(by: str, told: bool):
    async with anyio.create_task_group() as group:
        line, process = _Line(group), _Process()
        manager = JobManager(limit=1)
        job = await manager.start(line, "call_1", "sleep 100", "/w", _started(process))  # type: ignore[arg-type]
        with pytest.raises(JobLimitReached, match=r"1 background job is running.*\(1\)"):
            manager.check_room()
        await manager.stop(job.job_id, by=by)
    assert job.state is JobState.STOPPED
    ended = line.facts[1]
    assert (ended.state, ended.signal, ended.stopped_by, ended.output) == (
        "stopped",
        "SIGTERM",
        by,
        "partial\n",
    )
    assert (NotificationReceived in _kinds(line)) is told
    if told:
        assert "was stopped by the person" in line.facts[2].text
    manager.check_room()  # room again once it ended


def _started(process: _Process) -> Any:
    async def spawn() -> _Process:
        return process

    return spawn


class _LocalProcess(_Process):
    """A local job whose output grows when told to."""

    via = "local"
    terminal_id = None

    def __init__(self) -> None:
        super().__init__()
        self.printed = ""

    async def output(self) -> JobOutput:
        return JobOutput(self.printed, len(self.printed))


class _RecordedLine(_Line):
    """A line whose facts read back as its events (what a new agent finds)."""

    async def read(self, *, gt: int = 0) -> list[Any]:
        return [SimpleNamespace(payload=fact) for fact in self.facts]


async def _kept(store: MemoryStore, job_id: str, text: str) -> None:
    """Until the store holds `text` as the job's output so far."""
    with anyio.fail_after(5):
        while True:
            data = await store.get_output(SessionId("sess_1"), f"job/{job_id}", 0)
            if data is not None and json.loads(data)["text"] == text:
                return
            await anyio.sleep(0.01)


async def test_a_running_jobs_output_is_kept_and_a_new_agent_shows_it_interrupted():
    store = MemoryStore()
    saved = SavedOutputs(store, SessionId("sess_1"))
    async with anyio.create_task_group() as group:
        line, process = _RecordedLine(group), _LocalProcess()
        manager = JobManager(saved=saved, save_every_s=0.01)
        job = await manager.start(line, "call_1", "make test", "/w", _started(process))  # type: ignore[arg-type]
        process.printed = "compiling\n"
        await _kept(store, job.job_id, "compiling\n")
        process.printed = "compiling\nlinking\n"
        await _kept(store, job.job_id, "compiling\nlinking\n")
        group.cancel_scope.cancel()  # the agent is gone; its end is never recorded
    started = line.facts[0]
    assert isinstance(started, JobStarted)
    assert started.host == socket.gethostname()
    # Another agent opens the line: only JobStarted is on record.
    async with anyio.create_task_group() as group:
        later = _RecordedLine(group)
        later.facts = [started]
        await JobManager(saved=saved).recover(later)  # type: ignore[arg-type]
    ended = later.facts[1]
    assert isinstance(ended, JobEnded)
    assert (ended.state, ended.output, ended.output_bytes) == (
        "interrupted",
        "compiling\nlinking\n",
        18,
    )
    assert "Its last output:\ncompiling\nlinking" in later.facts[2].text


@pytest.mark.parametrize("here", [True, False])
async def test_a_job_left_running_is_killed_only_on_the_machine_it_ran_on(here: bool):
    leader = await anyio.open_process(["sleep", "1000"], start_new_session=True)
    try:
        host = socket.gethostname() if here else "build-7"
        mark = start_mark(leader.pid)
        record = JobStarted(
            "job_1", CallId("call_1"), "sleep 1000", "/w", "local", leader.pid, mark, host=host
        )
        async with anyio.create_task_group() as group:
            line = _RecordedLine(group)
            line.facts = [record]
            manager = JobManager()
            await manager.recover(line)  # type: ignore[arg-type]
        # Killed: it ends at once. Not killed: still running a moment later.
        with anyio.move_on_after(5 if here else 0.3):
            await leader.wait()
        assert (leader.returncode is not None) is here
        [job] = manager.jobs()
        assert job.state is JobState.INTERRUPTED
        if here:
            assert "the agent stopped while it ran" in line.facts[2].text
        else:
            assert "the agent running it on build-7 lost the session" in line.facts[2].text
    finally:
        with contextlib.suppress(ProcessLookupError):
            leader.kill()
        await leader.aclose()
