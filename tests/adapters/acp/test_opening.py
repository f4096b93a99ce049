"""Sessions answered before they are assembled: requests about one wait for its assembly,
hear why it failed, and shutdown stops what is still assembling."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import anyio
import pytest
from anyio.abc import TaskGroup

from acp_agent.adapters.acp._opening import OpeningSessions
from protocol.connection import Work
from protocol.errors import InternalError


@pytest.fixture
async def owner() -> AsyncIterator[TaskGroup]:
    """The task group the assemblies run in, as the connection's is."""
    async with anyio.create_task_group() as task_group:
        yield task_group
        task_group.cancel_scope.cancel()


def _opening(owner: TaskGroup) -> OpeningSessions:
    def start_soon(work: Work, *, name: str) -> None:
        async def run() -> None:
            await work()

        owner.start_soon(run, name=name)

    return OpeningSessions(start_soon)


async def test_a_request_waits_for_the_assembly_then_goes_on(owner: TaskGroup) -> None:
    opening = _opening(owner)
    release = asyncio.Event()
    steps: list[str] = []

    async def assembly() -> None:
        await release.wait()
        steps.append("assembled")

    assert not opening.running
    opening.assemble("sess_1", assembly)
    assert opening.running  # from the answer on: the warm-up gives way to it
    waiter = asyncio.create_task(opening.ready("sess_1"))
    await asyncio.sleep(0.01)
    assert not waiter.done()  # still assembling
    assert opening.running

    release.set()
    await asyncio.wait_for(waiter, 1)
    assert steps == ["assembled"]
    assert not opening.running
    await asyncio.wait_for(opening.ready("sess_1"), 1)  # and at once from then on


async def test_a_session_not_being_assembled_is_ready_at_once(owner: TaskGroup) -> None:
    await asyncio.wait_for(_opening(owner).ready("sess_unknown"), 1)


async def test_a_failed_assembly_is_told_to_every_later_request_but_not_to_closing(
    owner: TaskGroup, caplog: pytest.LogCaptureFixture
) -> None:
    opening = _opening(owner)

    async def assembly() -> None:
        raise RuntimeError("no runtime")

    opening.assemble("sess_1", assembly)
    for _ in range(2):
        # Told as an internal error naming the session and why (the runtime's own errors
        # are `wire_errors`' already, and pass as they are).
        with pytest.raises(InternalError) as told:
            await asyncio.wait_for(opening.ready("sess_1"), 1)
        assert (
            told.value.message == "Internal error: session sess_1 could not be opened: no runtime"
        )
    await asyncio.wait_for(opening.settled("sess_1"), 1)  # close and delete go on
    assert "session sess_1 could not be assembled" in caplog.text


async def test_shutdown_stops_an_assembly_still_running_and_waits_for_it(
    owner: TaskGroup,
) -> None:
    opening = _opening(owner)
    before = asyncio.all_tasks()
    started = asyncio.Event()
    stopped: list[bool] = []

    async def assembly() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.append(True)
            raise

    opening.assemble("sess_1", assembly)
    await started.wait()
    assert len(asyncio.all_tasks() - before) == 1  # the assembly, in the owner's group
    await asyncio.wait_for(opening.aclose(), 1)

    assert stopped == [True]
    assert asyncio.all_tasks() - before == set()
    with pytest.raises(asyncio.CancelledError):
        await opening.ready("sess_1")
