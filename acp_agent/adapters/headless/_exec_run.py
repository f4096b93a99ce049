"""One `acp-agent exec` run, once its agent is starting: the session, the turn, and what
is reported (`_exec` parses the command line and starts the agent first).

The agent runs as a child process serving ACP (`AgentProcess`), so a run sees exactly
what an editor gets; with `--connect` that child is the bridge to the app server, whose
runtime runs the turn. The policy answers its permission questions (`_policy`); what is
written is described in `_report`. With no model to answer, a session the run created
is deleted again: nothing is stored. Progress on stderr names each tool call by its
title (`_progress`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import anyio

from acp_agent.adapters.headless._agent_process import AgentProcess, HeldSession, held_by
from acp_agent.adapters.headless._exec import (
    EXIT_FAILED,
    EXIT_HELD,
    EXIT_INTERRUPTED,
    EXIT_READER_GONE,
    EXIT_REFUSED,
    EXIT_USAGE,
    UsageError,
)
from acp_agent.adapters.headless._policy import Approve, decide, option_for
from acp_agent.adapters.headless._progress import ToolProgress
from acp_agent.adapters.headless._report import Reporter
from acp_agent.adapters.headless._transcript import Transcript
from protocol import methods, types
from protocol.errors import AcpError, InvalidParams, PeerError

__all__ = ("ExecRun",)

#: Stop reasons that end a turn as asked (the rest, and errors, are failures).
_ENDED: Final = frozenset({"end_turn", "max_tokens", "max_turn_requests"})

#: How long a cancelled turn gets to answer before the agent is stopped anyway.
_CANCEL_GRACE_S: Final = 10.0

#: How long an agent that closed the connection gets to exit and finish its stderr.
_EXIT_GRACE_S: Final = 5.0


class ExecRun:
    """One `exec` run: the agent (`process`, started by `_exec`), its session, the turn
    and what is reported."""

    def __init__(
        self,
        args: argparse.Namespace,
        prompt: str,
        roots: list[Path],
        reporter: Reporter,
        process: subprocess.Popen[bytes],
    ) -> None:
        self.args = args
        self.approve = Approve(args.approve)
        self.prompt = prompt
        self.roots = roots
        self.reporter = reporter
        self.session_id: str | None = None
        self.transcript = Transcript()
        self.tools = ToolProgress(reporter)
        #: This run created the session (not `--resume`, `--continue`).
        self.created = False
        #: Updates that came before the `session` line was printed (the agent sends a
        #: session's commands right after its answer, which can be read first): they
        #: follow that line, which the JSON output promises is first.
        self._early: list[tuple[str, dict[str, Any]]] | None = []
        self.refusals = 0
        #: The last `usage_update`'s context and cost, then the turn's and the session's
        #: usage from the answer; None while the provider reported none.
        self.usage: dict[str, Any] | None = None
        self.agent = AgentProcess(on_update=self._update, answer=self._answer)
        self._process = process

    async def run(self) -> int:
        status, stop_reason, message_id, error = EXIT_FAILED, None, None, None
        #: The agent's own stderr already said what went wrong.
        told = False
        # The connection owns the tasks reading the agent; leaving it stops the agent.
        async with self.agent:
            try:
                try:
                    await self.agent.start(self._process)
                    await self._open_session()
                    if self.reporter.reader_gone:
                        raise _Interrupted  # no one would read the turn: it never starts
                    stop_reason, message_id, error = await self._turn()
                    if error is not None and error.get("kind") == "not_configured":
                        await self._forget_session()
                except _Interrupted:
                    status = EXIT_INTERRUPTED
                    stop_reason = "cancelled"
                else:
                    status = self._status(stop_reason, error)
                    if error is None and status == EXIT_FAILED:
                        self.reporter.warn(f"the turn ended with {stop_reason}")
            except UsageError as exc:
                status, error = EXIT_USAGE, {"kind": "usage", "message": str(exc)}
                # A session made for a run refused before its prompt (`--model bogus`)
                # is not kept: a later `--continue` would pick it up, empty.
                await self._forget_session()
            except HeldSession as exc:
                status, error = EXIT_HELD, {"kind": "held", "message": str(exc), "pid": exc.pid}
            except AcpError as exc:
                status, error = EXIT_FAILED, {"kind": "agent", "message": exc.message}
            except (PeerError, OSError) as exc:
                status, error = await self._agent_ended(exc)
                told = bool(self.agent.stderr_tail)
            finally:
                with contextlib.suppress(Exception):
                    await self.agent.stop(timeout_s=5.0)
        if self.reporter.reader_gone:
            return EXIT_READER_GONE  # the turn was cancelled for it: quietly
        if error is not None and status != EXIT_INTERRUPTED and not told:
            self.reporter.warn(str(error["message"]))
        if status == EXIT_INTERRUPTED:
            self.reporter.warn("interrupted; the turn was cancelled")
        if status in (0, EXIT_REFUSED):
            self.reporter.text(self.transcript.final_message())
        self.reporter.line(
            "result",
            sessionId=self.session_id,
            stopReason=stop_reason,
            exitCode=status,
            messageId=message_id,
            usage=self.usage,
            error=error,
        )
        # The answer, or the result, met a closed pipe: the turn had ended and is kept.
        return EXIT_READER_GONE if self.reporter.reader_gone else status

    async def _agent_ended(self, exc: Exception) -> tuple[int, dict[str, Any]]:
        """The agent closed the connection before answering: its status and error.

        It gets a moment to exit and to finish its stderr, which is passed on (it says
        why, as "no server listens on ..." or "cannot read script ..."); its last line is
        the result's message. An agent that exited 2 refused its command line (a bad
        `--script`): a usage error here too, as the agent said at start-up."""
        with anyio.move_on_after(_EXIT_GRACE_S):
            await self.agent.wait_ended()
        if self.agent.stderr_tail:
            sys.stderr.write("\n".join(self.agent.stderr_tail) + "\n")
        said = [line for line in self.agent.stderr_tail if line.strip()]
        message = said[-1].removeprefix("acp-agent: ") if said else str(exc)
        process = self.agent.process
        if process is not None and process.returncode == EXIT_USAGE:
            return EXIT_USAGE, {"kind": "usage", "message": message}
        return EXIT_FAILED, {"kind": "agent_exited", "message": message}

    def _status(self, stop_reason: str | None, error: dict[str, Any] | None) -> int:
        if error is not None or stop_reason not in _ENDED:
            return EXIT_FAILED
        return EXIT_REFUSED if self.refusals else 0

    async def _open_session(self) -> None:
        resume_id = self.args.resume
        if self.args.continue_last:
            resume_id = await self._last_session(str(self.roots[0]))
        elif resume_id is not None:
            await self._use_workspace_of(resume_id)
        cwd, *more = (str(root) for root in self.roots)
        extra = more or None
        if resume_id is not None:
            try:
                resumed = await self.agent.request(
                    methods.SESSION_RESUME,
                    types.ResumeSessionRequest(
                        session_id=resume_id,
                        cwd=cwd,
                        mcp_servers=[],
                        additional_directories=extra,
                    ),
                )
            except AcpError as exc:
                held = held_by(exc, resume_id)
                if held is not None:
                    raise held from None
                if exc.code in (InvalidParams.CODE, -32002):
                    raise UsageError(f"cannot resume {resume_id}: {exc.message}") from None
                raise
            self.session_id = resume_id
            options = resumed.config_options
        else:
            created = await self.agent.request(
                methods.SESSION_NEW,
                types.NewSessionRequest(cwd=cwd, mcp_servers=[], additional_directories=extra),
            )
            self.session_id = str(created.session_id)
            self.created = True
            options = created.config_options
        self.reporter.line(
            "session",
            sessionId=self.session_id,
            cwd=cwd,
            additionalDirectories=more,
            resumed=resume_id is not None,
        )
        early, self._early = self._early or [], None
        for session_id, update in early:
            self._update(session_id, update)
        await self._configure(options or [])

    async def _use_workspace_of(self, session_id: str) -> None:
        """Work in the workspace `session_id` was created in. It is fixed with the session
        (the agent runs its tools there, whatever `cwd` a resume sends), so an explicit
        `--cwd` naming another folder is refused before anything runs, and without one
        the session's workspace replaces the current folder, for the policy's roots and
        the `session` line alike."""
        info = await self.agent.stored_session(session_id)
        if info is None:
            raise UsageError(f"cannot resume {session_id}: no such session")
        # On a thread (anyio.Path): the disk may be slow, the loop reads the agent.
        workspace = Path(await anyio.Path(info.cwd).resolve())
        if self.args.cwd is not None:
            if workspace != self.roots[0]:
                raise UsageError(
                    f"session {session_id} works in {workspace}, not in {self.roots[0]}: "
                    "a session's workspace is fixed when it is created (leave out --cwd "
                    "to resume it there)"
                )
            return
        if not await anyio.Path(workspace).is_dir():
            raise UsageError(f"cannot resume {session_id}: its workspace {workspace} is gone")
        self.roots[0] = workspace

    async def _forget_session(self) -> None:
        """No model could answer, or the run was refused: a session this run created is
        deleted, so a run that could not prompt leaves nothing stored (the result names
        no session)."""
        if not self.created or self.session_id is None:
            return
        with contextlib.suppress(AcpError, PeerError):
            await self.agent.request(
                methods.SESSION_DELETE, types.DeleteSessionRequest(session_id=self.session_id)
            )
            self.session_id = None

    async def _last_session(self, cwd: str) -> str:
        listed = await self.agent.request(methods.SESSION_LIST, types.ListSessionsRequest(cwd=cwd))
        if not listed.sessions:
            raise UsageError(f"no earlier session in {cwd} to continue")
        return str(listed.sessions[0].session_id)

    async def _configure(self, options: Sequence[Any]) -> None:
        assert self.session_id is not None
        try:
            if self.args.mode is not None:
                await self.agent.request(
                    methods.SESSION_SET_MODE,
                    types.SetSessionModeRequest(session_id=self.session_id, mode_id=self.args.mode),
                )
            if self.args.model is not None:
                option = next((o for o in options if str(o.id) == "model"), None)
                if option is None:
                    raise UsageError("this agent offers no model choice")
                await self.agent.request(
                    methods.SESSION_SET_CONFIG_OPTION,
                    types.SetSessionConfigOptionRequestValueId(
                        session_id=self.session_id, config_id="model", value=self.args.model
                    ),
                )
        except InvalidParams as exc:
            raise UsageError(exc.message) from None

    async def _turn(self) -> tuple[str | None, str | None, dict[str, Any] | None]:
        assert self.session_id is not None
        loop = asyncio.get_running_loop()
        answered = asyncio.Event()
        #: Set by the answer or by Ctrl-C, whichever comes first.
        settled = asyncio.Event()
        interrupted = False

        def interrupt() -> None:
            nonlocal interrupted
            interrupted = True
            settled.set()

        response: list[types.PromptResponse] = []
        failed: list[Exception] = []
        request = types.PromptRequest(
            session_id=self.session_id, prompt=[types.TextContent(text=self.prompt)]
        )

        async def ask() -> None:
            try:
                response.append(await self.agent.request(methods.SESSION_PROMPT, request))
            except Exception as exc:
                failed.append(exc)  # raised below, as the request raised it
            finally:
                answered.set()
                settled.set()

        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, interrupt)
        # A reader of stdout that went away cancels the turn as Ctrl-C does: what the
        # turn would still say has nowhere to go.
        self.reporter.on_reader_gone = interrupt
        try:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(ask)
                await settled.wait()
                if interrupted:
                    await self._cancel(answered)
                    task_group.cancel_scope.cancel()
        finally:
            self.reporter.on_reader_gone = None
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
        if interrupted:
            raise _Interrupted
        if failed:
            raise failed[0]
        ours = (response[0].meta or {}).get("acp-agent") or {}
        error = ours.get("error") if isinstance(ours, dict) else None
        message_id = ours.get("messageId") if isinstance(ours, dict) else None
        used = ours.get("usage") if isinstance(ours, dict) else None
        if self.usage is not None and isinstance(used, dict):
            self.usage.update({key: used.get(key) for key in ("turn", "session")})
        return response[0].stop_reason.value, message_id, error

    async def _cancel(self, answered: asyncio.Event) -> None:
        """Send `session/cancel` and give the turn a moment to answer `cancelled`."""
        assert self.session_id is not None
        self.reporter.progress("cancelling the turn…")
        with contextlib.suppress(PeerError):
            self.agent.notify(
                methods.SESSION_CANCEL, types.CancelNotification(session_id=self.session_id)
            )
        with anyio.move_on_after(_CANCEL_GRACE_S):
            await answered.wait()

    def _update(self, session_id: str, update: dict[str, Any]) -> None:
        if self._early is not None:
            self._early.append((session_id, update))
            return
        self.reporter.line("update", sessionId=session_id, update=update)
        if session_id != self.session_id:
            return  # a branch's own session (subagents): in the JSON only
        self.transcript.add(update)
        self.tools.update(update)
        if update.get("sessionUpdate") == "usage_update":
            self.usage = {key: update.get(key) for key in ("used", "size", "cost")}

    async def _answer(
        self, request: types.RequestPermissionRequest
    ) -> types.RequestPermissionResponse:
        decision = decide(request, self.approve, self.roots)
        option = option_for(request, decision.allowed)
        title = request.tool_call.title or str(request.tool_call.tool_call_id)
        verdict = "allowed" if decision.allowed and option is not None else "refused"
        if verdict == "refused":
            self.refusals += 1
            self.reporter.warn(f"refused: {title} ({decision.reason})")
        else:
            self.reporter.progress(f"allowed: {title} ({decision.reason})")
        kind = request.tool_call.kind
        self.reporter.line(
            "permission",
            sessionId=str(request.session_id),
            toolCallId=str(request.tool_call.tool_call_id),
            title=title,
            kind=kind.value if kind is not None else None,
            decision=verdict,
            reason=decision.reason,
        )
        if option is None:
            return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())
        return types.RequestPermissionResponse(
            outcome=types.SelectedPermissionOutcome(option_id=option)
        )


class _Interrupted(Exception):
    """Ctrl-C: the turn was cancelled."""
