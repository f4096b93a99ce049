"""The job manager with in-memory parts: what it records and tells a line, however a job ends."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from acp_agent.capabilities.jobs import JobManager
from acp_agent.capabilities.jobs._manager import JobState
from acp_agent.core import BranchId, JobEnded, JobStarted, NotificationReceived, Seq
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
