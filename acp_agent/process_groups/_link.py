"""The agent's end of the pipe to its reaper (`_reaper`), started on first use.

`hold` tells the reaper of a group, `let_go` that it is over. Writes never
block the agent: the pipe is non-blocking and each line is far shorter than
the kernel's atomic pipe write, so a line lands whole or not at all. A
reaper that died is replaced, and told again of every group held; if that
fails, or a live reaper does not read (its pipe full: it is left alone, as
closing its pipe would make it kill groups that still run), `hold` says so
and the group relies on its disk note alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

from acp_agent.process_groups._reaper import PROGRAM

__all__ = ("ReaperLink",)

logger = logging.getLogger(__name__)

#: Where `acp_agent` is found (the reaper runs without site-packages).
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class ReaperLink:
    """A reaper process and the pipe to it; see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._pipe: int | None = None
        #: What the reaper was told of each group it holds (sent again to a new reaper).
        self._held: dict[str, bytes] = {}

    @property
    def pid(self) -> int | None:
        """The reaper's pid, once one was started."""
        return None if self._process is None else self._process.pid

    def hold(self, name: str, pgid: int, mark: str, note: Path | None) -> str | None:
        """Give the reaper group `pgid`; returns why it could not, None once it holds it."""
        line = f"+ {name} {pgid} {mark}" + (f" {note}" if note is not None else "") + "\n"
        with self._lock:
            self._held[name] = line.encode()
            problem = self._send(self._held[name])
            if problem is not None:
                del self._held[name]
            return problem

    def let_go(self, name: str) -> None:
        """The group is over: the reaper forgets it."""
        with self._lock:
            if self._held.pop(name, None) is not None:
                self._send(f"- {name}\n".encode(), restart=False)

    def close(self, wait_s: float = 5.0) -> None:
        """Close the pipe: the reaper ends what it still holds, and exits (waited for up
        to `wait_s`; the agent itself never calls this, its exit closes the pipe)."""
        with self._lock:
            process = self._process
            self._drop()
            if process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(wait_s)

    def _send(self, line: bytes, *, restart: bool = True) -> str | None:
        if self._pipe is not None:
            try:
                os.write(self._pipe, line)
                return None
            except BlockingIOError:
                logger.warning("the reaper (pid %s) is not reading", self.pid)
                return "the reaper is not reading"
            except OSError as exc:
                logger.warning("the reaper (pid %s) no longer listens: %s", self.pid, exc)
                self._drop()
        if not restart:
            return None  # a new reaper is told what is held when it starts
        try:
            self._start()
        except OSError as exc:
            logger.warning("could not start the reaper: %s", exc)
            return f"no reaper ({exc.strerror or exc})"
        return None  # `_start` told it of everything held, this line included

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", PROGRAM, _PACKAGE_ROOT],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        self._pipe = write_end
        logger.info("reaper started (pid %d)", self._process.pid)
        try:
            # Blocking, this once: a new reaper reads what is held however much it is.
            told = memoryview(b"".join(self._held.values()))
            while told:
                told = told[os.write(write_end, told) :]
            os.set_blocking(write_end, False)
        except OSError:
            self._drop()
            raise

    def _drop(self) -> None:
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                os.close(self._pipe)
            self._pipe = None
        if self._process is not None:
            with contextlib.suppress(OSError):
                self._process.poll()  # reaps it if it already exited
