"""Background jobs: commands that run while their line of work goes on, and report back.

A tool call hands its running command over (`JobHost.start`, the
`acp_agent.toolkit` interface); the session's `JobManager` then owns it:

- **belonging**: a job belongs to the line of work (branch) whose call
  started it; it is watched in that line's scope, not the call's, so
  `session/cancel` leaves it running, while closing the line, the session or
  the agent ends it (the whole process group, or the client terminal);
- **recording**: `JobStarted` (with the process group and its leader's
  start mark) and `JobEnded` (state, exit, run time, bounded output) go on
  the line's timeline;
- **reporting**: when a job ends, its line gets a `<notification
  source="job/ID">` with the command, how it ended, the run time and the
  last lines of output; it reaches that line's next model request. A job
  the model stopped itself is not reported back to it: its tool said so;
- **showing**: the person sees every end the model is told of, as a
  `JobEndShown` fact on the main line (the adapter shows it as a completed
  tool call "Job … ended"): at once when a turn of main runs, else at the
  start of main's next turn, before the model's reply; never between turns;
- **recovery**: a line opened after the agent died finds jobs started and
  never ended; a surviving process group is killed (only if its leader is
  still the same process, by start mark, on this machine) and the job is
  recorded `interrupted`, never restarted, with the output it had printed
  (`SavedOutputs`: kept in the store while it ran) (a local job's group was
  ended already when the agent died, by its reaper, or when the next agent
  started: `acp_agent.process_groups`). A job that ran on another machine
  (the session was taken over here) is out of reach: it is recorded
  interrupted, saying where it ran;
- **limit**: at most `limit` jobs run at once in a session.
"""

from __future__ import annotations

import enum
import functools
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
import attrs

from acp_agent.capabilities.context import GuideEntry, record_notification
from acp_agent.capabilities.jobs._saved_output import FIRST_SAVE_S, SAVE_EVERY_S, SavedOutputs
from acp_agent.core import (
    Branch,
    BranchClosed,
    BranchId,
    CallId,
    JobEnded,
    JobEndShown,
    JobStarted,
    ScopeClosed,
    StoreError,
    Turn,
    new_id,
)
from acp_agent.process_marks import kill_group_of
from acp_agent.toolkit import JobExit, JobHost, JobLimitReached, JobOutput, JobProcess, StartedJob
from acp_agent.values import Value

__all__ = (
    "DEFAULT_JOB_LIMIT",
    "JOBS_GUIDE_ENTRY",
    "JOBS_PRODUCER",
    "Job",
    "JobManager",
    "JobState",
    "NoSuchJob",
)

logger = logging.getLogger(__name__)

#: The producer of the facts the manager records.
JOBS_PRODUCER: Final = "capabilities.jobs"
#: How many jobs may run at once in a session, unless configured.
DEFAULT_JOB_LIMIT: Final = 8
#: How much of a job's output its notification quotes.
_NOTIFY_LINES: Final = 20
_NOTIFY_CHARS: Final = 2000
#: Bounded waits while a job is being ended.
_END_WAIT_S: Final = 10.0
_CLEANUP_WAIT_S: Final = 5.0

JOBS_GUIDE_ENTRY: Final = GuideEntry(
    "tools/jobs",
    "tools",
    order=60,
    text="""\
## Background jobs

`shell` with `background: true` starts a command as a job and returns its id at once; \
the command runs on while you work (a test suite, a build, a dev server). Read its output \
so far with `job_output`, stop it with `job_stop`. When it ends by itself (or the person \
stops it), you get `<notification source="job/ID">` with the command, how it ended, the \
run time and its last lines of output: the result of work you started earlier, not a new \
request. A job is never restarted after the agent restarts; it is reported interrupted.""",
)


class JobState(enum.StrEnum):
    """Where a job stands."""

    RUNNING = "running"
    #: Ended by itself (see its exit code or signal).
    EXITED = "exited"
    #: Ended by the model or the person.
    STOPPED = "stopped"
    #: Ended because its line, its session or the agent closed.
    KILLED = "killed"
    #: The agent died while it ran; seen after the restart, never re-run.
    INTERRUPTED = "interrupted"
    #: It could no longer be followed (its client terminal failed), so it was ended.
    LOST = "lost"


class NoSuchJob(LookupError):
    """No job of this session has that id."""


@attrs.define(eq=False)
class Job:
    """One background job, running or ended."""

    job_id: str
    branch: Branch
    call_id: str
    command: str
    cwd: str
    via: str
    #: Wall time it started (for the person).
    started_at: float
    process: JobProcess | None = None
    #: The client terminal it runs in (None: it runs here).
    terminal_id: str | None = None
    state: JobState = JobState.RUNNING
    exit: JobExit | None = None
    duration_s: float | None = None
    #: The output kept when it ended (bounded); while it runs, ask `JobManager.output`.
    output: str = ""
    output_bytes: int = 0
    stopped_by: str | None = None
    #: The machine it ran on, when not this one (a session taken over here).
    elsewhere: str | None = None
    ended: anyio.Event = attrs.field(factory=anyio.Event)

    @property
    def branch_id(self) -> BranchId:
        return self.branch.id

    @property
    def belongs_to(self) -> str:
        """The line of work it belongs to, for the person: "main" or the branch's title."""
        if self.branch.parent_id is None:
            return "main"
        return self.branch.record.label or self.branch.id

    def outcome(self, *, reader: str = "model") -> str:
        """How it ended (or that it runs), as a phrase for `reader` (`model` or `person`):
        "exited with code 0", "was stopped by you"."""
        if self.state is JobState.RUNNING:
            return "is running"
        if self.state is JobState.STOPPED:
            if self.stopped_by == reader:
                return "was stopped by you"
            return f"was stopped by {'the agent' if self.stopped_by == 'model' else 'the person'}"
        if self.state is JobState.KILLED:
            return "was killed when its line of work closed (its branch, session or agent)"
        if self.state is JobState.INTERRUPTED and self.elsewhere is not None:
            return (
                f"was interrupted: the agent running it on {self.elsewhere} lost the session; "
                "it is not re-run, and nothing here can stop it there"
            )
        if self.state is JobState.INTERRUPTED:
            return "was interrupted: the agent stopped while it ran; it is not re-run"
        if self.state is JobState.LOST:
            return "was lost: the agent could no longer follow it, and ended it"
        if self.exit is not None and self.exit.signal is not None:
            return f"was killed by {self.exit.signal}"
        if self.exit is not None and self.exit.exit_code is not None:
            return f"exited with code {self.exit.exit_code}"
        return "ended (exit status unknown)"

    def summary(self, *, reader: str = "model") -> str:
        """One line: id, state, run time, command (`reader` as for `outcome`)."""
        took = f", {_seconds(self.duration_s)}" if self.duration_s is not None else ""
        return f"{self.job_id} ({self.via}) {self.outcome(reader=reader)}{took}: `{self.command}`"


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min"


def _last_lines(text: str) -> str:
    lines = text.rstrip("\n").splitlines()[-_NOTIFY_LINES:]
    tail = "\n".join(lines)
    return tail[-_NOTIFY_CHARS:]


@attrs.frozen
class _LineHost(Value):
    """The `JobHost` of one tool call of one line (what `ToolContext.jobs` is)."""

    manager: JobManager
    branch: Branch
    call_id: str

    def check_room(self) -> None:
        self.manager.check_room()

    async def start(
        self, command: str, cwd: str, spawn: Callable[[], Awaitable[JobProcess]]
    ) -> StartedJob:
        job = await self.manager.start(self.branch, self.call_id, command, cwd, spawn)
        return StartedJob(job.job_id)


class JobManager:
    """A session's background jobs (see the module docstring).

    **Parameters:**

    * `limit`: how many jobs may run at once.
    * `clock`: wall time, for when a job started.
    * `saved`: where a running local job's output so far is kept (None: nowhere).
    * `save_every_s`: how often, at most.
    """

    name = "background jobs"

    def __init__(
        self,
        *,
        limit: int = DEFAULT_JOB_LIMIT,
        clock: Callable[[], float] = time.time,
        saved: SavedOutputs | None = None,
        save_every_s: float = SAVE_EVERY_S,
    ) -> None:
        self.limit = limit
        self._clock = clock
        self._saved = saved
        self._save_every_s = save_every_s
        self._host = socket.gethostname()
        self._jobs: dict[str, Job] = {}
        #: Spawns under way: they count against the limit before they are jobs.
        self._starting = 0
        #: The session's main line, where ends are shown (once it opened).
        self._main: Branch | None = None
        #: Held while deciding to record on main: no showing slips past main's turn end.
        self._show_lock = anyio.Lock()
        self._main_turn_open = False
        #: Ends the person has not been shown yet (they wait for a turn of main).
        self._unshown: list[Job] = []

    def attach_main(self, main: Branch) -> None:
        """The main line opened: show the jobs' ends in its turns."""
        self._main = main
        main.observe_turns(self)

    async def turn_started(self, turn: Turn) -> None:
        async with self._show_lock:
            self._main_turn_open = True
            waiting, self._unshown = self._unshown, []
            for job in waiting:
                await self._show_end(job)

    async def turn_ending(self, turn: Turn) -> None:
        async with self._show_lock:
            self._main_turn_open = False

    def host(self, branch: Branch, call_id: str) -> JobHost:
        """The job host for one call of `branch`."""
        return _LineHost(self, branch, call_id)

    def now(self) -> float:
        """Wall time, by the manager's clock."""
        return self._clock()

    def jobs(self) -> list[Job]:
        """Every job of the session known here, oldest first."""
        return list(self._jobs.values())

    def job(self, job_id: str) -> Job:
        """The job with this id, or the one whose id starts so (as `/jobs` shows it)."""
        wanted = job_id.strip()
        job = self._jobs.get(wanted)
        if job is not None:
            return job
        found = [j for j in self._jobs.values() if wanted and j.job_id.startswith(wanted)]
        if len(found) == 1:
            return found[0]
        if found:
            raise NoSuchJob(f"several jobs' ids start with {wanted!r}; give more of it")
        raise NoSuchJob(f"no job {job_id!r} in this session")

    def running(self) -> list[Job]:
        return [job for job in self._jobs.values() if job.state is JobState.RUNNING]

    # --- starting and watching -------------------------------------------------------------

    def check_room(self) -> None:
        busy = len(self.running()) + self._starting
        if busy >= self.limit:
            running = "1 background job is" if busy == 1 else f"{busy} background jobs are"
            raise JobLimitReached(
                f"{running} running, the most this session allows ({self.limit})",
                "stop one (job_stop) or wait for one to end",
            )

    async def start(
        self,
        branch: Branch,
        call_id: str,
        command: str,
        cwd: str,
        spawn: Callable[[], Awaitable[JobProcess]],
    ) -> Job:
        """Spawn, record and watch a job of `branch` (see `JobHost.start`)."""
        self.check_room()
        self._starting += 1
        try:
            process = await spawn()
        finally:
            self._starting -= 1
        job = Job(
            new_id("job"),
            branch,
            call_id,
            command,
            cwd,
            process.via,
            self._clock(),
            process,
            process.terminal_id,
        )
        started = JobStarted(
            job.job_id,
            CallId(call_id),
            command,
            cwd,
            process.via,
            process.pgid,
            process.start_mark,
            process.terminal_id,
            self._host,
        )
        try:
            await branch.record_fact(started, producer=JOBS_PRODUCER)
            self._jobs[job.job_id] = job
            branch.scope.start_soon(functools.partial(self._watch, job), name=job.job_id)
            if self._saved is not None and process.via == "local":
                branch.scope.start_soon(
                    functools.partial(self._keep_output, job, self._saved),
                    name=f"{job.job_id} output",
                )
        except BaseException:
            # Not on record, so nothing could end it after a restart: end it now.
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLEANUP_WAIT_S):
                await process.release()
            self._jobs.pop(job.job_id, None)
            raise
        # Not the command: it may hold a secret, and logs never do.
        logger.info("job %s started on %s (%s)", job.job_id, branch.id, process.via)
        return job

    async def _watch(self, job: Job) -> None:
        """Wait for the job in its line's scope; record its end and tell its line."""
        process = job.process
        assert process is not None
        began = anyio.current_time()
        try:
            exited = await process.wait()
        except anyio.get_cancelled_exc_class():
            # The line, the session or the agent is closing: the job goes with it.
            with anyio.CancelScope(shield=True):
                job.duration_s = anyio.current_time() - began
                await self._end(job, JobState.KILLED, None, notify=False)
            raise
        except Exception:
            # Its terminal (or pipe) failed: never let that fail the line's scope.
            logger.warning("job %s could no longer be followed", job.job_id, exc_info=True)
            job.duration_s = anyio.current_time() - began
            await self._end(job, JobState.LOST, None, notify=True)
            return
        job.duration_s = anyio.current_time() - began
        state = JobState.STOPPED if job.stopped_by else JobState.EXITED
        await self._end(job, state, exited, notify=job.stopped_by != "model")

    async def _keep_output(self, job: Job, saved: SavedOutputs) -> None:
        """While the job runs, keep its output so far in the store when it grew (soon after
        it starts, then at most every `save_every_s`): what a takeover or a restart shows."""
        process = job.process
        assert process is not None
        kept = 0
        wait_s = min(self._save_every_s, FIRST_SAVE_S)
        while True:
            with anyio.move_on_after(wait_s):
                await job.ended.wait()
            wait_s = self._save_every_s
            if job.ended.is_set() or job.state is not JobState.RUNNING:
                return  # its end records its output
            output = await process.output()
            if output.total_bytes != kept:
                kept = output.total_bytes
                await saved.save(job.job_id, output)

    async def _end(
        self, job: Job, state: JobState, exited: JobExit | None, *, notify: bool
    ) -> None:
        process = job.process
        assert process is not None
        output = JobOutput("", 0)
        with anyio.move_on_after(_CLEANUP_WAIT_S):
            try:
                output = await process.output()
            except Exception:
                logger.warning("could not read the output of job %s", job.job_id, exc_info=True)
        with anyio.move_on_after(_CLEANUP_WAIT_S):
            try:
                await process.release()
            except Exception:
                logger.warning("could not release job %s", job.job_id, exc_info=True)
        job.state, job.exit = state, exited
        job.output, job.output_bytes = output.text, output.total_bytes
        ended = JobEnded(
            job.job_id,
            state.value,
            exited.exit_code if exited else None,
            exited.signal if exited else None,
            job.duration_s,
            output.text,
            output.total_bytes,
            job.stopped_by if state is JobState.STOPPED else None,
        )
        try:
            with anyio.move_on_after(_CLEANUP_WAIT_S):
                await job.branch.record_fact(ended, producer=JOBS_PRODUCER)
                if notify:
                    await record_notification(job.branch, f"job/{job.job_id}", _report(job))
                    await self._ended(job)
        except (BranchClosed, ScopeClosed, StoreError):
            # Closing (or the store failed): a later load records it interrupted.
            logger.info("the end of job %s was not recorded", job.job_id)
        finally:
            job.ended.set()
            logger.info("job %s %s", job.job_id, job.outcome())

    # --- what the model and the person do --------------------------------------------------

    async def output(self, job: Job) -> JobOutput:
        """The job's output: so far while it runs, as kept once it ended."""
        if job.state is JobState.RUNNING and job.process is not None:
            return await job.process.output()
        return JobOutput(job.output, job.output_bytes)

    async def wait(self, job: Job, timeout_s: float) -> Job:
        """Until the job ends, at most `timeout_s`."""
        with anyio.move_on_after(timeout_s):
            await job.ended.wait()
        return job

    async def stop(self, job_id: str, *, by: str) -> Job:
        """Stop a running job (`by`: `model` or `person`); returns it once it ended."""
        job = self.job(job_id)
        if job.state is not JobState.RUNNING or job.process is None:
            return job
        job.stopped_by = job.stopped_by or by
        await job.process.stop()
        with anyio.move_on_after(_END_WAIT_S):
            await job.ended.wait()
        return job

    # --- after a restart ---------------------------------------------------------------------

    async def recover(self, branch: Branch) -> None:
        """Take in the jobs `branch` recorded; end those a dead agent left running."""
        started: dict[str, JobStarted] = {}
        ended: dict[str, JobEnded] = {}
        for event in await branch.read(gt=branch.cut_seq):
            payload = event.payload
            if isinstance(payload, JobStarted):
                started[payload.job_id] = payload
            elif isinstance(payload, JobEnded):
                ended[payload.job_id] = payload
        for job_id, record in started.items():
            if job_id in self._jobs:
                continue
            job = Job(
                job_id,
                branch,
                record.call_id,
                record.command,
                record.cwd,
                record.via,
                0.0,
                terminal_id=record.terminal_id,
            )
            job.ended.set()
            self._jobs[job_id] = job
            end = ended.get(job_id)
            if end is not None:
                try:
                    job.state = JobState(end.state)
                except ValueError:  # written by a newer version
                    job.state = JobState.EXITED
                job.exit = JobExit(end.exit_code, end.signal)
                job.duration_s, job.stopped_by = end.duration_s, end.stopped_by
                job.output, job.output_bytes = end.output, end.output_bytes
                continue
            killed = False
            if record.host is not None and record.host != self._host:
                job.elsewhere = record.host  # out of reach: its pgid names a group there
            elif record.via == "local" and record.pgid is not None:
                killed = kill_group_of(record.pgid, record.start_mark)
            job.state = JobState.INTERRUPTED
            logger.info("job %s was left by a previous run (killed: %s)", job_id, killed)
            if self._saved is not None and (so_far := await self._saved.load(job_id)):
                job.output, job.output_bytes = so_far.text, so_far.total_bytes
            fact = JobEnded(
                job_id,
                JobState.INTERRUPTED.value,
                output=job.output,
                output_bytes=job.output_bytes,
            )
            try:
                await branch.record_fact(fact, producer=JOBS_PRODUCER)
                await record_notification(branch, f"job/{job_id}", _report(job))
                await self._ended(job)
            except (BranchClosed, ScopeClosed):
                return

    # --- showing ends to the person ----------------------------------------------------------

    async def _ended(self, job: Job) -> None:
        """Show the person that `job` ended: now in main's turn, or at main's next one."""
        async with self._show_lock:
            if self._main_turn_open:
                await self._show_end(job)
            else:
                self._unshown.append(job)

    async def _show_end(self, job: Job) -> None:
        """Record the row of `job`'s end on main (hold the lock, main's turn open)."""
        if self._main is None:
            return
        shown = JobEndShown(
            job.job_id,
            f"{job.job_id}.ended",
            job.command,
            job.state.value,
            job.outcome(reader="person"),
            job.exit.exit_code if job.exit else None,
            job.exit.signal if job.exit else None,
            job.duration_s,
            job.belongs_to,
            _last_lines(job.output),
            job.terminal_id,
        )
        try:
            await self._main.record_fact(shown, producer=JOBS_PRODUCER)
        except (BranchClosed, ScopeClosed):
            return  # the session is closing


def _report(job: Job) -> str:
    took = f" after {_seconds(job.duration_s)}" if job.duration_s is not None else ""
    text = f"Background job {job.job_id} (`{job.command}`) {job.outcome()}{took}."
    tail = _last_lines(job.output)
    if tail:
        text += f"\nIts last output:\n{tail}"
    elif job.state is not JobState.INTERRUPTED:
        text += "\nIt printed nothing."
    truncated = job.output_bytes > len(job.output.encode("utf-8"))  # the middle was not kept
    if truncated or tail != job.output.rstrip("\n"):
        text += f'\n(More: job_output with job_id "{job.job_id}".)'
    return text
