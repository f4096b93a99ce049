"""CloseOnce: a close starts once, and leaving early cancels nothing."""

from __future__ import annotations

import anyio
import pytest

from acp_agent.core import CloseOnce

from .support import wait_until

pytestmark = pytest.mark.anyio


async def test_the_close_body_runs_once_however_many_callers_close() -> None:
    runs: list[str] = []

    async def body() -> None:
        runs.append("closing")
        await anyio.sleep(0.01)

    closer = CloseOnce(body, name="thing")
    async with anyio.create_task_group() as owner:
        async with anyio.create_task_group() as callers:
            for _ in range(5):
                callers.start_soon(closer.close, owner)
        await closer.close(owner)
    assert runs == ["closing"]
    assert (closer.started, closer.done) == (True, True)


async def test_a_caller_that_stops_waiting_does_not_cancel_the_cleanup() -> None:
    finished = anyio.Event()

    async def body() -> None:
        await anyio.sleep(0.05)  # e.g. waiting for a branch's tools to settle
        finished.set()

    closer = CloseOnce(body, name="branch")
    async with anyio.create_task_group() as owner:
        with anyio.move_on_after(0.005) as impatient:
            await closer.close(owner)
        assert impatient.cancelled_caught
        assert not closer.done
        await closer.wait()  # someone else still waits for it
    assert finished.is_set()


async def test_the_cleanup_survives_its_owner_being_cancelled() -> None:
    finished: list[bool] = []

    async def body() -> None:
        await anyio.sleep(0.02)
        finished.append(True)

    closer = CloseOnce(body, name="session")
    async with anyio.create_task_group() as owner:
        closer.start(owner)
        await wait_until(lambda: closer.started)
        owner.cancel_scope.cancel()  # e.g. the process is shutting down
    assert finished == [True]


async def test_a_failed_close_reaches_every_waiter() -> None:
    async def body() -> None:
        raise OSError("could not flush")

    closer = CloseOnce(body, name="thing")
    async with anyio.create_task_group() as owner:
        for _ in range(2):
            with pytest.raises(OSError, match="flush"):
                await closer.close(owner)
