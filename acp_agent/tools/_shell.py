"""The `shell` tool: run a command, in the editor's terminal when it offers one.

With client terminals (`terminal/*`) the command runs in a terminal the
editor owns (`_client_terminal`): its output is live there (the call shows the
terminal at once), the tool waits for exit against its timeout, kills on
timeout or cancel, and always releases the terminal. Every other request to
the editor has its own deadline: an editor that does not confirm the start,
the kill or the output in time gets an error result saying what is unknown
(the command may run). Otherwise the command runs locally in its own process
group (see `_process`); its output streams to the editor as Zed's
`_meta.terminal_output` when the client renders that, else as replaced text
content, and a timeout or cancellation kills the whole group.

The model gets the exit status and the output, capped: the first
`HEAD_BYTES` and last `TAIL_BYTES` are kept and the truncation is stated.

With `background` the command becomes a job (`_background`): the call
returns its job id at once, the runtime's `JobHost` owns it from there and
tells the line when it ends. In a client terminal the call embeds the
terminal, so the person watches the job live.

`raw_output`: ``{"command", "cwd", "via": "client"|"local", "sandboxed",
"exit_code", "signal", "timed_out", "output_bytes" (local runs), "truncated",
"terminal_id", "output"}``, and for a sandboxed run ``"kept_in"`` (what the
sandbox kept in, or null), ``"files"`` (what it changed in the roots) and,
for the local run of a command the editor's terminal could not confine,
``"terminal_refused"`` (why). For a local run shown as a terminal the adapter
takes `exit_code` and `signal` from it for `_meta.terminal_exit`. A background
start: ``{"command", "cwd", "via", "sandboxed", "job_id", "terminal_id",
"background": true}``.

Where the call shows a terminal, `output` holds the last lines of the output
(at most `_RAW_TAIL_LINES` lines, `_RAW_TAIL_CHARS` characters). Like
claude-agent-acp and codex-acp, the output reaches each client once: a client
that renders terminals (Zed, Toad) shows the terminal and, since the call has
content, not `rawOutput` (Zed shows it only for a call with no content); one
that embeds terminals it never prints (acpx) prints `rawOutput`'s `output`.
Text content beside the terminal would show it twice wherever terminals render.
A call shown without a terminal carries its output as text content instead.

When the call's context has a sandbox (`ToolContext.sandbox`: the sandboxed
mode confines the call) the command runs in it. Where the editor offers
terminals, in one of them: the command line the editor runs is the sandbox
around `bash -c COMMAND` (`CommandSandbox.in_terminal`), which exits at once,
before the command, where the editor's side cannot start the sandbox; then that
command runs locally in the sandbox instead, its result says so, and the
session's later commands run locally from the start. Without terminals, or
in a branch, it runs locally in the sandbox, and so does a background job
(whose refusal would only show after the turn). Either way it runs inside
`ToolContext.changes.watching()`: the files it changed in the roots are
checkpointed (a rewind takes them back) and named in its result. When it fails
and the sandbox shows in how (`CommandSandbox.kept_in`), the result says what
was kept in, and that the model may run it again with `outside_sandbox`,
which the person is asked about; let out, it runs in the editor's terminal
unwrapped, as in the other modes. `raw_output["sandboxed"]` says whether it
ran confined (the adapter shows it in the call's `_meta`).

Titles: a plain read, list or search says what it reads (`_command_titles`);
any other command is "Run `…`", truncated to `_TITLE_CHARS`.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import attrs

from acp_agent.toolkit import (
    ClientTimedOut,
    CommandFiles,
    CommandSandbox,
    ContentPart,
    Effect,
    JobLimitReached,
    JobProcess,
    PermissionNeed,
    TerminalContent,
    TerminalRefused,
    TextContent,
    ToolContext,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolPresentation,
    ToolResult,
    fenced,
)
from acp_agent.tools._args import optional_int, require_str
from acp_agent.tools._background import ClientJob, LocalJob
from acp_agent.tools._client_terminal import TerminalRun, run_in_terminal
from acp_agent.tools._command_titles import command_title
from acp_agent.tools._common import short
from acp_agent.tools._process import LocalExit, OutputCapture, run_local
from acp_agent.tools._sandboxed_results import (
    files_raw,
    refused_note,
    run_notes,
    sandboxed_in_terminal,
)
from acp_agent.tools._workspace import WorkspacePath, outside_need, resolve_path
from acp_agent.values import Value

logger = logging.getLogger(__name__)

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
#: How often visible text content (no terminal streaming) refreshes.
_REFRESH_S: Final = 0.5
#: The most of a command a title shows: a narrow client truncates a longer title, and the
#: status icon after it with it (the whole command is in `rawInput`).
_TITLE_CHARS: Final = 60
#: What `raw_output["output"]` keeps of the end of the output of a command shown as a
#: terminal (for a client that embeds terminals it never prints).
_RAW_TAIL_LINES: Final = 20
_RAW_TAIL_CHARS: Final = 2000

_DESCRIPTION = """\
Run a shell command (bash -c) and return its exit status and output (stdout and \
stderr together). Runs in the session's working directory unless `cwd` is given. \
Non-interactive: stdin is empty, so never run anything that waits for input. Output \
beyond about 32 KB is cut in the middle (start and end kept). The command is killed, \
with everything it started, after `timeout_s` seconds (default 120, at most 1800) or \
when the turn is cancelled; background processes are killed when it exits. Prefer \
the file tools (read, edit, grep, glob) over cat/sed/grep/find.

Commands may run in a sandbox: the workspace and a temporary folder ($TMPDIR) \
writable, the rest of the file system read-only, no network, credentials hidden. \
When a result says the sandbox kept a command in and the command needs what was \
denied, call it again with `outside_sandbox: true`: the person is asked to let it \
run outside the sandbox. Never ask to leave it for a failure the sandbox did not cause.

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


def _unconfirmed_start(call: _Call, error: ClientTimedOut) -> ToolResult:
    """The result of a command the editor did not confirm starting: it may be running."""
    text = (
        f"Not confirmed: the editor did not confirm starting the command within "
        f"{error.timeout_s:g} s: it may be running in an editor terminal, or not at all. "
        "Check (for example for its effects) before running it again."
    )
    return ToolResult(
        (TextContent(text),),
        text,
        is_error=True,
        raw_output={
            "command": call.command,
            "cwd": str(call.cwd.path),
            "via": "client",
            "error": "editor_timeout",
        },
    )


def _unanswered_result(call: _Call, ran: TerminalRun, error: ClientTimedOut) -> ToolResult:
    """The result when the editor stopped answering about a terminal after its command
    ran (the kill after a timeout, or the output)."""
    status = _status_line(ran.exit_code, ran.signal, ran.timed_out, call.timeout_s)
    if error.request == "terminal/kill":
        status = f"Timed out after {call.timeout_s} s."
        what = "the command may still be running in its terminal"
    else:
        what = "its output is not known; the editor's terminal shows it"
    text = (
        f"{status}\nThe editor did not answer {error.request} within {error.timeout_s:g} s: {what}."
    )
    return ToolResult(
        (TerminalContent(ran.terminal_id), TextContent(text)),
        text,
        is_error=True,
        raw_output={
            "command": call.command,
            "cwd": str(call.cwd.path),
            "via": "client",
            "exit_code": ran.exit_code,
            "signal": ran.signal,
            "timed_out": ran.timed_out,
            "terminal_id": ran.terminal_id,
            "error": "editor_timeout",
        },
    )


def _failed(ran: TerminalRun) -> bool:
    return ran.timed_out or ran.signal is not None or ran.exit_code != 0


@attrs.frozen
class _LocalRun:
    """A local run's end, its output, and the terminal id it streamed as (None: text)."""

    ended: LocalExit
    capture: OutputCapture
    terminal_id: str | None


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


def _raw_tail(output: str) -> str:
    """The end of a command's output for `raw_output["output"]`: its last lines, bounded."""
    lines = output.rstrip("\n").splitlines()
    kept = lines[-_RAW_TAIL_LINES:]
    tail = "\n".join(kept)[-_RAW_TAIL_CHARS:]
    earlier = len(lines) - len(kept)
    return f"[{earlier} earlier lines not shown]\n{tail}" if earlier else tail


def _not_started(exc: JobLimitReached) -> ToolResult:
    """The result of a job the limit refused: what the model can do; for the person,
    how to stop one."""
    text = f"Not started: {exc}; {exc.advice}." if exc.advice else f"Not started: {exc}."
    shown = f"Not started: {exc}. `/jobs` lists them; `/jobs stop <job id>` stops one."
    return ToolResult((TextContent(shown),), text, is_error=True)


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
            "outside_sandbox": {
                "type": "boolean",
                "description": "Run it outside the command sandbox (the person is asked). "
                "Only after the sandbox kept this command in.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    kind=ToolKind.EXECUTE,
)


@attrs.frozen
class _Call(Value):
    command: str
    cwd: WorkspacePath
    timeout_s: int
    background: bool = False
    outside_sandbox: bool = False


@attrs.frozen
class ShellTool(Value):
    """Runs commands through client terminals, or locally in their own process group
    (confined to the call's sandbox when it has one)."""

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
        outside = arguments.get("outside_sandbox", False)
        if not isinstance(outside, bool):
            raise ToolInputError("`outside_sandbox` must be true or false")
        return _Call(command, cwd, timeout_s, background, outside)

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        command = arguments.get("command")
        if not isinstance(command, str) or not command:
            return ToolPresentation(title="Run", kind=ToolKind.EXECUTE)
        if arguments.get("background") is True:
            title = f"Run `{short(command, _TITLE_CHARS)}` in the background"
        else:
            # A plain read, list or search says what it reads; the rest, the command.
            title = command_title(command) or f"Run `{short(command, _TITLE_CHARS)}`"
        if arguments.get("outside_sandbox") is True:
            title += " outside the sandbox"
        return ToolPresentation(title=title, kind=ToolKind.EXECUTE)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        call = self._parse(arguments, roots)
        note = f"In {call.cwd.path}"
        if call.background:
            note += "; it runs in the background, after this turn too, until it ends or is stopped"
        need = PermissionNeed(
            Effect.EXECUTE, call.command, note=note + ".", sandboxable=not call.outside_sandbox
        )
        return outside_need(need, [call.cwd])

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        call = self._parse(arguments, context.roots)
        if not call.cwd.path.is_dir():
            raise ToolInputError(f"`cwd` {call.cwd.display} is not a directory")
        if call.background:
            return await self._start_job(call, context)
        if context.sandbox is not None:
            return await self._run_sandboxed(call, context, context.sandbox)
        if context.client.has_terminals:
            return await self._run_in_client(call, context)
        ran = await self._local_run(call, context, None)
        return self._local_result(call, ran, None)

    async def _start_job(self, call: _Call, context: ToolContext) -> ToolResult:
        jobs = context.jobs
        if jobs is None:
            raise ToolInputError("background jobs are not available here; run it without")
        cwd = str(call.cwd.path)
        try:
            jobs.check_room()
        except JobLimitReached as exc:
            return _not_started(exc)
        terminal: list[str] = []
        unguarded: list[str] = []

        async def spawn() -> JobProcess:
            if context.client.has_terminals and context.sandbox is None:
                job: JobProcess = ClientJob(
                    await context.client.create_terminal(
                        _shell(),
                        ["-c", call.command],
                        env=_NON_INTERACTIVE,
                        cwd=cwd,
                        output_byte_limit=CLIENT_OUTPUT_LIMIT,
                    ),
                    # Checked on as often as a request may take: bounded polls, never idle.
                    poll_s=context.client.request_timeout_s,
                )
                assert job.terminal_id is not None
                terminal.append(job.terminal_id)
                # Embedded at once (before any release): the person watches it live.
                await context.progress.content([TerminalContent(job.terminal_id)])
                return job
            local = await LocalJob.spawn(
                [_shell(), "-c", call.command],
                cwd=call.cwd.path,
                env=_environment(),
                sandbox=context.sandbox,
            )
            if local.unguarded is not None:
                unguarded.append(local.unguarded)
            return local

        try:
            started = await jobs.start(call.command, cwd, spawn)
        except JobLimitReached as exc:
            return _not_started(exc)
        except ClientTimedOut as exc:
            return _unconfirmed_start(call, exc)
        text = (
            f"Started in the background as job {started.job_id}. It runs on while you work; "
            "its end arrives as a notification. `job_output` reads its output so far, "
            "`job_stop` stops it."
        )
        shown = (
            f"Running in the background as job `{started.job_id[:12]}`. Its end shows here "
            "when it ends during this prompt, else at your next one; "
            f"`/jobs stop {started.job_id[:12]}` stops it."
        )
        if unguarded:
            text += "\n" + _unguarded_note(unguarded[0])
            shown += "\n" + _unguarded_note(unguarded[0])
        content: tuple[ContentPart, ...] = (TextContent(shown),)
        if terminal:
            content = (TerminalContent(terminal[0]), TextContent(shown))
        return ToolResult(
            content=content,
            model_text=text,
            raw_output={
                "command": call.command,
                "cwd": cwd,
                "via": "client" if terminal else "local",
                "sandboxed": context.sandbox is not None,
                "job_id": started.job_id,
                "terminal_id": terminal[0] if terminal else None,
                "background": True,
            },
        )

    async def _run_sandboxed(
        self, call: _Call, context: ToolContext, sandbox: CommandSandbox
    ) -> ToolResult:
        """Run the command confined: in the editor's terminal, the sandbox wrapped around
        it, when the editor offers terminals and its side can start the sandbox; else (or
        when that terminal shows it cannot) locally. Its changes in the roots are
        checkpointed either way."""
        launch = (
            sandbox.in_terminal(_shell(), call.command, cwd=call.cwd.path)
            if context.client.has_terminals
            else None
        )
        files: CommandFiles | None = None
        in_terminal: TerminalRun | ToolResult | None = None
        refused: str | None = None
        local: _LocalRun | None = None
        async with contextlib.AsyncExitStack() as stack:
            if context.changes is not None:
                # Confined to the roots, so what it changes there is all it changes in
                # files a rewind can bring back: kept before, recorded after.
                files = await stack.enter_async_context(context.changes.watching())
            if launch is not None:
                try:
                    in_terminal = await self._terminal_run(
                        call, context, launch.command, launch.args
                    )
                except TerminalRefused as exc:
                    # Nothing started there: the sandbox runs it here instead.
                    refused = f"the editor refused to start a terminal: {exc}"
                    launch.refuse(refused)
                if isinstance(in_terminal, TerminalRun) and in_terminal.unanswered is None:
                    refused = launch.refused(in_terminal.output, in_terminal.exit_code)
                    if refused is not None:
                        # The command did not run there: the call shows the local run.
                        await in_terminal.release_now()
            if launch is None or refused is not None:
                local = await self._local_run(call, context, sandbox)
        if local is not None:
            return self._local_result(call, local, sandbox, files, refused)
        assert in_terminal is not None
        if isinstance(in_terminal, ToolResult):  # the editor did not confirm the start
            return sandboxed_in_terminal(in_terminal, files)
        kept_in = None
        if in_terminal.unanswered is None and _failed(in_terminal):
            kept_in = sandbox.kept_in(
                call.command, in_terminal.output, exit_code=in_terminal.exit_code, cwd=call.cwd.path
            )
        result = sandboxed_in_terminal(self._terminal_result(call, in_terminal), files, kept_in)
        return attrs.evolve(result, after_recorded=in_terminal.release_once_shown(context.client))

    async def _local_run(
        self, call: _Call, context: ToolContext, sandbox: CommandSandbox | None
    ) -> _LocalRun:
        """Run the command locally (confined to `sandbox` when given), streaming its output
        to the editor as it comes."""
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
            sandbox=sandbox,
        )
        return _LocalRun(ended, capture, terminal_id if streaming else None)

    def _local_result(
        self,
        call: _Call,
        ran: _LocalRun,
        sandbox: CommandSandbox | None,
        files: CommandFiles | None = None,
        refused: str | None = None,
    ) -> ToolResult:
        """The result of a local run; for a sandboxed one, what it changed and what the
        sandbox kept in, after why it ran locally when the editor's terminal `refused`."""
        ended, terminal_id, cwd = ran.ended, ran.terminal_id, str(call.cwd.path)
        status = _status_line(ended.exit_code, ended.signal, ended.timed_out, call.timeout_s)
        output = ran.capture.render()
        failed = ended.timed_out or ended.signal is not None or ended.exit_code != 0
        kept_in = None
        if sandbox is not None and failed:
            kept_in = sandbox.kept_in(
                call.command, output, exit_code=ended.exit_code, cwd=call.cwd.path
            )
        shown_notes, model_notes = run_notes(files, kept_in)
        if refused is not None:
            shown_notes.insert(0, refused_note(refused))
            model_notes.insert(0, refused_note(refused))
        unguarded = [] if ended.unguarded is None else [_unguarded_note(ended.unguarded)]
        shown_output = fenced(output) if output else "(no output)"
        model_text = "\n".join([status, shown_output, *model_notes, *unguarded])
        # The person reads what the sandbox saw before the output: a client that shows
        # only the start of a long text (acpx) still shows it.
        content: tuple[ContentPart, ...] = (
            (
                TerminalContent(terminal_id, local_cwd=cwd),
                *map(TextContent, [*shown_notes, *unguarded]),
            )
            if terminal_id is not None
            else (TextContent("\n".join([status, *shown_notes, shown_output, *unguarded])),)
        )
        sandboxed: dict[str, Any] = {"sandboxed": sandbox is not None}
        if sandbox is not None:
            sandboxed["kept_in"] = kept_in
            if files is not None:
                sandboxed["files"] = files_raw(files)
            if refused is not None:
                sandboxed["terminal_refused"] = refused
        return ToolResult(
            content=content,
            model_text=model_text,
            is_error=failed,
            raw_output={
                "command": call.command,
                "cwd": cwd,
                "via": "local",
                **sandboxed,
                "exit_code": ended.exit_code,
                "signal": ended.signal,
                "timed_out": ended.timed_out,
                "output_bytes": ran.capture.total,
                "truncated": ran.capture.omitted > 0,
                "terminal_id": terminal_id,
                # Shown as a terminal: its end here too (the text content carries it else).
                **({"output": _raw_tail(output)} if terminal_id is not None else {}),
            },
        )

    async def _run_in_client(self, call: _Call, context: ToolContext) -> ToolResult:
        ran = await self._terminal_run(call, context, _shell(), ["-c", call.command])
        if isinstance(ran, ToolResult):
            return ran
        result = self._terminal_result(call, ran)
        return attrs.evolve(result, after_recorded=ran.release_once_shown(context.client))

    async def _terminal_run(
        self, call: _Call, context: ToolContext, command: str, args: Sequence[str]
    ) -> TerminalRun | ToolResult:
        """`command` with `args` run in an editor's terminal; the error result when the
        editor did not confirm starting it."""
        try:
            return await run_in_terminal(
                context.client,
                context.progress,
                command,
                args,
                env=_NON_INTERACTIVE,
                cwd=str(call.cwd.path),
                timeout_s=call.timeout_s,
                output_byte_limit=CLIENT_OUTPUT_LIMIT,
                head_bytes=HEAD_BYTES,
            )
        except ClientTimedOut as exc:
            return _unconfirmed_start(call, exc)

    def _terminal_result(self, call: _Call, ran: TerminalRun) -> ToolResult:
        """The result of a command run in an editor's terminal (not yet released)."""
        if ran.unanswered is not None:
            return _unanswered_result(call, ran, ran.unanswered)
        capture = OutputCapture(HEAD_BYTES, TAIL_BYTES)
        capture.feed(ran.output.encode("utf-8"))
        text = capture.render()
        if ran.truncated:
            kept = bytes(capture.tail).decode("utf-8", "replace")
            text = (
                f"{ran.head.decode('utf-8', 'replace')}\n[... output omitted: the terminal kept "
                f"only its last {CLIENT_OUTPUT_LIMIT} bytes; the first {len(ran.head)} and last "
                f"{len(capture.tail)} bytes are shown ...]\n{kept}"
            )
        status = _status_line(ran.exit_code, ran.signal, ran.timed_out, call.timeout_s)
        model_text = f"{status}\n{fenced(text) if text else '(no output)'}"
        content: list[ContentPart] = [TerminalContent(ran.terminal_id)]
        if ran.timed_out:
            content.append(TextContent(status))
        return ToolResult(
            content=tuple(content),
            model_text=model_text,
            is_error=_failed(ran),
            raw_output={
                "command": call.command,
                "cwd": str(call.cwd.path),
                "via": "client",
                "sandboxed": False,
                "exit_code": ran.exit_code,
                "signal": ran.signal,
                "timed_out": ran.timed_out,
                "truncated": ran.truncated or capture.omitted > 0,
                "terminal_id": ran.terminal_id,
                "output": _raw_tail(ran.output),
            },
        )
