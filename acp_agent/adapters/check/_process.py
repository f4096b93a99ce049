"""One process of the checked agent: started alone, read in bounded lines, always ended.

The agent starts in a session and process group of its own, so whatever it starts
(a wrapper's child, a server it spawns) can be ended with it: `close()` signals the
whole group, SIGTERM then SIGKILL, and waits a bounded time, never for the pipes to
close (a child that inherited stdout may hold them for its whole life). Its stdout
is read in chunks and split into lines of at most `MAX_LINE_BYTES` (a longer one is
skipped to its newline, counted, never kept); its stderr keeps its last lines only.
Its exit is noticed as soon as the process ends, whoever still holds the pipes.
Those three readers run in the check's task group (`start_soon`), in a scope of
their own that `close()` ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from typing import Any, Final

import anyio

__all__ = ("MAX_LINE_BYTES", "AgentProcess", "StartSoon")

#: Starts a task in the check's task group (its `start_soon`), which waits for it.
StartSoon = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]

logger = logging.getLogger(__name__)

#: The longest stdout line the checker reads (files and images ride in lines).
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
#: How much of the agent's stdin may wait unwritten before it counts as not reading.
MAX_UNWRITTEN_BYTES: Final = 1024 * 1024
#: stderr lines kept, and the characters kept of each.
_STDERR_LINES: Final = 8
_STDERR_CHARS: Final = 200
#: How often the exit is looked for, and how long output written just before it may take.
_POLL_S: Final = 0.02
_EXIT_DRAIN_S: Final = 0.3
#: How long the group gets to end on SIGTERM before SIGKILL.
_TERM_GRACE_S: Final = 0.5
_READ_BYTES: Final = 64 * 1024


class AgentProcess:
    """The agent command running as one process group, with `on_line` fed each stdout line."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        start_soon: StartSoon,
        cwd: str | None = None,
        on_line: Callable[[bytes], None],
        on_oversized: Callable[[int], None],
    ) -> None:
        self.command = list(command)
        self.cwd = cwd
        self._start_soon = start_soon
        self._on_line = on_line
        self._on_oversized = on_oversized
        self._process: asyncio.subprocess.Process | None = None
        #: The scope the readers run in, and set once they have all ended.
        self._reading: anyio.CancelScope | None = None
        self._read = asyncio.Event()
        self.stderr_tail: deque[str] = deque(maxlen=_STDERR_LINES)
        #: Set once the process itself has exited.
        self.exited = asyncio.Event()
        #: Set once nothing more will come: stdout ended, or the process exited (and what
        #: it wrote before had a moment to arrive).
        self.ended = asyncio.Event()
        #: Set once its stdin held more than `MAX_UNWRITTEN_BYTES` unread: nothing more is sent.
        self.stopped_reading = False
        self._closed = False

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.returncode

    async def start(self) -> None:
        """Start the command (`OSError` when it cannot be)."""
        self._process = process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.cwd,
            start_new_session=True,
        )
        self._reading = anyio.CancelScope()
        self._start_soon(partial(self._read_all, process, self._reading))

    async def _read_all(
        self, process: asyncio.subprocess.Process, reading: anyio.CancelScope
    ) -> None:
        """Read stdout and stderr and watch the exit until all three end (or `close`)."""
        assert process.stdout is not None
        assert process.stderr is not None
        try:
            with reading:
                async with anyio.create_task_group() as readers:
                    readers.start_soon(self._read_stdout, process.stdout)
                    readers.start_soon(self._read_stderr, process.stderr)
                    readers.start_soon(self._watch_exit)
        except Exception:
            # The checker's own fault: reported by the rules it leaves undecided.
            logger.debug("reading the agent failed", exc_info=True)
        finally:
            self.ended.set()
            self._read.set()

    def write(self, data: bytes) -> bool:
        """Write `data` to the agent's stdin; False when it cannot take it (gone, or not
        reading what it was sent: nothing more is queued for it then)."""
        process = self._process
        if process is None or process.stdin is None or self.ended.is_set():
            return False
        transport = process.stdin.transport
        if transport.is_closing():
            return False
        if transport.get_write_buffer_size() > MAX_UNWRITTEN_BYTES:
            self.stopped_reading = True
            return False
        process.stdin.write(data)
        return True

    async def end_input(self, bound_s: float) -> float | None:
        """Close the agent's stdin; seconds until it exited, None if not within `bound_s`
        (or if it had exited before)."""
        process = self._process
        if process is None or self.exited.is_set():
            return None
        began = time.monotonic()
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(self.exited.wait(), bound_s)
        except TimeoutError:
            return None
        return time.monotonic() - began

    async def close(self) -> None:
        """End the whole process group (SIGTERM, then SIGKILL) and stop reading it.

        Bounded: it never waits for the pipes, which a stray child may hold open.
        """
        process = self._process
        if process is None or self._closed:
            return
        self._closed = True
        if not self.exited.is_set():
            self._signal_group(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.exited.wait(), _TERM_GRACE_S)
        # Whatever the leader did, what it started may live on in its group.
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.exited.wait(), _TERM_GRACE_S)
        transport = getattr(process, "_transport", None)
        if transport is not None:
            transport.close()
        if self._reading is not None:
            self._reading.cancel()
            with anyio.move_on_after(1.0):
                await self._read.wait()
        self.ended.set()

    def how_it_ended(self) -> str:
        """ "exited with status 3", "killed by SIGKILL", or "still running"."""
        code = self.returncode
        if code is None:
            return "still running"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
            return f"killed by signal {-code}"
        return f"exited with status {code}"

    # --- reading ---------------------------------------------------------------------

    def _signal_group(self, signum: signal.Signals) -> None:
        pid = self.pid
        if pid is None:
            return
        # The group's id is the leader's pid (start_new_session); it outlives the leader
        # while any member lives, and is gone (ESRCH) once none does.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum)

    async def _read_stdout(self, stream: asyncio.StreamReader) -> None:
        try:
            await _split_lines(stream, MAX_LINE_BYTES, self._on_line, self._on_oversized)
        finally:
            self.ended.set()

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        def keep(line: bytes) -> None:
            self.stderr_tail.append(line[:_STDERR_CHARS].decode("utf-8", "replace").rstrip())

        await _split_lines(stream, 4096, keep, lambda size: None)

    async def _watch_exit(self) -> None:
        # Polled: on Python 3.11 `Process.wait()` returns only once every pipe is closed,
        # which a child holding stdout can put off for as long as it lives.
        process = self._process
        assert process is not None
        while process.returncode is None:  # noqa: ASYNC110 (no event to wait on; see above)
            await asyncio.sleep(_POLL_S)
        self.exited.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ended.wait(), _EXIT_DRAIN_S)
        self.ended.set()


async def _split_lines(
    stream: asyncio.StreamReader,
    max_bytes: int,
    on_line: Callable[[bytes], None],
    on_oversized: Callable[[int], None],
) -> None:
    """Feed `on_line` each non-blank line of `stream` (without its line ending) until it
    ends; a line over `max_bytes` is dropped as it comes and only its size reported."""
    pending = bytearray()
    skipping = 0  # bytes of an over-long line dropped so far (0: not in one)
    while chunk := await stream.read(_READ_BYTES):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if skipping:
                on_oversized(skipping + end - start)
                skipping = 0
            else:
                pending += chunk[start:end]
                line = bytes(pending).rstrip(b"\r")
                pending.clear()
                if line.strip():
                    on_line(line)
            start = end + 1
        rest = chunk[start:]
        if skipping:
            skipping += len(rest)
        elif len(pending) + len(rest) > max_bytes:
            skipping = len(pending) + len(rest)
            pending.clear()
        else:
            pending += rest
    if skipping:
        on_oversized(skipping)
    elif bytes(pending).strip():
        on_line(bytes(pending).rstrip(b"\r"))
