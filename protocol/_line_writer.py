"""Lines out to a file descriptor from a thread of their own: writing never blocks the loop.

`QueuedLineWriter.write` returns at once: what the peer has room for is written
right there, `PIPE_BUF` bytes at a time while the pipe says it has room (such a
write never blocks, and streamed chunks should not wait for another thread to get
the GIL); the rest is queued, and a daemon thread writes the queue in order with
`os.write`. One message is never interleaved with another, and a slow
reader costs the event loop nothing. The queue is bounded by time, not dropped messages: when more
than `max_queued_bytes` wait and the reader has taken nothing for `stall_s`
seconds, the peer is taken as gone. `write` then raises `BrokenPipeError`
(the engine closes the connection) and `on_gone` runs once, so the agent
winds down as on the end of its input. `drain` waits for what is queued to
be written before the process exits.

A reader that closes its end is noticed without a write: a second daemon thread
waits in `poll` on the descriptor (an error or hang-up is reported even when no
event is asked for: a pipe whose reader closed, a socket the peer shut) beside a
wake-up pipe, and takes the peer as gone the moment that happens, so an agent
with nothing to say does not linger for an editor that left.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = ("DEFAULT_STALL_S", "MAX_QUEUED_BYTES", "QueuedLineWriter")

logger = logging.getLogger(__name__)

#: How long a peer may read nothing, with the queue over its bound, before it is gone.
DEFAULT_STALL_S: Final = 30.0
#: How much may wait to be written before a stalled reader counts as gone.
MAX_QUEUED_BYTES: Final = 8 * 1024 * 1024
#: What one write on the caller's thread may be: a pipe with room takes it whole.
_PIPE_BUF: Final = getattr(select, "PIPE_BUF", 512)
#: The most written on the caller's thread, a `_PIPE_BUF` at a time while the pipe has
#: room (a batch of streamed chunks need not wait for the writer thread to get the GIL).
_DIRECT_BYTES: Final = 64 * 1024


class QueuedLineWriter:
    """Write each message and its newline to `fd`, in order, from a writer thread."""

    def __init__(
        self,
        fd: int,
        *,
        max_queued_bytes: int = MAX_QUEUED_BYTES,
        stall_s: float = DEFAULT_STALL_S,
        on_gone: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fd = fd
        self._max_queued_bytes = max_queued_bytes
        self._stall_s = stall_s
        self._on_gone = on_gone
        self._clock = clock
        self._lines: collections.deque[bytes] = collections.deque()
        self._queued_bytes = 0
        self._changed = threading.Condition()
        #: When the reader last took something (or the queue last became non-empty).
        self._progress_at = clock()
        self._writing = False
        self._gone: str | None = None
        self._closed = False
        #: Checks for a stall while the queue is over its bound and nothing else is written.
        self._watch: threading.Timer | None = None
        self._thread = threading.Thread(target=self._run, name="acp-line-writer", daemon=True)
        self._thread.start()
        #: The wake-up pipe of the thread watching for the reader to close its end, open
        #: while it runs; the lock keeps `close()` from writing to it as the thread closes it.
        self._wake_lock = threading.Lock()
        self._wake: tuple[int, int] | None = None
        if hasattr(select, "poll"):
            self._wake = os.pipe()
            threading.Thread(
                target=self._watch_reader, args=(self._wake[0],), name="acp-peer-watch", daemon=True
            ).start()

    @property
    def gone(self) -> bool:
        """Whether the peer was taken as gone (it stopped reading, or the pipe broke)."""
        return self._gone is not None

    def write(self, data: bytes) -> None:
        """Write or queue one message; `BrokenPipeError` once the peer is gone."""
        line = data + b"\n"
        with self._changed:
            if self._gone is not None:
                raise BrokenPipeError(self._gone)
            direct = not self._lines and not self._writing and len(line) <= _DIRECT_BYTES
            if direct:
                self._writing = True  # the writer thread waits; order is kept
            else:
                if not self._lines and not self._writing:
                    self._progress_at = self._clock()
                self._lines.append(line)
                self._queued_bytes += len(line)
                self._changed.notify()
        if direct:
            self._write_now(line)
        elif self._check_stall():
            raise BrokenPipeError(self._gone)

    def _write_now(self, line: bytes) -> None:
        """Write as much of `line` as the peer has room for now; queue what is left."""
        written = 0
        try:
            # Writable means room for `_PIPE_BUF` bytes: each write of at most that many
            # completes without blocking.
            while written < len(line) and select.select([], [self._fd], [], 0)[1]:
                written += os.write(self._fd, line[written : written + _PIPE_BUF])
        except OSError as exc:
            with self._changed:
                self._writing = False
            self._give_up(f"writing failed: {exc}")
            raise BrokenPipeError(self._gone) from None
        with self._changed:
            self._writing = False
            if written < len(line):
                self._lines.appendleft(line[written:])
                self._queued_bytes += len(line) - written
            if written:
                self._progress_at = self._clock()
            elif len(self._lines) == 1:
                self._progress_at = self._clock()  # the wait for the reader starts now
            self._changed.notify_all()

    def _check_stall(self) -> bool:
        """Give up on a peer that read nothing for `stall_s` with the queue over its bound;
        while it is over but not stalled yet, look again when it would be."""
        with self._changed:
            if self._gone is not None or self._queued_bytes <= self._max_queued_bytes:
                return self._gone is not None
            waited = self._clock() - self._progress_at
            queued = self._queued_bytes
            if waited < self._stall_s:
                if self._watch is None:
                    self._watch = threading.Timer(self._stall_s - waited, self._watched)
                    self._watch.daemon = True
                    self._watch.start()
                return False
        self._give_up(f"the peer read nothing for {self._stall_s:g} s with {queued} bytes waiting")
        return True

    def _watched(self) -> None:
        with self._changed:
            self._watch = None
        self._check_stall()

    def drain(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for everything queued to be written; whether it was."""
        deadline = self._clock() + timeout_s
        with self._changed:
            while (self._lines or self._writing) and self._gone is None:
                left = deadline - self._clock()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return not self._lines

    def close(self) -> None:
        """Stop the writer thread once the queue is written (it is a daemon: exit never waits)."""
        with self._changed:
            self._closed = True
            watch, self._watch = self._watch, None
            self._changed.notify_all()
        if watch is not None:
            watch.cancel()
        with self._wake_lock:
            if self._wake is not None:
                with contextlib.suppress(OSError):
                    os.write(self._wake[1], b"x")

    def _watch_reader(self, wake: int) -> None:
        """Wait, writing nothing, until the reader closes its end (the peer is gone then)
        or `close()` is called."""
        try:
            poller = select.poll()
            poller.register(self._fd, 0)  # errors and hang-ups are reported regardless
            poller.register(wake, select.POLLIN)
            while True:
                for fd, events in poller.poll():
                    if fd == wake:
                        return
                    if events & select.POLLNVAL:
                        return  # the descriptor was closed here: nothing left to watch
                    if events & (select.POLLERR | select.POLLHUP):
                        self._give_up("the peer closed its end")
                        return
        finally:
            with self._wake_lock:
                if self._wake is not None:
                    for fd in self._wake:
                        os.close(fd)
                    self._wake = None

    def _give_up(self, why: str) -> None:
        with self._changed:
            if self._gone is not None:
                return
            self._gone = why
            self._lines.clear()
            self._queued_bytes = 0
            self._changed.notify_all()
        logger.warning("The peer stopped reading (%s); closing the connection", why)
        if self._on_gone is not None:
            self._on_gone()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._lines and not self._closed and self._gone is None:
                    self._changed.wait()
                if self._gone is not None or not self._lines:
                    return
                line = self._lines.popleft()
                self._writing = True
            try:
                view = memoryview(line)
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
                    with self._changed:
                        self._progress_at = self._clock()
            except OSError as exc:
                self._give_up(f"writing failed: {exc}")
                return
            finally:
                with self._changed:
                    self._writing = False
                    self._queued_bytes = max(0, self._queued_bytes - len(line))
                    self._changed.notify_all()
