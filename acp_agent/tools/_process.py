"""Running a command locally: its own process group, capped output, nothing left behind.

The command starts in a new session (`start_new_session=True`), so it leads a
process group of its own, registered before it runs (`acp_agent.process_groups`:
if the agent dies, its reaper ends the group); every way a run ends — timeout,
cancellation, or the command exiting while children it started still run —
ends with SIGKILL to the whole group, and the process is reaped. Output (stdout and stderr
merged) is captured with a head and a tail kept and the middle counted, so
any amount of output costs bounded memory.

Given a sandbox (a `CommandSandbox`: `acp_agent.sandbox.Sandbox`), the
command runs inside it: bwrap leads the group in the command's place, the
command and everything it starts stay in that group, bwrap's
`--die-with-parent` ends the sandbox whenever bwrap itself is killed, and the
environment loses the variables the sandbox hides before bwrap starts. Without
one (None, the default) it runs as it is. The caller checks `probe_sandbox`
first: without bwrap the start raises `FileNotFoundError`, as for any missing
program (nothing runs unconfined).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

import anyio
import anyio.abc
import attrs

from acp_agent.process_groups import Registration, process_groups
from acp_agent.toolkit import CommandSandbox
from acp_agent.values import Value

__all__ = (
    "DRAIN_AFTER_EXIT_S",
    "LocalExit",
    "OutputCapture",
    "follow_output",
    "kill_group",
    "open_group",
    "run_local",
    "signal_name",
)

#: After the command exits, how long its output pipe may stay open (held by
#: background children) before the group is killed and reading stops.
DRAIN_AFTER_EXIT_S: Final = 1.0
_READ_CHUNK: Final = 65536


@attrs.define
class OutputCapture:
    """Keeps the first `head_limit` and the last `tail_limit` bytes of a stream, counts the rest."""

    head_limit: int
    tail_limit: int
    head: bytearray = attrs.field(factory=bytearray)
    tail: bytearray = attrs.field(factory=bytearray)
    #: Bytes fed in total.
    total: int = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            excess = len(self.tail) - self.tail_limit
            if excess > 0:
                del self.tail[:excess]

    @property
    def omitted(self) -> int:
        """Bytes neither in the head nor in the tail."""
        return self.total - len(self.head) - len(self.tail)

    def render(self) -> str:
        """The kept output as text, with a line saying how much of the middle was left out."""
        head = bytes(self.head).decode("utf-8", "replace")
        tail = bytes(self.tail).decode("utf-8", "replace")
        if not self.omitted:
            return head + tail
        return (
            f"{head}\n[... {self.omitted} bytes of output omitted "
            f"({self.total} in all; the first {len(self.head)} and last {len(self.tail)} "
            f"are shown) ...]\n{tail}"
        )


async def open_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    sandbox: CommandSandbox | None = None,
) -> tuple[anyio.abc.Process, Registration | None]:
    """Start `argv` leading a process group of its own: stdin empty, stdout and stderr merged.

    The group is registered before the command runs; returns the process and its
    registration (None where the process registers no groups), to `release` once the
    group is over. With a `sandbox` the command runs confined to it.
    """
    if sandbox is not None:
        argv = sandbox.wrap(argv, cwd=cwd)
        env = sandbox.environment(os.environ if env is None else env)
    with process_groups().gate(argv, env=env, cwd=cwd) as gate:
        process = await anyio.open_process(
            gate.argv,
            stdin=gate.stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        return process, gate.admit(process.pid)


async def follow_output(
    process: anyio.abc.Process,
    on_output: Callable[[bytes], Awaitable[None]],
    *,
    on_exit: Callable[[], None] | None = None,
) -> None:
    """Pass `process`'s output to `on_output` until it exits and its pipe closes.

    Children it left behind may hold the pipe open: reading stops
    `DRAIN_AFTER_EXIT_S` after the exit (`on_exit` is called at the exit).
    """
    pipe_closed = anyio.Event()

    async def pump() -> None:
        assert process.stdout is not None
        try:
            while True:
                try:
                    chunk = await process.stdout.receive(_READ_CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    return
                await on_output(chunk)
        finally:
            pipe_closed.set()

    async with anyio.create_task_group() as group:
        group.start_soon(pump)
        await process.wait()
        if on_exit is not None:
            on_exit()
        with anyio.move_on_after(DRAIN_AFTER_EXIT_S):
            await pipe_closed.wait()
        group.cancel_scope.cancel()


@attrs.frozen
class LocalExit(Value):
    """How a local command ended."""

    exit_code: int | None
    #: The signal name (e.g. "SIGKILL") when a signal ended it.
    signal: str | None
    timed_out: bool
    #: Why nothing would have ended it had the agent died (see `Registration.unguarded`).
    unguarded: str | None = None


def kill_group(pgid: int) -> None:
    """SIGKILL every process of group `pgid`; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def signal_name(number: int) -> str:
    """`SIGKILL` for 9; `signal 99` for a number with no name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


async def run_local(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout_s: float,
    on_output: Callable[[bytes], Awaitable[None]],
    sandbox: CommandSandbox | None = None,
) -> LocalExit:
    """Run `argv` in its own process group, passing each output chunk to `on_output`.

    Cancelling the caller kills the group (and re-raises); so does the
    timeout, which is reported as `timed_out`. With a `sandbox` it runs confined.
    """
    process, registration = await open_group(argv, cwd=cwd, env=env, sandbox=sandbox)
    pgid = process.pid
    try:
        with anyio.move_on_after(timeout_s) as deadline:
            await follow_output(process, on_output)
        timed_out = deadline.cancelled_caught
    finally:
        with anyio.CancelScope(shield=True):
            kill_group(pgid)
            await process.aclose()
            if registration is not None:
                registration.release()
    unguarded = None if registration is None else registration.unguarded
    code = process.returncode
    if code is not None and code < 0:
        return LocalExit(None, signal_name(-code), timed_out, unguarded)
    return LocalExit(code, None, timed_out, unguarded)
