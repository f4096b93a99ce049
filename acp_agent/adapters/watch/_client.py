"""The connection `acp-agent watch` follows a session on: an ACP client on the server's socket.

`WatchClient` is a client like any other (it reads nothing behind the
server's back): it attaches to the session (`_acp-agent/attach`) as an
observer or a controller and hands every update and server notice to its
`Shower` as written (from the raw line, so a kind this version does not know
is still shown), keeping the last cursor it got on the session and on each
branch, so that a new connection resumes exactly there (the branches' in the
attach's `children`). It advertises `subagents: {}`, so the server shows it
the session's branches as child sessions: each announced on the session
(`subagent_update`), then its own updates on its id, which go to the
`Shower` as a branch's. As a controller it is asked the session's permission
questions (a branch's on the branch's id): each waits for the person's answer
(`answer`), and is shown withdrawn when another client answered first. As an
observer it is shown them (`_acp-agent/permission_asked`), and how each was
answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any, Final

import acp_agent
from protocol import methods, types
from protocol.connection import ClientConnection
from protocol.methods import MessageKind

if TYPE_CHECKING:
    from acp_agent.adapters.watch._show import Shower

__all__ = ("ATTACH", "PendingQuestion", "WatchClient")

logger = logging.getLogger(__name__)

ATTACH: Final = "_acp-agent/attach"
_JOB: Final = "_acp-agent/job"
_ASKED: Final = "_acp-agent/permission_asked"
_RESOLVED: Final = "_acp-agent/permission_resolved"
_LEFT: Final = "_acp-agent/client_disconnected"
_NOTICES: Final = (_JOB, _ASKED, _RESOLVED, _LEFT)


class PendingQuestion:
    """A permission question waiting for the person: its options and the answer to come."""

    def __init__(self, request: types.RequestPermissionRequest) -> None:
        self.request = request
        self.answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

    def choose(self, typed: str) -> str | None:
        """The option id `typed` names (its number, `y` or `n`), or None."""
        options = self.request.options
        typed = typed.strip().lower()
        if typed.isdigit() and 1 <= int(typed) <= len(options):
            return str(options[int(typed) - 1].option_id)
        wanted = {"y": "allow", "yes": "allow", "n": "reject", "no": "reject"}.get(typed)
        for option in options:
            if wanted is not None and option.kind.value.startswith(wanted):
                return str(option.option_id)
        return None


class WatchClient(ClientConnection):
    """One connection of `acp-agent watch` (see the module docstring)."""

    def __init__(self, shower: Shower, session_id: str) -> None:
        super().__init__()
        self._shower = shower
        self.session_id = session_id
        #: The last cursor received: where a new connection resumes.
        self.cursor: str | None = None
        #: The last cursor received on each branch's id, by its id (the same, for it).
        self.child_cursors: dict[str, str] = {}
        #: Questions waiting for the person, oldest first.
        self.questions: list[PendingQuestion] = []
        #: The session's branches, as the child sessions announced on it.
        self.children: set[str] = set()
        self._stack: contextlib.AsyncExitStack | None = None
        self.register(methods.SESSION_UPDATE, _taken_from_the_line)
        self.register(methods.SESSION_REQUEST_PERMISSION, self._ask)
        for method in _NOTICES:
            self.register(method, _taken_from_the_line, kind=MessageKind.NOTIFICATION)

    async def open(self, socket: str) -> None:
        """Connect and negotiate; `OSError` when no server listens on `socket`. The
        connection's tasks run in its own group until `leave` (called by the same task)."""
        self._stack = contextlib.AsyncExitStack()
        await self._stack.enter_async_context(self)
        await self.connect_unix(socket)
        await self.request(
            methods.INITIALIZE,
            types.InitializeRequest(
                protocol_version=types.PROTOCOL_VERSION,
                client_capabilities=types.ClientCapabilities(
                    subagents=types.SubagentCapabilities()
                ),
                client_info=types.Implementation(
                    name="acp-agent-watch", title="acp-agent watch", version=acp_agent.__version__
                ),
            ),
        )

    async def leave(self) -> None:
        """Stop the connection and wait for its tasks (the task that opened it calls it)."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()
        else:
            await self.stop()

    async def attach(self, *, control: bool, replay: str) -> dict[str, Any]:
        """Attach to the session; resumes after `cursor` when one was received."""
        params: dict[str, Any] = {
            "sessionId": self.session_id,
            "role": "controller" if control else "observer",
            "replay": replay,
        }
        if replay == "cursor":
            params["cursor"] = self.cursor
            params["children"] = dict(self.child_cursors)
        answer: dict[str, Any] = await self.request(ATTACH, params)
        self.cursor = str(answer.get("cursor", self.cursor))
        return answer

    # --- what the server sends ------------------------------------------------------------

    def line_received(self, line: bytes) -> None:
        if b'"method"' not in line:
            return
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or "id" in message:
            return
        method, params = message.get("method"), message.get("params")
        if not isinstance(params, dict):
            return
        session_id = params.get("sessionId")
        if method == _ASKED:  # a question another client answers, on the session or a branch
            self._shower.question(params, answerable=False)
            return
        if method == _RESOLVED:
            self._shower.resolved(params)
            return
        cursor = ((params.get("_meta") or {}).get("acp-agent") or {}).get("cursor")
        if session_id in self.children:
            if method == methods.SESSION_UPDATE and isinstance(params.get("update"), dict):
                if isinstance(cursor, str):
                    self.child_cursors[str(session_id)] = cursor
                self._shower.child(str(session_id), params["update"])
            return
        if session_id != self.session_id:
            return
        if isinstance(cursor, str):
            self.cursor = cursor
        if method == methods.SESSION_UPDATE and isinstance(params.get("update"), dict):
            update = params["update"]
            if update.get("sessionUpdate") == "subagent_update":
                self.children.add(str(update.get("sessionId")))
            self._shower.update(cursor, update)
        elif method == _JOB:
            self._shower.job(cursor, params)
        elif method == _LEFT:
            self._shower.left(params)

    async def _ask(self, params: types.RequestPermissionRequest) -> types.RequestPermissionResponse:
        pending = PendingQuestion(params)
        self.questions.append(pending)
        # As written on the wire (enums as their values), like the updates.
        wire = json.loads(json.dumps(self.protocol.converter.unstructure(params)))
        self._shower.question(wire, answerable=True)
        try:
            chosen = await pending.answer
        except asyncio.CancelledError:
            self._shower.withdrawn(str(params.session_id), str(params.tool_call.tool_call_id))
            raise
        finally:
            self.questions.remove(pending)
        if chosen is None:
            return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())
        return types.RequestPermissionResponse(
            outcome=types.SelectedPermissionOutcome(option_id=chosen)
        )

    # --- what the person does (a controller) -------------------------------------------------

    def cancel(self) -> None:
        """Cancel the session's turn (`session/cancel`); its questions waiting here are
        answered cancelled, as ACP asks of a client that cancels."""
        for pending in self.questions:
            if not pending.answer.done():
                pending.answer.set_result(None)
        self.notify(methods.SESSION_CANCEL, types.CancelNotification(session_id=self.session_id))

    async def send(self, text: str) -> types.StopReason:
        """Send the person's message (`session/prompt`): it waits behind a running turn."""
        response: types.PromptResponse = await self.request(
            methods.SESSION_PROMPT,
            types.PromptRequest(session_id=self.session_id, prompt=[types.TextContent(text=text)]),
        )
        return response.stop_reason


def _taken_from_the_line(params: object) -> None:
    """Updates and notices are shown from their raw line (`line_received`)."""
