"""What a tool hands over when its work goes on in the background: a job.

A tool (the `shell` tool with `background`) starts the process itself, where
it knows how (a local process group, or a client terminal), and gives the
runtime a `JobProcess` through its context's `JobHost`. The runtime owns it
from then on: it waits for it in the line's scope (not the tool call's, so
`session/cancel` leaves it running), records its start and end on the line's
timeline, tells the line when it ends, and stops it when asked or when the
session or the agent closes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import attrs

from acp_agent.values import Value

__all__ = ("JobExit", "JobHost", "JobLimitReached", "JobOutput", "JobProcess", "StartedJob")


@attrs.frozen
class JobExit(Value):
    """How a job's command ended: an exit status, or the signal that ended it."""

    exit_code: int | None = None
    signal: str | None = None


@attrs.frozen
class JobOutput(Value):
    """A job's output as kept: bounded text (head and tail, the cut stated), total bytes."""

    text: str
    total_bytes: int


class JobProcess(Protocol):
    """A command running in the background, as the tool that started it hands it over."""

    #: `local` (a process group of ours) or `client` (an editor's terminal).
    @property
    def via(self) -> str: ...

    #: The process group (local), with its leader's start mark (`acp_agent.process_marks`).
    @property
    def pgid(self) -> int | None: ...

    @property
    def start_mark(self) -> str | None: ...

    #: The client terminal the job runs in (client).
    @property
    def terminal_id(self) -> str | None: ...

    async def wait(self) -> JobExit:
        """Run until the command ends (reading its output); cancelled, it kills the command."""
        ...

    async def output(self) -> JobOutput:
        """The output so far (bounded)."""
        ...

    async def stop(self) -> None:
        """Ask it to end (SIGTERM, then SIGKILL after a grace); `wait` then returns."""
        ...

    async def release(self) -> None:
        """Free what it holds (kill anything left; release a client terminal); idempotent."""
        ...


class JobLimitReached(Exception):
    """As many jobs run as the session allows; nothing was started.

    Its text says so for anyone; `advice` tells the model what it can do.
    """

    def __init__(self, message: str, advice: str | None = None) -> None:
        super().__init__(message)
        self.advice = advice


@attrs.frozen
class StartedJob(Value):
    """A job the host took over."""

    job_id: str


class JobHost(Protocol):
    """Where a tool call of one line of work hands over background work."""

    def check_room(self) -> None:
        """Raise `JobLimitReached` if no other job may start now (ask before spawning)."""
        ...

    async def start(
        self, command: str, cwd: str, spawn: Callable[[], Awaitable[JobProcess]]
    ) -> StartedJob:
        """Spawn the job (`spawn`), record it and watch it; returns at once.

        `JobLimitReached` if the limit is reached; `spawn`'s own errors propagate.
        """
        ...
