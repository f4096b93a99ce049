"""The agent as a child process, driven from the client side exactly as an editor does.

`AgentProcess` talks to `python -m acp_agent` (the same interpreter and environment,
serving ACP on stdio), started by `_launch` in a process group of its own, so a
Ctrl-C in the terminal reaches the headless command, which cancels the turn cleanly,
and not the agent.
It advertises no file system and no terminals: the agent then reads and writes the
disk and runs commands as local processes itself, and a command's output arrives
inline in its tool call, where a script can read it. Permission questions go to
the `answer` callback; every `session/update` goes to `on_update` as the agent
wrote it (what `--json` and an export show, byte for byte the same JSON values).
"""

from __future__ import annotations

import json
import logging
import subprocess
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Final

import acp_agent
from protocol import methods, types
from protocol.connection import ClientConnection
from protocol.errors import AcpError

__all__ = ("AgentProcess", "HeldSession", "held_by")

logger = logging.getLogger(__name__)

#: How many of the agent's last stderr lines are kept to explain a failure.
_STDERR_TAIL: Final = 40

#: Pages of `session/list` read before giving up on finding an id (a guard, not a limit
#: anyone should meet: the agent's pages are 100 sessions each).
_MAX_PAGES: Final = 1000

#: Receives each update: its session and the update as the agent wrote it.
UpdateSink = Callable[[str, dict[str, Any]], None]
#: Answers one permission question.
PermissionAnswerer = Callable[
    [types.RequestPermissionRequest], Awaitable[types.RequestPermissionResponse]
]


class HeldSession(Exception):
    """The session is open in another acp-agent process (`pid` on `host`, when known)."""

    def __init__(self, session_id: str, message: str, pid: int | None, host: str | None) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.pid = pid
        self.host = host


def held_by(error: AcpError, session_id: str) -> HeldSession | None:
    """The `HeldSession` an agent's error reports, or None when it is about something else."""
    data = error.data if isinstance(error.data, dict) else {}
    ours = data.get("acp-agent") if isinstance(data.get("acp-agent"), dict) else {}
    held = ours.get("heldBy") if isinstance(ours, dict) else None
    if not isinstance(held, dict):
        return None
    pid = held.get("pid")
    host = held.get("host")
    return HeldSession(
        session_id,
        str(error.message),
        pid if isinstance(pid, int) else None,
        host if isinstance(host, str) else None,
    )


class AgentProcess(ClientConnection):
    """One agent child process and the client side of its connection."""

    def __init__(
        self,
        *,
        on_update: UpdateSink,
        answer: PermissionAnswerer,
    ) -> None:
        super().__init__()
        self._on_update = on_update
        self._answer = answer
        #: The agent's last stderr lines (shown when it fails).
        self.stderr_tail: deque[str] = deque(maxlen=_STDERR_TAIL)
        self.register(methods.SESSION_UPDATE, _typed_update_seen)
        self.register(methods.SESSION_REQUEST_PERMISSION, self._permission)

    async def start(self, process: subprocess.Popen[bytes]) -> types.InitializeResponse:
        """Talk to `process`, the agent `launch_agent` started, and negotiate; raises
        `AcpError` or `PeerDisconnected` (the caller ends the process: `end_unattached`)."""
        await self.attach_process(process)
        response: types.InitializeResponse = await self.request(
            methods.INITIALIZE,
            types.InitializeRequest(
                protocol_version=types.PROTOCOL_VERSION,
                client_capabilities=types.ClientCapabilities(),
                client_info=types.Implementation(
                    name="acp-agent-headless",
                    title="acp-agent (headless)",
                    version=acp_agent.__version__,
                ),
            ),
        )
        return response

    async def stored_sessions(self, cwd: str | None = None) -> list[types.SessionInfo]:
        """Every stored session (only those of workspace `cwd`, when given), most
        recently updated first: `session/list`, page after page."""
        found: list[types.SessionInfo] = []
        cursor = None
        for _ in range(_MAX_PAGES):
            page = await self.request(
                methods.SESSION_LIST, types.ListSessionsRequest(cwd=cwd, cursor=cursor)
            )
            found.extend(page.sessions)
            cursor = page.next_cursor
            if not cursor:
                break
        return found

    async def stored_session(self, session_id: str) -> types.SessionInfo | None:
        """The stored session `session_id`, or None when there is none."""
        for info in await self.stored_sessions():
            if str(info.session_id) == session_id:
                return info
        return None

    def line_received(self, line: bytes) -> None:
        # Updates are taken here, before dispatch, as written: a kind this version's
        # types do not know is still shown whole.
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or message.get("method") != methods.SESSION_UPDATE:
            return
        params = message.get("params")
        if isinstance(params, dict) and isinstance(params.get("update"), dict):
            self._on_update(str(params.get("sessionId")), params["update"])

    def stderr_received(self, line: bytes) -> None:
        self.stderr_tail.append(line.decode("utf-8", "replace").rstrip("\n"))

    async def _permission(
        self, params: types.RequestPermissionRequest
    ) -> types.RequestPermissionResponse:
        return await self._answer(params)


def _typed_update_seen(params: types.SessionNotification) -> None:
    """Updates are handled from their raw line (`line_received`); this accepts them."""
