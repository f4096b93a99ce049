"""The editor-like test client: permission answers, the editor's `fs/*` and `terminal/*`.

`EditorClient` extends the recording `AcpTestClient` with what an editor does,
configured per test:

- Permission questions (`session/request_permission`) are kept in
  `permission_requests` (`asked` is set at the first) and answered with the next
  of `answers`, an option id. When `answers` is empty, `decide` (if given) names
  an option kind (`allow_once`, `reject_once`, ...) and that option is chosen, or
  `cancelled` answered when there is none of that kind. Otherwise, and for an
  answer of None, the question waits for `session/cancel` (sent with `cancel()`)
  and is then answered `cancelled`, as ACP requires of a client.
- Files and terminals: with no `editor`, `fs/read_text_file` is answered from
  `buffers` (an open buffer's unsaved text wins over the disk) and each path read
  is kept in `reads`. Given an `editor` (a `ClientBridge`, such as
  `tests.tools.editor.EditorBridge`: real files, real process groups),
  `fs/read_text_file`, `fs/write_text_file` and `terminal/*` are answered by it.
- `capabilities()` is what it advertises in `initialize` by default: what its
  `editor` offers (and Zed's `_meta.terminal_output` when it streams), or
  nothing without one. The launcher (`tests.support.running_agent`) takes other
  capabilities per test.
- `new_session`, `prompt`, `prompt_blocks`, `load`, `resume`, `list_sessions`
  and `set_option` send the session requests tests send over and over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from acp_agent.toolkit import ClientBridge, ClientTerminal
from protocol import methods, types
from tests.support.client import AcpTestClient

__all__ = ("Answer", "Decision", "EditorClient", "allow_all", "reject_outside")

#: What a test answers a permission question with: an option id, or None to wait for
#: `session/cancel` and answer `cancelled`.
Answer = str | None

#: Picks the kind of option (`allow_once`, `reject_once`, ...) to answer a question with.
Decision = Callable[[types.RequestPermissionRequest], str]


def allow_all(request: types.RequestPermissionRequest) -> str:
    """Allow every call once."""
    return "allow_once"


def reject_outside(workspace: Path) -> Decision:
    """Reject any call whose locations leave `workspace`; allow the rest once."""

    def decide(request: types.RequestPermissionRequest) -> str:
        for location in request.tool_call.locations or []:
            if not Path(location.path).is_relative_to(workspace):
                return "reject_once"
        return "allow_once"

    return decide


class EditorClient(AcpTestClient):
    """A recording ACP client that answers as an editor would (see the module docstring)."""

    def __init__(
        self,
        *,
        editor: ClientBridge | None = None,
        decide: Decision | None = None,
        unstable: bool = False,
    ) -> None:
        super().__init__(unstable=unstable)
        #: The editor serving `fs/*` and `terminal/*`; None: `buffers` and the disk.
        self.editor = editor
        #: Option ids to answer the next permission questions with, in order.
        self.answers: list[Answer] = []
        #: The option kind to answer with once `answers` is used up (None: wait for cancel).
        self.decide = decide
        #: Every permission question, in order.
        self.permission_requests: list[types.RequestPermissionRequest] = []
        #: Set once the first permission question arrived.
        self.asked = asyncio.Event()
        #: Open buffers with unsaved text, by absolute path (without an `editor`).
        self.buffers: dict[str, str] = {}
        #: The paths read through `fs/read_text_file`, in order (without an `editor`).
        self.reads: list[str] = []
        self._cancel_sent = asyncio.Event()
        self._terminals: dict[str, ClientTerminal] = {}
        self.register(methods.SESSION_REQUEST_PERMISSION, self._answer)
        if editor is None:
            self.register(methods.FS_READ_TEXT_FILE, self._read_buffer)
        else:
            self.register(methods.FS_READ_TEXT_FILE, self._read)
            self.register(methods.FS_WRITE_TEXT_FILE, self._write)
            self.register(methods.TERMINAL_CREATE, self._create)
            self.register(methods.TERMINAL_OUTPUT, self._output)
            self.register(methods.TERMINAL_WAIT_FOR_EXIT, self._wait)
            self.register(methods.TERMINAL_KILL, self._kill)
            self.register(methods.TERMINAL_RELEASE, self._release)

    def capabilities(self) -> types.ClientCapabilities | None:
        """What this client advertises in `initialize`: what its editor offers, or nothing."""
        if self.editor is None:
            return None
        return types.ClientCapabilities(
            fs=types.FileSystemCapabilities(
                read_text_file=self.editor.can_read_files,
                write_text_file=self.editor.can_write_files,
            ),
            terminal=self.editor.has_terminals,
            meta={"terminal_output": True} if self.editor.streams_terminal_output else None,
        )

    def cancel(self, session_id: str) -> None:
        """Send `session/cancel`; pending questions are then answered `cancelled`."""
        self.notify(methods.SESSION_CANCEL, types.CancelNotification(session_id=session_id))
        self._cancel_sent.set()

    async def new_session(self, cwd: Path, mcp_servers: Sequence[types.McpServer] = ()) -> str:
        response = await self.request(
            methods.SESSION_NEW,
            types.NewSessionRequest(cwd=str(cwd), mcp_servers=list(mcp_servers)),
        )
        return str(response.session_id)

    async def prompt(self, session_id: str, text: str = "Go") -> types.PromptResponse:
        return await self.prompt_blocks(session_id, types.TextContent(text=text))

    async def prompt_blocks(
        self, session_id: str, *blocks: types.ContentBlock
    ) -> types.PromptResponse:
        response: types.PromptResponse = await self.request(
            methods.SESSION_PROMPT, types.PromptRequest(session_id=session_id, prompt=list(blocks))
        )
        return response

    async def load(self, session_id: str, cwd: Path) -> types.LoadSessionResponse:
        response: types.LoadSessionResponse = await self.request(
            methods.SESSION_LOAD,
            types.LoadSessionRequest(session_id=session_id, cwd=str(cwd), mcp_servers=[]),
        )
        return response

    async def resume(self, session_id: str, cwd: Path) -> types.ResumeSessionResponse:
        response: types.ResumeSessionResponse = await self.request(
            methods.SESSION_RESUME, types.ResumeSessionRequest(session_id=session_id, cwd=str(cwd))
        )
        return response

    async def list_sessions(
        self, cwd: Path | None = None, cursor: str | None = None
    ) -> types.ListSessionsResponse:
        response: types.ListSessionsResponse = await self.request(
            methods.SESSION_LIST,
            types.ListSessionsRequest(cwd=None if cwd is None else str(cwd), cursor=cursor),
        )
        return response

    async def set_option(
        self, session_id: str, config_id: str, value: str
    ) -> types.SetSessionConfigOptionResponse:
        response: types.SetSessionConfigOptionResponse = await self.request(
            methods.SESSION_SET_CONFIG_OPTION,
            types.SetSessionConfigOptionRequestValueId(
                session_id=session_id, config_id=config_id, value=value
            ),
        )
        return response

    async def _answer(
        self, params: types.RequestPermissionRequest
    ) -> types.RequestPermissionResponse:
        self.permission_requests.append(params)
        self.asked.set()
        if self.answers:
            answer = self.answers.pop(0)
        elif self.decide is not None:
            kind = self.decide(params)
            chosen = [option for option in params.options if option.kind == kind]
            if not chosen:
                return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())
            [option] = chosen  # one option of each kind
            answer = option.option_id
        else:
            answer = None
        if answer is None:
            await self._cancel_sent.wait()
            return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())
        return types.RequestPermissionResponse(
            outcome=types.SelectedPermissionOutcome(option_id=answer)
        )

    async def _read_buffer(self, params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        self.reads.append(params.path)
        if params.path in self.buffers:
            return types.ReadTextFileResponse(content=self.buffers[params.path])
        text = await anyio.Path(params.path).read_text()
        return types.ReadTextFileResponse(content=text)

    def _editor(self) -> ClientBridge:
        assert self.editor is not None
        return self.editor

    async def _read(self, params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        text = await self._editor().read_text_file(
            params.path, line=params.line, limit=params.limit
        )
        return types.ReadTextFileResponse(content=text)

    async def _write(self, params: types.WriteTextFileRequest) -> types.WriteTextFileResponse:
        await self._editor().write_text_file(params.path, params.content)
        return types.WriteTextFileResponse()

    async def _create(self, params: types.CreateTerminalRequest) -> types.CreateTerminalResponse:
        env = {variable.name: variable.value for variable in params.env or []}
        terminal = await self._editor().create_terminal(
            params.command,
            params.args or [],
            env=env,
            cwd=params.cwd,
            output_byte_limit=params.output_byte_limit,
        )
        self._terminals[terminal.terminal_id] = terminal
        return types.CreateTerminalResponse(terminal_id=terminal.terminal_id)

    async def _output(self, params: Any) -> types.TerminalOutputResponse:
        seen = await self._terminals[params.terminal_id].output()
        status = (
            types.TerminalExitStatus(exit_code=seen.exit.exit_code, signal=seen.exit.signal)
            if seen.exit is not None
            else None
        )
        return types.TerminalOutputResponse(
            output=seen.output, truncated=seen.truncated, exit_status=status
        )

    async def _wait(self, params: Any) -> types.WaitForTerminalExitResponse:
        ended = await self._terminals[params.terminal_id].wait_for_exit()
        return types.WaitForTerminalExitResponse(exit_code=ended.exit_code, signal=ended.signal)

    async def _kill(self, params: Any) -> types.KillTerminalResponse:
        await self._terminals[params.terminal_id].kill()
        return types.KillTerminalResponse()

    async def _release(self, params: Any) -> types.ReleaseTerminalResponse:
        await self._terminals[params.terminal_id].release()
        return types.ReleaseTerminalResponse()
