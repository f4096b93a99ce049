"""`acp-agent lsp`: the agent as a language server, a front end of the same runtime.

Any editor with an LSP client reaches the agent here (Helix, Sublime Text, Kate,
Vim, Emacs eglot, Neovim): commands in its palette (`workspace/executeCommand`:
`acp-agent.ask`, `.cancel`, `.status`, `.rewind`, and `.approve` / `.reject` for
proposals waiting), and code actions on a selection or a diagnostic ("Fix this
problem", "Explain this", "Write tests for this function"). Each workspace folder
has one session, resumed when the editor opens the folder again
(`_workspaces`). Turns run in the background of the request that started them;
their steps, reply, edits and questions reach the editor as `_turn`, `_files` and
`_asking` describe. The sessions live in this process's runtime, reached only
through its handle (`_embedded`), or on a running app server, as one of its ACP
clients (`_attached`): the front end drives either through `FolderSession`.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from lsprotocol import types
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path

import acp_agent
from acp_agent.adapters.lsp_front._actions import (
    APPROVE,
    ASK,
    CANCEL,
    COMMANDS,
    REJECT,
    REWIND,
    STATUS,
    ask_actions,
    proposal_actions,
)
from acp_agent.adapters.lsp_front._approvals import Approvals, Decision
from acp_agent.adapters.lsp_front._asking import Asker
from acp_agent.adapters.lsp_front._editor import EditorTraits
from acp_agent.adapters.lsp_front._files import EditorFiles
from acp_agent.adapters.lsp_front._session import FolderSession, RewindFailed, SessionOpener
from acp_agent.adapters.lsp_front._turn import run_turn
from acp_agent.toolkit import DEFAULT_REQUEST_TIMEOUT_S

__all__ = ("COMMANDS", "LspFrontEnd")

logger = logging.getLogger(__name__)


class _Protocol(LanguageServerProtocol):
    """LSP as pygls serves it, but `exit` ends the input loop instead of `sys.exit`: the
    sessions close in the loop, with their turns recorded, before the process ends."""

    #: Called on `exit` (the front end stops serving).
    on_exit: Callable[[], None] | None = None

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Any:
        if self.on_exit is not None:
            self.on_exit()
        yield from ()


class LspFrontEnd:
    """The language server over one runtime (see the module docstring).

    **Parameters:**

    * `sessions`: where the folders' sessions live (`EmbeddedSessions`, `ServerSessions`).
    * `data_dir`: the agent's data folder (the transcripts).
    * `editor_timeout_s`: how long a request to the editor that no person answers waits.
    """

    def __init__(
        self,
        sessions: SessionOpener,
        *,
        data_dir: Path,
        editor_timeout_s: float | None = None,
    ) -> None:
        self._opener = sessions
        self._editor_timeout_s = editor_timeout_s
        self._transcripts = data_dir / "lsp" / "transcripts"
        self._sessions: dict[str, FolderSession] = {}
        self._opening = anyio.Lock()
        self._approvals = Approvals()
        self._traits = EditorTraits()
        self.server = LanguageServer(
            "acp-agent", acp_agent.__version__, protocol_cls=_Protocol, max_workers=2
        )
        self._asker = Asker(self.server, self._traits, self._approvals)
        self._tasks: TaskGroup | None = None
        self._register()

    # --- serving ------------------------------------------------------------------------

    def serve(
        self,
        stdin: Any,
        stdout: Any,
        *,
        on_close: Callable[[], Awaitable[None]],
        on_start: Callable[[TaskGroup], None] = lambda _group: None,
    ) -> None:
        """Serve LSP on `stdin`/`stdout` until the input ends, the editor says `exit`, or
        SIGTERM or SIGHUP comes; then close every session (its running turn recorded as
        interrupted) and `on_close` (the runtime). `on_start` is handed the group the
        runtime runs in, which outlives the serving and is waited for after `on_close`.
        The thread reading the input may still wait on it: the caller ends the process
        (`os._exit`) rather than join it."""
        server = self.server
        server._stop_event = stop = threading.Event()
        server.protocol.set_writer(StdoutWriter(stdout))
        reader = StdinAsyncReader(stdin, server.thread_pool)

        def stop_serving() -> None:
            stop.set()
            if self._tasks is not None:
                self._tasks.cancel_scope.cancel()  # the read loop waits on the input

        assert isinstance(server.protocol, _Protocol)
        server.protocol.on_exit = stop_serving

        async def main() -> None:
            loop = asyncio.get_running_loop()
            # SIGTERM and SIGHUP stop as `exit` does: the sessions close, turns recorded.
            for stop_signal in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(stop_signal, stop_serving)
            async with anyio.create_task_group() as runtime:
                on_start(runtime)
                try:
                    async with anyio.create_task_group() as tasks:
                        self._tasks = tasks
                        await run_async(
                            stop_event=stop,
                            reader=reader,
                            protocol=server.protocol,
                            logger=logger,
                            error_handler=server.report_server_error,
                        )
                        tasks.cancel_scope.cancel()
                finally:
                    with anyio.CancelScope(shield=True):
                        await self.aclose()
                        await on_close()

        try:
            asyncio.run(main())
        finally:
            stop.set()
            server.thread_pool.shutdown(wait=False, cancel_futures=True)

    async def aclose(self) -> None:
        """Close every open session, then what holds them (idempotent)."""
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            self._approvals.reject_all(session.folder)
            await session.close()
        await self._opener.aclose()

    # --- sessions -----------------------------------------------------------------------

    def _folders(self) -> list[str]:
        try:
            workspace = self.server.workspace
        except RuntimeError:
            return []
        folders = [to_fs_path(f.uri) for f in workspace.folders.values()]
        if not folders and workspace.root_path:
            folders = [workspace.root_path]
        return [str(Path(f).resolve()) for f in folders if f]

    def _folder_of(self, target: str | None) -> str:
        """The workspace folder holding `target` (a path or URI; None: the first folder)."""
        folders = self._folders()
        if target is not None:
            path = to_fs_path(target) if "://" in target else target
            if path:
                resolved = Path(path).resolve()
                holding = [f for f in folders if resolved.is_relative_to(f)]
                if holding:
                    return max(holding, key=len)
                if not folders:
                    return str(resolved if resolved.is_dir() else resolved.parent)
        if folders:
            return folders[0]
        raise ValueError("the editor opened no workspace folder, and no file was named")

    async def _session(self, folder: str) -> FolderSession:
        """`folder`'s session: open here, resumed from the last time, or new."""
        async with self._opening:
            known = self._sessions.get(folder)
            if known is not None and known.alive:
                return known
            if known is not None:  # its server went away: opened again, reconnecting
                del self._sessions[folder]
                self._approvals.reject_all(folder)
                await known.close()
            files = EditorFiles(
                self.server,
                self._traits,
                self._asker,
                folder=folder,
                request_timeout_s=self._editor_timeout_s or DEFAULT_REQUEST_TIMEOUT_S,
            )
            try:
                session = await self._opener.open(folder, files, self._asker)
            except ValueError as exc:
                self._say(types.MessageType.Error, f"acp-agent: {exc}")
                raise
            self._sessions[folder] = session
            if session.note:
                self._say(types.MessageType.Warning, session.note)
            logger.info("session %s serves %s", session.id, folder)
            return session

    # --- requests -----------------------------------------------------------------------

    def _register(self) -> None:
        server = self.server

        @server.feature(types.INITIALIZE)
        def initialize(params: types.InitializeParams) -> None:
            self._traits = EditorTraits.of(params.capabilities)
            self._asker = Asker(server, self._traits, self._approvals)

        @server.feature(types.INITIALIZED)
        def initialized(params: types.InitializedParams) -> None:
            if self._tasks is not None:
                self._tasks.start_soon(self._tell_problem)

        @server.feature(
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionOptions(
                code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Refactor]
            ),
        )
        def code_actions(params: types.CodeActionParams) -> list[types.CodeAction]:
            return self._code_actions(params)

        @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
        async def progress_cancelled(params: types.WorkDoneProgressCancelParams) -> None:
            for session in list(self._sessions.values()):
                if session.progress_token == params.token:
                    await self._cancel(session)

        @server.command(ASK)
        async def ask(*arguments: Any) -> dict[str, Any]:
            prompt, target = _prompt_of(arguments)
            session = await self._session(self._folder_of(target))
            self._start(session, prompt)
            return {"sessionId": session.id, "started": True}

        @server.command(CANCEL)
        async def cancel(*arguments: Any) -> dict[str, Any]:
            session = self._sessions.get(self._folder_of(_target_of(arguments)))
            cancelled = 0 if session is None else await self._cancel(session)
            return {"cancelled": cancelled}

        @server.command(STATUS)
        async def status(*arguments: Any) -> dict[str, Any]:
            session = await self._session(self._folder_of(_target_of(arguments)))
            return self._status(session)

        @server.command(REWIND)
        async def rewind(*arguments: Any) -> dict[str, Any]:
            return await self._rewind(arguments)

        @server.command(APPROVE)
        def approve(*arguments: Any) -> dict[str, Any]:
            return self._decide(arguments, allow=True)

        @server.command(REJECT)
        def reject(*arguments: Any) -> dict[str, Any]:
            return self._decide(arguments, allow=False)

    async def _tell_problem(self) -> None:
        """Tell the person at once when no session can be had (no server answers)."""
        problem = await self._opener.problem()
        if problem is not None:
            self._say(types.MessageType.Error, f"acp-agent: {problem}")

    def _start(self, session: FolderSession, prompt: str) -> None:
        if self._tasks is None:
            raise RuntimeError("the server is not serving")
        self._tasks.start_soon(self._turn, session, prompt)

    async def _turn(self, session: FolderSession, prompt: str) -> None:
        # A turn that fails past its own reporting (the editor gone mid-message) must not
        # take the server's other turns down with it: the task group is theirs too.
        try:
            await run_turn(
                self.server, self._traits, session, prompt, transcripts=self._transcripts
            )
        except Exception:
            logger.exception("a turn in %s could not be reported", session.folder)

    async def _cancel(self, session: FolderSession) -> int:
        rejected = self._approvals.reject_all(session.folder)
        cancelled = await session.cancel()
        logger.info("cancelled %d prompt(s), %d proposal(s)", cancelled, rejected)
        return cancelled

    def _status(self, session: FolderSession) -> dict[str, Any]:
        waiting = self._approvals.waiting(session.folder)
        status = {
            "sessionId": session.id,
            "folder": session.folder,
            "title": session.title,
            "model": session.model,
            "mode": session.mode,
            "running": session.running,
            "waitingForYou": [p.question for p in waiting],
            "lastReply": session.last_reply,
        }
        lines = [
            f"acp-agent session {session.id} ({session.title or 'untitled'}) in {session.folder}",
            f"model {session.model}, mode {session.mode}; "
            + ("a turn is running" if session.running else "idle"),
        ]
        lines += [f"waiting for you: {p.question}" for p in waiting]
        self.server.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message="\n".join(lines))
        )
        return status

    async def _rewind(self, arguments: tuple[Any, ...]) -> dict[str, Any]:
        message_id = next(
            (a.get("messageId") for a in arguments if isinstance(a, dict) and a.get("messageId")),
            None,
        )
        session = await self._session(self._folder_of(_target_of(arguments)))
        if message_id is None:
            message_id = await session.last_message()
            if message_id is None:
                self._say(types.MessageType.Warning, "acp-agent: nothing to rewind.")
                return {"rewound": False}
        try:
            outcome = await session.rewind(str(message_id))
        except RewindFailed as exc:
            self._say(types.MessageType.Warning, f"acp-agent: cannot rewind: {exc}")
            return {"rewound": False, "reason": str(exc)}
        shown = (
            f"acp-agent: rewound to before your last message ({len(outcome['restored'])} "
            f"file(s) restored, {len(outcome['removed'])} removed)."
            if outcome.get("rewound")
            else "acp-agent: not rewound; changed since: " + ", ".join(outcome["conflicts"])
        )
        self._say(types.MessageType.Info, shown)
        return outcome

    def _decide(self, arguments: tuple[Any, ...], *, allow: bool) -> dict[str, Any]:
        approval_id = next((a for a in arguments if isinstance(a, str)), None)
        applied = "applied" in arguments[1:]
        if approval_id is None:  # from a palette without arguments: the oldest waiting
            waiting = self._approvals.waiting()
            approval_id = waiting[0].approval_id if waiting else None
        decided = approval_id is not None and self._approvals.decide(
            approval_id, Decision.ALLOW_ONCE if allow else Decision.REJECT, applied=applied
        )
        if not decided:
            self._say(types.MessageType.Warning, "acp-agent: nothing is waiting for you.")
        return {"decided": decided}

    def _say(self, kind: types.MessageType, message: str) -> None:
        self.server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    # --- code actions ---------------------------------------------------------------------

    def _code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        document = self.server.workspace.get_text_document(params.text_document.uri)
        try:
            folder = self._folder_of(document.path)
        except ValueError:
            return []
        return [
            *ask_actions(document, params, folder=folder),
            *proposal_actions(self._approvals.waiting(folder)),
        ]


def _prompt_of(arguments: tuple[Any, ...]) -> tuple[str, str | None]:
    """The prompt and the file or folder it is about, from `acp-agent.ask`'s arguments:
    `[prompt, path?]` or `[{"prompt": ..., "uri": ...}]`."""
    if arguments and isinstance(arguments[0], dict):
        prompt = arguments[0].get("prompt")
        target = arguments[0].get("uri") or arguments[0].get("path")
    else:
        prompt = arguments[0] if arguments else None
        target = arguments[1] if len(arguments) > 1 else None
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("acp-agent.ask needs the prompt as its first argument")
    return prompt, target if isinstance(target, str) else None


def _target_of(arguments: tuple[Any, ...]) -> str | None:
    """The file or folder a command is about: a `uri`/`path` key or a first string."""
    for argument in arguments:
        if isinstance(argument, dict):
            target = argument.get("uri") or argument.get("path")
            if isinstance(target, str):
                return target
        elif isinstance(argument, str):
            return argument
    return None
