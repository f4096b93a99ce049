"""An agent child process as a `ClientConnection` talks to it: its pipes as asyncio
streams, its exit awaitable.

`asyncio.create_subprocess_exec` gives that for a process the loop starts. A client
that starts its agent before it has a loop (`subprocess.Popen`, as soon as it knows
the command line, so the agent starts up beside the client's own imports) hands
the process over with `adopt`: the same face, over the same pipes.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import threading
from typing import Protocol

from protocol._ndjson import MAX_CLIENT_LINE_BYTES

__all__ = ("AdoptedChild", "ChildProcess", "adopt")


class ChildProcess(Protocol):
    """What a client needs of its agent's process (`asyncio.subprocess.Process` has it)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    stdin: asyncio.StreamWriter | None
    stdout: asyncio.StreamReader | None
    stderr: asyncio.StreamReader | None

    async def wait(self) -> int: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


class AdoptedChild:
    """A process started with `subprocess.Popen` (three pipes), seen as a `ChildProcess`
    in the running loop: made by `adopt`."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
    ) -> None:
        self._popen = popen
        self.stdin: asyncio.StreamWriter | None = stdin
        self.stdout: asyncio.StreamReader | None = stdout
        self.stderr: asyncio.StreamReader | None = stderr
        loop = asyncio.get_running_loop()
        self._exited: asyncio.Future[int] = loop.create_future()
        # A daemon thread waits for the exit: one that never came (a process stop()
        # was not reached for) keeps neither the loop's close nor the interpreter's
        # exit waiting, as the default executor's thread would.
        threading.Thread(
            target=self._wait_exit, args=(loop,), name=f"agent {popen.pid} exit", daemon=True
        ).start()

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        """Wait for the process to exit; its status."""
        return await asyncio.shield(self._exited)

    def terminate(self) -> None:
        if self._popen.returncode is None:
            self._popen.terminate()

    def kill(self) -> None:
        if self._popen.returncode is None:
            self._popen.kill()

    def _wait_exit(self, loop: asyncio.AbstractEventLoop) -> None:
        status = self._popen.wait()
        # A closed loop raises: nobody waits any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._settle, status)

    def _settle(self, status: int) -> None:
        if not self._exited.done():
            self._exited.set_result(status)


async def adopt(popen: subprocess.Popen[bytes]) -> AdoptedChild:
    """`popen`, started with stdin, stdout and stderr pipes, as a `ChildProcess` of the
    running loop; its output is read in lines of up to `MAX_CLIENT_LINE_BYTES`, as
    `create_subprocess_exec(limit=...)` reads a process the loop starts."""
    if popen.stdin is None or popen.stdout is None or popen.stderr is None:
        raise ValueError("the agent process was started without pipes")
    loop = asyncio.get_running_loop()
    stdout = asyncio.StreamReader(limit=MAX_CLIENT_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout), popen.stdout)
    stderr = asyncio.StreamReader(limit=MAX_CLIENT_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stderr), popen.stderr)
    transport, flow = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, popen.stdin)
    stdin = asyncio.StreamWriter(transport, flow, None, loop)
    return AdoptedChild(popen, stdin, stdout, stderr)
