"""The `shell` tool: run a command, in the editor's terminal when it offers one.

With client terminals (`terminal/*`) the command runs in a terminal the
editor owns: its output is live there (the call shows the terminal at once),
the tool waits for exit against its timeout, kills on timeout or cancel, and
always releases the terminal. Otherwise the command runs locally in its own
process group (see `_process`); its output streams to the editor as Zed's
`_meta.terminal_output` when the client renders that, else as replaced text
content, and a timeout or cancellation kills the whole group.

The model gets the exit status and the output, capped: the first
`HEAD_BYTES` and last `TAIL_BYTES` are kept and the cut is stated.

With `background` the command becomes a job (`_background`): the call
returns its job id at once, the runtime's `JobHost` owns it from there and
tells the line when it ends. In a client terminal the call embeds the
terminal, so the person watches the job live.

`raw_output`: ``{"command", "cwd", "via": "client"|"local", "exit_code",
"signal", "timed_out", "output_bytes" (local runs), "truncated",
"terminal_id"}``. For a local run shown as a terminal the adapter takes
`exit_code` and `signal` from it for `_meta.terminal_exit`. A background
start: ``{"command", "cwd", "via", "job_id", "terminal_id", "background": true}``.
"""

from __future__ import annotations

import codecs
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import attrs

from acp_agent.capabilities.tool import (
    ClientTerminal,
    ContentPart,
    Effect,
    JobLimitReached,
    JobProcess,
    PermissionNeed,
    TerminalContent,
    TerminalExit,
    TextContent,
    ToolContext,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolPresentation,
    ToolResult,
)
from acp_agent.records import Record
from acp_agent.tools._args import optional_int, require_str
from acp_agent.tools._background import ClientJob, LocalJob
from acp_agent.tools._common import fenced, short
from acp_agent.tools._process import OutputCapture, run_local
from acp_agent.tools._workspace import WorkspacePath, outside_need, resolve_path

__all__ = (
    "CLIENT_OUTPUT_LIMIT",
    "DEFAULT_TIMEOUT_S",
    "DEFINITION",
    "HEAD_BYTES",
    "MAX_TIMEOUT_S",
    "STREAM_LIMIT_BYTES",
    "TAIL_BYTES",
    "ShellTool",
)

DEFAULT_TIMEOUT_S: Final = 120
MAX_TIMEOUT_S: Final = 1800
#: What the model sees of the output: its first and last bytes.
HEAD_BYTES: Final = 8 * 1024
TAIL_BYTES: Final = 24 * 1024
#: What a client terminal keeps (it drops from the beginning beyond this).
CLIENT_OUTPUT_LIMIT: Final = 256 * 1024
#: How much of a local run's output is streamed to the editor; the rest is summarised.
STREAM_LIMIT_BYTES: Final = 1024 * 1024
#: How often visible text content (no terminal streaming) and client polls refresh.
_REFRESH_S: Final = 0.5
#: Bounded waits while cleaning up a client terminal.
_CLEANUP_WAIT_S: Final = 5.0

_DESCRIPTION = """\
Run a shell command (bash -c) and return its exit status and output (stdout and \
stderr together). Runs in the session's working directory unless `cwd` is given. \
Non-interactive: stdin is empty, so never run anything that waits for input. Output \
beyond about 32 KB is cut in the middle (start and end kept). The command is killed, \
with everything it started, after `timeout_s` seconds (default 120, at most 1800) or \
when the turn is cancelled; background processes are killed when it exits. Prefer \
the file tools (read, edit, grep, glob) over cat/sed/grep/find.

With `background: true` the command runs as a background job instead: the call \
returns a job id at once and the command runs on while you work (for test suites, \
builds, dev servers); `timeout_s` does not apply. Its end arrives later as a \
notification; `job_output` reads its output so far, `job_stop` stops it."""


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


#: What every command gets on top of its environment: no pager, no git prompt.
_NON_INTERACTIVE: Final = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


def _environment() -> dict[str, str]:
    return {**os.environ, **_NON_INTERACTIVE}


def _unguarded_note(why: str) -> str:
    """What the person reads of a command nothing would end if the agent were killed."""
    return (
        f"Note: this command could not be registered for cleanup ({why}): if the agent is "
        "killed while it runs, it keeps running."
    )


def _status_line(exit_code: int | None, signal: str | None, timed_out: bool, timeout_s: int) -> str:
    if timed_out:
        return f"Timed out after {timeout_s} s; the command and its children were killed."
    if signal is not None:
        return f"Killed by {signal}."
    if exit_code is None:
        return "Exit status unknown."
    return f"Exit code {exit_code}."


DEFINITION: Final = ToolDefinition(
    name="shell",
    description=_DESCRIPTION,
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line, run by bash -c."},
            "cwd": {
                "type": "string",
                "description": "Directory to run in (default: the working directory).",
            },
            "timeout_s": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT_S,
                "description": f"Seconds before the command is killed (default "
                f"{DEFAULT_TIMEOUT_S}).",
            },
            "background": {
                "type": "boolean",
                "description": "Run it as a background job: returns a job id at once.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    kind=ToolKind.EXECUTE,
)


@attrs.frozen
class _Call(Record):
    command: str
    cwd: WorkspacePath
    timeout_s: int
    background: bool = False


@attrs.frozen
class ShellTool(Record):
    """Runs commands through client terminals, or locally in their own process group."""

    @property
    def definition(self) -> ToolDefinition:
        return DEFINITION

    def _parse(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> _Call:
        command = require_str(arguments, "command")
        cwd = resolve_path(arguments.get("cwd") or ".", roots, name="cwd")
        timeout_s = optional_int(
            arguments, "timeout_s", default=DEFAULT_TIMEOUT_S, minimum=1, maximum=MAX_TIMEOUT_S
        )
        assert timeout_s is not None
        background = arguments.get("background", False)
        if not isinstance(background, bool):
            raise ToolInputError("`background` must be true or false")
        return _Call(command, cwd, timeout_s, background)

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        command = arguments.get("command")
        title = f"Run `{short(command)}`" if isinstance(command, str) and command else "Run"
        if arguments.get("background") is True:
            title += " in the background"
        return ToolPresentation(title=title, kind=ToolKind.EXECUTE)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        call = self._parse(arguments, roots)
        note = f"In {call.cwd.path}"
        if call.background:
            note += "; it runs in the background, after this turn too, until it ends or is stopped"
        return outside_need(
            PermissionNeed(Effect.EXECUTE, call.command, note=note + "."), [call.cwd]
        )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        call = self._parse(arguments, context.roots)
        if not call.cwd.path.is_dir():
            raise ToolInputError(f"`cwd` {call.cwd.display} is not a directory")
        if call.background:
            return await self._start_job(call, context)
        if context.client.has_terminals:
            return await self._run_in_client(call, context)
        return await self._run_locally(call, context)

    async def _start_job(self, call: _Call, context: ToolContext) -> ToolResult:
        jobs = context.jobs
        if jobs is None:
            raise ToolInputError("background jobs are not available here; run it without")
        cwd = str(call.cwd.path)
        try:
            jobs.check_room()
        except JobLimitReached as exc:
            text = f"Not started: {exc}."
            return ToolResult((TextContent(text),), text, is_error=True)
        terminal: list[str] = []
        unguarded: list[str] = []

        async def spawn() -> JobProcess:
            if context.client.has_terminals:
                job: JobProcess = ClientJob(
                    await context.client.create_terminal(
                        _shell(),
                        ["-c", call.command],
                        env=_NON_INTERACTIVE,
                        cwd=cwd,
                        output_byte_limit=CLIENT_OUTPUT_LIMIT,
                    )
                )
                assert job.terminal_id is not None
                terminal.append(job.terminal_id)
                # Embedded at once (before any release): the person watches it live.
                await context.progress.content([TerminalContent(job.terminal_id)])
                return job
            local = await LocalJob.spawn(
                [_shell(), "-c", call.command], cwd=call.cwd.path, env=_environment()
            )
            if local.unguarded is not None:
                unguarded.append(local.unguarded)
            return local

        try:
            started = await jobs.start(call.command, cwd, spawn)
        except JobLimitReached as exc:
            text = f"Not started: {exc}."
            return ToolResult((TextContent(text),), text, is_error=True)
        text = (
            f"Started in the background as job {started.job_id}. It runs on while you work; "
            "its end arrives as a notification. `job_output` reads its output so far, "
            "`job_stop` stops it."
        )
        if unguarded:
            text += "\n" + _unguarded_note(unguarded[0])
        content: tuple[ContentPart, ...] = (TextContent(text),)
        if terminal:
            content = (TerminalContent(terminal[0]), TextContent(text))
        return ToolResult(
            content=content,
            model_text=text,
            raw_output={
                "command": call.command,
                "cwd": cwd,
                "via": "client" if terminal else "local",
                "job_id": started.job_id,
                "terminal_id": terminal[0] if terminal else None,
                "background": True,
            },
        )

    async def _run_locally(self, call: _Call, context: ToolContext) -> ToolResult:
        capture = OutputCapture(HEAD_BYTES, TAIL_BYTES)
        terminal_id = f"local-{context.call_id}"
        streaming = context.client.streams_terminal_output
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        streamed = 0
        shown = OutputCapture(0, 4096)
        last_refresh = anyio.current_time()
        cwd = str(call.cwd.path)
        if streaming:
            await context.progress.content([TerminalContent(terminal_id, local_cwd=cwd)])

        async def on_output(chunk: bytes) -> None:
            nonlocal streamed, last_refresh
            capture.feed(chunk)
            if streaming:
                if streamed >= STREAM_LIMIT_BYTES:
                    return
                streamed += len(chunk)
                text = decoder.decode(chunk)
                if streamed >= STREAM_LIMIT_BYTES:
                    text += (
                        f"\n[acp-agent: more than {STREAM_LIMIT_BYTES} bytes of output; "
                        "the rest is not shown here]\n"
                    )
                if text:
                    await context.progress.terminal_output(terminal_id, text)
                return
            shown.feed(chunk)
            now = anyio.current_time()
            if now - last_refresh >= _REFRESH_S:
                last_refresh = now
                await context.progress.content([TextContent(fenced(shown.render()))])

        ended = await run_local(
            [_shell(), "-c", call.command],
            cwd=call.cwd.path,
            env=_environment(),
            timeout_s=call.timeout_s,
            on_output=on_output,
        )
        status = _status_line(ended.exit_code, ended.signal, ended.timed_out, call.timeout_s)
        output = capture.render()
        model_text = f"{status}\n{fenced(output) if output else '(no output)'}"
        content: tuple[ContentPart, ...] = (
            (TerminalContent(terminal_id, local_cwd=cwd),)
            if streaming
            else (TextContent(model_text),)
        )
        if ended.unguarded is not None:
            note = _unguarded_note(ended.unguarded)
            model_text += f"\n{note}"
            content = (*content[:1], TextContent(note)) if streaming else (TextContent(model_text),)
        return ToolResult(
            content=content,
            model_text=model_text,
            is_error=ended.timed_out or ended.signal is not None or ended.exit_code != 0,
            raw_output={
                "command": call.command,
                "cwd": cwd,
                "via": "local",
                "exit_code": ended.exit_code,
                "signal": ended.signal,
                "timed_out": ended.timed_out,
                "output_bytes": capture.total,
                "truncated": capture.omitted > 0,
                "terminal_id": terminal_id if streaming else None,
            },
        )

    async def _run_in_client(self, call: _Call, context: ToolContext) -> ToolResult:
        terminal = await context.client.create_terminal(
            _shell(),
            ["-c", call.command],
            env=_NON_INTERACTIVE,
            cwd=str(call.cwd.path),
            output_byte_limit=CLIENT_OUTPUT_LIMIT,
        )
        exited: TerminalExit | None = None
        head = b""
        try:
            # Embedded, and sent, before its exit is awaited: the editor shows it live.
            await context.progress.content([TerminalContent(terminal.terminal_id)])
            await context.progress.flush()
            await context.client.updates_sent()
            with anyio.move_on_after(call.timeout_s) as deadline:
                exit_seen = anyio.Event()
                async with anyio.create_task_group() as group:

                    async def keep_head() -> None:
                        # The terminal drops output from the start once over its limit:
                        # remember the start while it is still there. It stops between
                        # requests, never cancelling one in flight.
                        nonlocal head
                        while not exit_seen.is_set():
                            seen = await terminal.output()
                            if seen.truncated:
                                return
                            head = seen.output.encode("utf-8")[:HEAD_BYTES]
                            if seen.exit is not None or len(head) >= HEAD_BYTES:
                                return
                            with anyio.move_on_after(_REFRESH_S):
                                await exit_seen.wait()

                    group.start_soon(keep_head)
                    exited = await terminal.wait_for_exit()
                    exit_seen.set()
            timed_out = deadline.cancelled_caught
            if timed_out:
                await terminal.kill()
                with anyio.move_on_after(_CLEANUP_WAIT_S):
                    exited = await terminal.wait_for_exit()
            final = await terminal.output()
            if final.exit is not None:
                exited = final.exit
            result = self._client_result(
                call, terminal, final.output, final.truncated, head, exited, timed_out
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                if exited is None:
                    with anyio.move_on_after(_CLEANUP_WAIT_S):
                        await terminal.kill()
                with anyio.move_on_after(_CLEANUP_WAIT_S):
                    await terminal.release()
            raise
        ended = exited

        async def release_once_shown() -> None:
            # The result shows the terminal too: release only after it reached the editor.
            await context.client.updates_sent()
            if ended is None:
                with anyio.move_on_after(_CLEANUP_WAIT_S):
                    await terminal.kill()
            with anyio.move_on_after(_CLEANUP_WAIT_S):
                await terminal.release()

        return attrs.evolve(result, after_recorded=release_once_shown)

    def _client_result(
        self,
        call: _Call,
        terminal: ClientTerminal,
        output: str,
        truncated: bool,
        head: bytes,
        exited: TerminalExit | None,
        timed_out: bool,
    ) -> ToolResult:
        exit_code = exited.exit_code if exited else None
        signal = exited.signal if exited else None
        capture = OutputCapture(HEAD_BYTES, TAIL_BYTES)
        capture.feed(output.encode("utf-8"))
        text = capture.render()
        if truncated:
            kept = bytes(capture.tail).decode("utf-8", "replace")
            text = (
                f"{head.decode('utf-8', 'replace')}\n[... output omitted: the terminal kept only "
                f"its last {CLIENT_OUTPUT_LIMIT} bytes; the first {len(head)} and last "
                f"{len(capture.tail)} bytes are shown ...]\n{kept}"
            )
        status = _status_line(exit_code, signal, timed_out, call.timeout_s)
        model_text = f"{status}\n{fenced(text) if text else '(no output)'}"
        content: list[ContentPart] = [TerminalContent(terminal.terminal_id)]
        if timed_out:
            content.append(TextContent(status))
        return ToolResult(
            content=tuple(content),
            model_text=model_text,
            is_error=timed_out or signal is not None or exit_code != 0,
            raw_output={
                "command": call.command,
                "cwd": str(call.cwd.path),
                "via": "client",
                "exit_code": exit_code,
                "signal": signal,
                "timed_out": timed_out,
                "truncated": truncated or capture.omitted > 0,
                "terminal_id": terminal.terminal_id,
            },
        )
