"""An ACP test client that is also an editor: `fs/*`, `terminal/*` and permission answers.

`EditorAcpClient` extends the recording `AcpTestClient`. Given an
`EditorBridge` (real files, real process groups) it answers the agent's
`fs/read_text_file`, `fs/write_text_file` and `terminal/*` requests with it
and advertises those capabilities (and Zed's `_meta.terminal_output`); given
none it advertises nothing, so the agent must fall back to the local disk
and local processes. Permission requests are recorded and answered by
`decide` (allow once by default).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from protocol import methods, types
from tests.support import AGENT_HOME, AcpTestClient
from tests.tools.editor import EditorBridge, EditorTerminal

__all__ = ("EditorAcpClient", "agent_with_script", "allow_all", "reject_outside")

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


def agent_with_script(script: Path) -> list[str]:
    """The real agent playing `script`."""
    return [sys.executable, "-m", "acp_agent", "--home", str(AGENT_HOME), "--script", str(script)]


class EditorAcpClient(AcpTestClient):
    """A recording ACP client that serves fs and terminals from `editor` (when given)."""

    def __init__(
        self, editor: EditorBridge | None, *, decide: Decision = allow_all, terminals: bool = True
    ):
        super().__init__()
        self.editor = editor
        #: Advertise `terminal/*` (else only fs and Zed's `_meta.terminal_output`).
        self.terminals = terminals
        self.decide = decide
        self.permission_requests: list[types.RequestPermissionRequest] = []
        self.register(methods.SESSION_REQUEST_PERMISSION, self._permission)
        if editor is not None:
            self.register(methods.FS_READ_TEXT_FILE, self._read)
            self.register(methods.FS_WRITE_TEXT_FILE, self._write)
            self.register(methods.TERMINAL_CREATE, self._create)
            self.register(methods.TERMINAL_OUTPUT, self._output)
            self.register(methods.TERMINAL_WAIT_FOR_EXIT, self._wait)
            self.register(methods.TERMINAL_KILL, self._kill)
            self.register(methods.TERMINAL_RELEASE, self._release)

    def capabilities(self) -> types.ClientCapabilities:
        """What this client advertises in `initialize`."""
        if self.editor is None:
            return types.ClientCapabilities()
        return types.ClientCapabilities(
            fs=types.FileSystemCapabilities(read_text_file=True, write_text_file=True),
            terminal=self.terminals,
            meta={"terminal_output": True},
        )

    async def initialize_editor(self) -> types.InitializeResponse:
        response: types.InitializeResponse = await self.request(
            methods.INITIALIZE,
            types.InitializeRequest(protocol_version=1, client_capabilities=self.capabilities()),
        )
        return response

    def _bridge(self) -> EditorBridge:
        assert self.editor is not None
        return self.editor

    def _permission(
        self, params: types.RequestPermissionRequest
    ) -> types.RequestPermissionResponse:
        self.permission_requests.append(params)
        kind = self.decide(params)
        for option in params.options:
            if option.kind == kind:
                return types.RequestPermissionResponse(
                    outcome=types.SelectedPermissionOutcome(option_id=option.option_id)
                )
        return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())

    async def _read(self, params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        text = await self._bridge().read_text_file(
            params.path, line=params.line, limit=params.limit
        )
        return types.ReadTextFileResponse(content=text)

    async def _write(self, params: types.WriteTextFileRequest) -> types.WriteTextFileResponse:
        await self._bridge().write_text_file(params.path, params.content)
        return types.WriteTextFileResponse()

    def _terminal(self, terminal_id: str) -> EditorTerminal:
        for terminal in self._bridge().terminals:
            if terminal.terminal_id == terminal_id:
                return terminal
        raise KeyError(terminal_id)

    async def _create(self, params: types.CreateTerminalRequest) -> types.CreateTerminalResponse:
        env = {variable.name: variable.value for variable in params.env or []}
        terminal = await self._bridge().create_terminal(
            params.command,
            params.args or [],
            env=env,
            cwd=params.cwd,
            output_byte_limit=params.output_byte_limit,
        )
        return types.CreateTerminalResponse(terminal_id=terminal.terminal_id)

    async def _output(self, params: Any) -> types.TerminalOutputResponse:
        seen = await self._terminal(params.terminal_id).output()
        status = (
            types.TerminalExitStatus(exit_code=seen.exit.exit_code, signal=seen.exit.signal)
            if seen.exit is not None
            else None
        )
        return types.TerminalOutputResponse(
            output=seen.output, truncated=seen.truncated, exit_status=status
        )

    async def _wait(self, params: Any) -> types.WaitForTerminalExitResponse:
        ended = await self._terminal(params.terminal_id).wait_for_exit()
        return types.WaitForTerminalExitResponse(exit_code=ended.exit_code, signal=ended.signal)

    async def _kill(self, params: Any) -> types.KillTerminalResponse:
        await self._terminal(params.terminal_id).kill()
        return types.KillTerminalResponse()

    async def _release(self, params: Any) -> types.ReleaseTerminalResponse:
        await self._terminal(params.terminal_id).release()
        return types.ReleaseTerminalResponse()
