"""The editor's side of the tools, for tests: a `ClientBridge` over real files and processes.

`EditorBridge` behaves like an editor that advertised `fs/*` and
`terminal/*`: reads return an open buffer's unsaved text when there is one
(`buffers`), else the file on disk; writes go to disk (and the buffer);
terminals run real commands in their own process group, keep at most
`output_byte_limit` bytes (dropping from the start, on a character
boundary, as ACP says), and stay readable after `kill` until `release`.
Every call is logged in `calls`, so tests can check the protocol's rules
(the terminal shown before release, release always called), and every
command line a terminal was asked to run in `launched`. Its terminals run
with this process's environment and `terminal_env` over it (a PATH of the
editor's own, say); with `through_shell` a command line goes through a shell,
each argument quoted, as Zed runs it.

Use it as an async context manager: it owns the tasks that pump terminal
output. `RecordingProgress` records what a running call reports.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import anyio
import attrs
from anyio.abc import Process, TaskGroup

from acp_agent.toolkit import ContentPart, TerminalExit, TerminalOutput, TerminalRefused

__all__ = ("EditorBridge", "EditorTerminal", "RecordingProgress")


@attrs.define
class RecordingProgress:
    """A `ProgressSink` that keeps everything it is told."""

    contents: list[tuple[ContentPart, ...]] = attrs.field(factory=list)
    terminal: list[tuple[str, str]] = attrs.field(factory=list)
    flushes: int = 0

    async def content(self, parts: Sequence[ContentPart]) -> None:
        self.contents.append(tuple(parts))

    async def terminal_output(self, terminal_id: str, data: str) -> None:
        self.terminal.append((terminal_id, data))

    async def flush(self) -> None:
        self.flushes += 1

    def streamed(self) -> str:
        return "".join(data for _, data in self.terminal)


def _trim_to_char_boundary(data: bytearray) -> None:
    """Drop UTF-8 continuation bytes at the start, so the rest decodes from a character start."""
    start = 0
    while start < len(data) and start < 4 and (data[start] & 0xC0) == 0x80:
        start += 1
    del data[:start]


class EditorTerminal:
    """A command in an editor-owned terminal: a real process group, bounded output."""

    def __init__(self, editor: EditorBridge, terminal_id: str, process: Process, limit: int | None):
        self._editor = editor
        self._id = terminal_id
        self.process = process
        self._limit = limit
        self._output = bytearray()
        self._truncated = False
        self._drained = anyio.Event()
        self._exit: TerminalExit | None = None
        self.released = False

    @property
    def terminal_id(self) -> str:
        return self._id

    async def pump(self) -> None:
        assert self.process.stdout is not None
        try:
            async for chunk in self.process.stdout:
                self._output += chunk
                if self._limit is not None and len(self._output) > self._limit:
                    del self._output[: len(self._output) - self._limit]
                    _trim_to_char_boundary(self._output)
                    self._truncated = True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self._drained.set()

    def _check(self, method: str) -> None:
        self._editor.calls.append((method, self._id))
        if self.released:
            raise RuntimeError(f"terminal {self._id} was released")

    async def _settle(self) -> TerminalExit:
        if self._exit is None:
            code = await self.process.wait()
            with anyio.move_on_after(1.0):
                await self._drained.wait()
            self._exit = (
                TerminalExit(signal=signal.Signals(-code).name)
                if code < 0
                else TerminalExit(exit_code=code)
            )
        return self._exit

    async def output(self) -> TerminalOutput:
        self._check("terminal/output")
        exited = None
        if self.process.returncode is not None:
            exited = await self._settle()
        text = bytes(self._output).decode("utf-8", "replace")
        return TerminalOutput(text, self._truncated, exited)

    async def wait_for_exit(self, *, bounded: bool = False) -> TerminalExit:
        self._check("terminal/wait_for_exit")
        return await self._settle()

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    async def kill(self) -> None:
        self._check("terminal/kill")
        self._kill_group()

    async def release(self) -> None:
        self._check("terminal/release")
        self.released = True
        self._kill_group()
        with anyio.CancelScope(shield=True):
            await self.process.wait()


@attrs.define(eq=False)
class EditorBridge:
    """An editor that offers `fs/*` and `terminal/*` (each can be switched off)."""

    can_read_files: bool = True
    can_write_files: bool = True
    has_terminals: bool = True
    streams_terminal_output: bool = False
    #: What the tools take as the bound of each request (this editor always answers).
    request_timeout_s: float = 30.0
    #: How long the editor takes to answer `terminal/create` once the command started.
    create_answer_delay_s: float = 0.0
    #: The terminals' environment over this process's (the editor's own PATH, say).
    terminal_env: dict[str, str] = attrs.field(factory=dict)
    #: Run a command line as Zed does: `sh -c "exec </dev/null; ..."`, each part quoted.
    through_shell: bool = False
    #: Answer `terminal/create` with this error instead (acpx's permission policy, say).
    refuse_terminals: str | None = None
    #: Answer `fs/write_text_file` with an error instead (acpx without --approve-all).
    refuse_writes: bool = False
    #: Every command line a terminal was asked to run (the command, then its arguments).
    launched: list[list[str]] = attrs.field(factory=list)
    #: Open buffers with unsaved text, by absolute path.
    buffers: dict[str, str] = attrs.field(factory=dict)
    #: Every request the tools made, as (method, path or terminal id).
    calls: list[tuple[str, str]] = attrs.field(factory=list)
    terminals: list[EditorTerminal] = attrs.field(factory=list)
    _group: TaskGroup | None = None
    _stack: contextlib.AsyncExitStack | None = None

    async def __aenter__(self) -> EditorBridge:
        self._stack = contextlib.AsyncExitStack()
        self._group = await self._stack.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        for terminal in self.terminals:
            terminal._kill_group()
            with anyio.CancelScope(shield=True):
                await terminal.process.aclose()
        assert self._stack is not None
        return await self._stack.__aexit__(exc_type, exc, tb)

    async def read_text_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        self.calls.append(("fs/read_text_file", path))
        assert os.path.isabs(path), path
        if path in self.buffers:
            text = self.buffers[path]
        else:
            text = (await anyio.Path(path).read_bytes()).decode("utf-8")
        if line is None and limit is None:
            return text
        lines = text.splitlines(keepends=True)
        start = (line or 1) - 1
        return "".join(lines[start : start + limit if limit else None])

    async def updates_sent(self) -> None:
        self.calls.append(("updates_sent", ""))

    async def write_text_file(self, path: str, content: str) -> None:
        self.calls.append(("fs/write_text_file", path))
        assert os.path.isabs(path), path
        if self.refuse_writes:
            raise PermissionError(f"not allowed to write {path}")
        await anyio.Path(path).write_bytes(content.encode("utf-8"))
        if path in self.buffers:
            self.buffers[path] = content

    async def create_terminal(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> Any:
        assert self._group is not None, "use EditorBridge as an async context manager"
        if self.refuse_terminals is not None:
            self.launched.append([command, *args])
            raise TerminalRefused(self.refuse_terminals)
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.calls.append(("terminal/create", terminal_id))
        self.launched.append([command, *args])
        argv = [command, *args]
        if self.through_shell:
            argv = ["/bin/sh", "-c", f"exec </dev/null; {shlex.join(argv)}"]
        process = await anyio.open_process(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env={**os.environ, **self.terminal_env, **(env or {})},
            start_new_session=True,
        )
        terminal = EditorTerminal(self, terminal_id, process, output_byte_limit)
        self.terminals.append(terminal)
        self._group.start_soon(terminal.pump)
        if self.create_answer_delay_s:
            await anyio.sleep(self.create_answer_delay_s)
        return terminal

    def methods(self) -> list[str]:
        """The methods called, in order."""
        return [method for method, _ in self.calls]
