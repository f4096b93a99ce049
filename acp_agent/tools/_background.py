"""A command running in the background, as `shell` hands it to the runtime: a `JobProcess`.

`LocalJob` runs it in a process group of its own (`start_new_session`), keeps
the head and tail of its output in memory (`OutputCapture`), and ends the
whole group however the job ends. `ClientJob` runs it in a terminal the
editor owns (so the person watches it live where the job's call embeds it),
checks on it with bounded `terminal/output` polls while it runs, and releases
the terminal when the job ends. Either is stopped with a polite signal first:
SIGTERM, then SIGKILL after `STOP_GRACE_S`.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import anyio
import anyio.abc

from acp_agent.process_groups import Registration
from acp_agent.process_marks import start_mark
from acp_agent.toolkit import (
    ClientTerminal,
    CommandSandbox,
    JobExit,
    JobOutput,
    TerminalExit,
    TerminalOutput,
)
from acp_agent.tools._process import (
    OutputCapture,
    follow_output,
    kill_group,
    open_group,
    signal_name,
)

__all__ = (
    "DEFAULT_POLL_S",
    "JOB_HEAD_BYTES",
    "JOB_TAIL_BYTES",
    "STOP_GRACE_S",
    "ClientJob",
    "LocalJob",
)

#: What a job keeps of its output: its first and last bytes.
JOB_HEAD_BYTES: Final = 8 * 1024
JOB_TAIL_BYTES: Final = 24 * 1024
#: Between SIGTERM and SIGKILL when a job is stopped.
STOP_GRACE_S: Final = 3.0
_CLEANUP_WAIT_S: Final = 5.0
#: How often a job in an editor terminal is checked on, unless told otherwise.
DEFAULT_POLL_S: Final = 30.0


class LocalJob:
    """A background command in a local process group of its own."""

    via = "local"
    terminal_id = None

    def __init__(self, process: anyio.abc.Process, registration: Registration | None) -> None:
        self._process = process
        self._registration = registration
        #: Why nothing would end it had the agent died (see `Registration.unguarded`).
        self.unguarded = None if registration is None else registration.unguarded
        self.pgid: int | None = process.pid
        self.start_mark: str | None = start_mark(process.pid)
        self._capture = OutputCapture(JOB_HEAD_BYTES, JOB_TAIL_BYTES)
        self._exited = anyio.Event()
        self._released = False

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        sandbox: CommandSandbox | None = None,
    ) -> LocalJob:
        """Start `argv` in a group of its own (confined to `sandbox`, when given)."""
        return cls(*await open_group(argv, cwd=cwd, env=env, sandbox=sandbox))

    async def wait(self) -> JobExit:
        process = self._process

        async def keep(chunk: bytes) -> None:
            self._capture.feed(chunk)

        try:
            await follow_output(process, keep, on_exit=self._exited.set)
        finally:
            with anyio.CancelScope(shield=True):
                await self.release()
        code = process.returncode
        if code is not None and code < 0:
            return JobExit(None, signal_name(-code))
        return JobExit(code, None)

    async def output(self) -> JobOutput:
        return JobOutput(self._capture.render(), self._capture.total)

    async def stop(self) -> None:
        if self.pgid is None or self._exited.is_set():
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signal.SIGTERM)
        with anyio.move_on_after(STOP_GRACE_S):
            await self._exited.wait()
        kill_group(self.pgid)

    async def release(self) -> None:
        if self._released:
            return
        self._released = True
        if self.pgid is not None:
            kill_group(self.pgid)
        with anyio.CancelScope(shield=True):
            await self._process.aclose()
        if self._registration is not None:
            self._registration.release()


class ClientJob:
    """A background command in a terminal the editor owns.

    Its exit is awaited without a deadline (jobs run for hours), while every
    `poll_s` a `terminal/output` (bounded, as every other request to the editor)
    checks that the editor still follows it: an editor that stops answering makes
    the job lost (`ClientTimedOut` out of `wait`), and an exit the output shows
    ends the job even if the answer to `terminal/wait_for_exit` never comes.
    """

    via = "client"
    pgid = None
    start_mark = None

    def __init__(self, terminal: ClientTerminal, *, poll_s: float = DEFAULT_POLL_S) -> None:
        self._terminal = terminal
        self._poll_s = poll_s
        self._exited = False
        self._released = False
        self._last = JobOutput("", 0)

    @property
    def terminal_id(self) -> str:
        return self._terminal.terminal_id

    async def wait(self) -> JobExit:
        try:
            ended = await self._exit()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.release()
            raise
        self._exited = True
        return JobExit(ended.exit_code, ended.signal)

    async def _exit(self) -> TerminalExit:
        """The command's exit: the editor's answer, or what a liveness poll saw first.

        Raises what ended the following (the editor no longer answering, an error it
        answered with), as it is.
        """
        ended: list[TerminalExit] = []
        failed: list[Exception] = []
        async with anyio.create_task_group() as group:

            async def answered() -> None:
                try:
                    ended.append(await self._terminal.wait_for_exit())
                except Exception as exc:
                    failed.append(exc)
                group.cancel_scope.cancel()

            group.start_soon(answered)
            while not ended and not failed:
                await anyio.sleep(self._poll_s)
                try:
                    seen = await self._read()
                except Exception as exc:  # ClientTimedOut: the editor no longer answers
                    failed.append(exc)
                    break
                if seen.exit is not None:
                    ended.append(seen.exit)
            group.cancel_scope.cancel()
        if ended:
            return ended[0]
        raise failed[0]

    async def output(self) -> JobOutput:
        if self._released:
            return self._last  # the terminal is gone: what was seen last
        await self._read()
        return self._last

    async def _read(self) -> TerminalOutput:
        """The terminal's output now, kept as the job's last seen output."""
        seen = await self._terminal.output()
        capture = OutputCapture(JOB_HEAD_BYTES, JOB_TAIL_BYTES)
        capture.feed(seen.output.encode("utf-8"))
        text = capture.render()
        if seen.truncated:
            text = f"[... the terminal kept only the end of the output ...]\n{text}"
        self._last = JobOutput(text, capture.total)
        return seen

    async def stop(self) -> None:
        # A client terminal has no gentler way: `terminal/kill` ends the command.
        if not self._exited:
            await self._terminal.kill()

    async def release(self) -> None:
        if self._released:
            return
        with anyio.CancelScope(shield=True):
            # Each step bounded, and its failure only logged: the terminal is given up.
            with anyio.move_on_after(_CLEANUP_WAIT_S), contextlib.suppress(Exception):
                await self.output()
            self._released = True
            if not self._exited:
                with anyio.move_on_after(_CLEANUP_WAIT_S), contextlib.suppress(Exception):
                    await self._terminal.kill()
            with anyio.move_on_after(_CLEANUP_WAIT_S), contextlib.suppress(Exception):
                await self._terminal.release()
