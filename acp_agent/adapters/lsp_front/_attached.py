"""The front end's sessions on a running app server (`acp-agent lsp --connect`).

The language server is one more ACP client of the server (`_link`): each
folder's session is attached as a controller (`_acp-agent/attach`, replayed from
its start) that serves the session's files (`"files": true`), so the server's
reads and writes come here as `fs/read_text_file` and `fs/write_text_file`
and reach the editor as `EditorFiles` has them (open buffers read, changes
applied with `workspace/applyEdit` once the person accepts them), and its
permission questions are asked in the editor. The session stays the server's:
an ACP editor, `acp-agent watch` and the web page follow the same turns live.

A folder's session is the one this editor used last for it on that server;
else the most recent the server has for the folder (one an ACP editor started
there); else a new one. Where another client already serves the session's
files, it is attached without them: its edits are then written by the server
and asked of the person first.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Final

from acp_agent.adapters.lsp_front._approvals import Decision
from acp_agent.adapters.lsp_front._asking import Asker
from acp_agent.adapters.lsp_front._files import EditorFiles, EditRejected
from acp_agent.adapters.lsp_front._link import (
    ATTACH,
    REWIND,
    ServerClient,
    ServerLink,
    ServerUnreachable,
)
from acp_agent.adapters.lsp_front._session import (
    FolderSession,
    RewindFailed,
    StepReporter,
    TurnEnd,
)
from acp_agent.adapters.lsp_front._workspaces import WorkspaceSessions
from acp_agent.toolkit import ClientTimedOut
from protocol import methods, types
from protocol.errors import (
    AcpError,
    ConnectionClosed,
    InternalError,
    InvalidParams,
    InvalidRequest,
    PeerError,
    ResourceNotFound,
)

__all__ = ("AttachedSession", "ServerSessions")

logger = logging.getLogger(__name__)

_OPTION_KINDS: Final = {
    Decision.ALLOW_ONCE: types.PermissionOptionKind.ALLOW_ONCE,
    Decision.ALLOW_ALWAYS: types.PermissionOptionKind.ALLOW_ALWAYS,
    Decision.REJECT: types.PermissionOptionKind.REJECT_ONCE,
}
#: The JSON-RPC error code a write the person rejected is answered with.
_REJECTED: Final = -32001


class AttachedSession(FolderSession):
    """A folder's session on the server, as its attached controller here sees it."""

    def __init__(
        self,
        link: ServerLink,
        client: ServerClient,
        session_id: str,
        *,
        folder: str,
        files: EditorFiles,
        asker: Asker,
    ) -> None:
        super().__init__(folder, files)
        self._link = link
        self._client = client
        self._id = session_id
        self._asker = asker
        #: This client serves the session's files (the attach's answer says so).
        self.serves_files = False
        self._title: str | None = None
        self._model: str | None = None
        self._mode = ""
        #: The conversation as the updates told it: (who, message id, text).
        self._said: list[tuple[str, str, str]] = []
        self._report: StepReporter | None = None
        self._prompting = False
        #: Questions being asked in the editor, and those a cancel withdrew, by call id.
        self._asking: set[str] = set()
        self._withdrawn: set[str] = set()
        self._closed = False

    # --- what the front end shows ---------------------------------------------------------

    @property
    def id(self) -> str:
        return self._id

    @property
    def title(self) -> str | None:
        return self._title

    @property
    def model(self) -> str | None:
        return self._model

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def running(self) -> bool:
        return self._prompting

    @property
    def alive(self) -> bool:
        return not self._closed and self._link.current is self._client

    def settled(self, answer: dict[str, Any]) -> None:
        """Take the settings and role the attach answered with."""
        self.serves_files = answer.get("files") is True
        modes = answer.get("modes") or {}
        self._mode = str(modes.get("currentModeId") or self._mode)
        self._model_from(answer.get("configOptions") or [])

    def _model_from(self, options: list[Any]) -> None:
        for option in options:
            if isinstance(option, dict) and option.get("id") == "model":
                self._model = option.get("currentValue")
            elif getattr(option, "id", None) == "model":
                self._model = str(option.current_value)

    # --- what the server says -------------------------------------------------------------

    def update(self, notification: types.SessionNotification) -> None:
        update = notification.update
        if isinstance(update, types.UserMessageChunk):
            self._said_add("you", str(update.message_id), _text(update.content))
            self._step("Reading the request")
        elif isinstance(update, types.AgentMessageChunk):
            self._said_add("agent", str(update.message_id), _text(update.content))
        elif isinstance(update, types.AgentThoughtChunk):
            self._step("Thinking")
        elif isinstance(update, types.ToolCall):
            self._said.append(("tool", str(update.tool_call_id), update.title))
            self._step(f"Running: {update.title}")
        elif isinstance(update, types.ToolCallProgress):
            if update.status in (types.ToolCallStatus.COMPLETED, types.ToolCallStatus.FAILED):
                self._step("Thinking")
        elif isinstance(update, types.CurrentModeUpdate):
            self._mode = str(update.current_mode_id)
        elif isinstance(update, types.ConfigOptionUpdate):
            self._model_from(list(update.config_options))
        elif isinstance(update, types.SessionInfoUpdate) and update.title is not None:
            self._title = update.title if isinstance(update.title, str) else None  # null: none

    def _said_add(self, who: str, message_id: str, text: str) -> None:
        if self._said and self._said[-1][:2] == (who, message_id):
            self._said[-1] = (who, message_id, self._said[-1][2] + text)
        else:
            self._said.append((who, message_id, text))

    def _step(self, step: str) -> None:
        if self._report is not None:
            self._report(step)

    async def ask(self, request: types.RequestPermissionRequest) -> types.RequestPermissionResponse:
        """A permission question of the session's, asked in the editor. An edit is allowed
        at once where the change itself reaches the editor for the person to accept
        (this client serves the files), as the embedded front end does."""
        call = request.tool_call
        if call.kind is types.ToolKind.EDIT and self.serves_files:
            return _chosen(request, Decision.ALLOW_ONCE)
        shown = " ".join(
            line.strip("` ")
            for part in call.content or []
            if isinstance(part, types.Content) and isinstance(part.content, types.TextContent)
            for line in part.content.text.splitlines()
            if line.strip("` ")
        )
        call_id = str(call.tool_call_id)
        self._asking.add(call_id)
        try:
            answer = await self._asker.ask(
                f"acp-agent asks to {call.title}" + (f": {shown}" if shown else ""),
                folder=self.folder,
                title=f"Allow acp-agent: {call.title}",
            )
        finally:
            self._asking.discard(call_id)
        if call_id in self._withdrawn:  # ACP: once the client cancelled, it says cancelled
            self._withdrawn.discard(call_id)
            return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())
        return _chosen(request, answer.decision)

    async def read(self, request: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        try:
            text = await self.files.read_text_file(
                str(request.path), line=request.line, limit=request.limit
            )
        except (OSError, UnicodeDecodeError) as exc:
            raise InternalError(f"{request.path} was not read: {exc}") from None
        return types.ReadTextFileResponse(content=text)

    async def write(self, request: types.WriteTextFileRequest) -> types.WriteTextFileResponse:
        try:
            await self.files.write_text_file(str(request.path), request.content)
        except EditRejected as exc:
            raise AcpError(str(exc), code=_REJECTED) from None
        except (ClientTimedOut, OSError) as exc:
            raise InternalError(f"the change was not made: {exc}") from None
        return types.WriteTextFileResponse()

    # --- what the person does ---------------------------------------------------------------

    async def run(self, prompt: str, report: StepReporter) -> TurnEnd:
        self._report, self._prompting = report, True
        report("Sent to the acp-agent server")
        try:
            response: types.PromptResponse = await self._client.request(
                methods.SESSION_PROMPT,
                types.PromptRequest(session_id=self._id, prompt=[types.TextContent(text=prompt)]),
            )
        except (PeerError, ConnectionClosed):
            raise RuntimeError(
                f"the acp-agent server on {self._link.socket} went away; the next command "
                "connects again"
            ) from None
        except AcpError as exc:
            raise RuntimeError(exc.message) from None
        finally:
            self._report, self._prompting = None, False
        ours = (response.meta or {}).get("acp-agent") or {}
        reply = self._reply_to(ours.get("messageId"))
        if response.stop_reason is types.StopReason.CANCELLED:
            return TurnEnd(reply, cancelled=True)
        error = ours.get("error")
        if isinstance(error, dict) and error.get("message"):
            return TurnEnd(reply, failure=str(error["message"]))
        return TurnEnd(reply)

    def _asked_at(self, message_id: object) -> int | None:
        """Where the person's message `message_id` is in what was said (its last place)."""
        places = [
            i for i, (who, mid, _) in enumerate(self._said) if who == "you" and mid == message_id
        ]
        return places[-1] if places else None

    def _reply_to(self, message_id: object) -> str:
        """The agent's text after the person's message `message_id`, up to the next one."""
        start = self._asked_at(message_id)
        if start is None:
            return ""
        paragraphs: list[str] = []
        for who, _, text in self._said[start + 1 :]:
            if who == "you":
                break
            if who == "agent":
                paragraphs.append(text)
        return "\n\n".join(paragraphs).strip()

    async def cancel(self) -> int:
        if not self.alive:
            return 0
        self._withdrawn |= self._asking
        self._client.notify(methods.SESSION_CANCEL, types.CancelNotification(session_id=self._id))
        return 1 if self._prompting else 0

    async def last_message(self) -> str | None:
        asked = [mid for who, mid, _ in self._said if who == "you"]
        return asked[-1] if asked else None

    async def rewind(self, message_id: str) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = await self._client.request(
                REWIND, {"sessionId": self._id, "messageId": message_id}
            )
        except AcpError as exc:
            raise RewindFailed(exc.message) from None
        except (PeerError, ConnectionClosed):
            raise RewindFailed(f"the acp-agent server on {self._link.socket} went away") from None
        if answer.get("rewound"):
            # What followed that message is out of the conversation from now on.
            cut = self._asked_at(message_id)
            if cut is not None:
                del self._said[cut:]
        return answer

    async def transcript(self) -> str:
        blocks = [f"# {self._title or 'acp-agent session'}"]
        speaking = False
        for who, _, text in self._said:
            if who == "you":
                blocks += ["## You", text.strip()]
                speaking = False
            elif who == "tool":
                blocks.append(f"- *{text}*")
                speaking = False
            else:
                if not speaking:
                    blocks += ["## acp-agent", ""]
                    speaking = True
                blocks[-1] += text
        return "\n\n".join(block.strip() for block in blocks if block.strip()) + "\n"

    async def close(self) -> None:
        """Stop routing the session here; the session stays on the server (the connection
        closing tells its other clients this one left)."""
        self._closed = True
        if self._link.sessions.get(self._id) is self:
            del self._link.sessions[self._id]


class ServerSessions:
    """Opens folders' sessions on the app server (see the module docstring)."""

    def __init__(self, link: ServerLink, *, data_dir: Path) -> None:
        self._link = link
        self._workspaces = WorkspaceSessions(data_dir / "lsp" / "server-sessions.json")

    def _key(self, folder: str) -> str:
        # Per server: two servers (sockets) have different stores.
        return f"{self._link.socket} {folder}"

    async def problem(self) -> str | None:
        """Why sessions cannot be had now (no server answers), or None."""
        try:
            await self._link.connection()
        except ServerUnreachable as exc:
            return str(exc)
        return None

    async def open(self, folder: str, files: EditorFiles, asker: Asker) -> FolderSession:
        try:
            client = await self._link.connection()
        except ServerUnreachable as exc:
            raise ValueError(str(exc)) from None
        try:
            for session_id in await self._known(client, folder):
                session = AttachedSession(
                    self._link, client, session_id, folder=folder, files=files, asker=asker
                )
                if await self._attach(client, session):
                    self._workspaces.remember(self._key(folder), session_id)
                    return session
            created: types.NewSessionResponse = await client.request(
                methods.SESSION_NEW, types.NewSessionRequest(cwd=folder, mcp_servers=[])
            )
            session = AttachedSession(
                self._link, client, str(created.session_id), folder=folder, files=files, asker=asker
            )
            if not await self._attach(client, session):
                raise ValueError(f"the server refused to attach its new session {session.id}")
        except (PeerError, ConnectionClosed):
            raise ValueError(f"the acp-agent server on {self._link.socket} went away") from None
        except AcpError as exc:
            raise ValueError(f"the acp-agent server refused: {exc.message}") from None
        self._workspaces.remember(self._key(folder), session.id)
        return session

    async def _known(self, client: ServerClient, folder: str) -> list[str]:
        """The sessions to try for `folder`: this editor's last, then the server's latest."""
        known: list[str] = []
        stored = self._workspaces.session_of(self._key(folder))
        if stored is not None:
            known.append(stored)
        listed: types.ListSessionsResponse = await client.request(
            methods.SESSION_LIST, types.ListSessionsRequest(cwd=folder)
        )
        latest = max(listed.sessions, key=lambda info: info.updated_at or "", default=None)
        if latest is not None and str(latest.session_id) not in known:
            known.append(str(latest.session_id))
        return known

    async def _attach(self, client: ServerClient, session: AttachedSession) -> bool:
        """Attach `session` as a controller serving its files (without them if another
        client serves them); False when the server has no such session (of this person)."""
        self._link.sessions[session.id] = session
        params: dict[str, Any] = {
            "sessionId": session.id,
            "role": "controller",
            "replay": "start",
            "files": True,
        }
        try:
            try:
                answer = await client.request(ATTACH, params)
            except InvalidRequest as exc:
                if not (isinstance(exc.data, dict) and "filesServedBy" in exc.data):
                    raise
                answer = await client.request(ATTACH, {**params, "files": False})
                session.note = (
                    f"acp-agent: another client ({exc.data['filesServedBy']}) serves the files "
                    f"of session {session.id}: its changes are written by the server, "
                    "not through this editor, and asked of you first."
                )
        except (ResourceNotFound, InvalidParams) as exc:
            del self._link.sessions[session.id]
            logger.info("session %s is not on the server: %s", session.id, exc.message)
            return False
        except BaseException:
            self._link.sessions.pop(session.id, None)
            raise
        session.settled(answer)
        return True

    async def aclose(self) -> None:
        await self._link.aclose()


def _chosen(
    request: types.RequestPermissionRequest, decision: Decision
) -> types.RequestPermissionResponse:
    """The answer choosing the offered option of `decision`'s kind (a reject when that
    kind is not offered; cancelled when nothing fits)."""
    wanted = _OPTION_KINDS[decision]
    options = request.options
    chosen = next((o for o in options if o.kind is wanted), None)
    if chosen is None:
        chosen = next((o for o in options if o.kind.value.startswith("reject")), None)
    if chosen is None:
        return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())
    return types.RequestPermissionResponse(
        outcome=types.SelectedPermissionOutcome(option_id=chosen.option_id)
    )


def _text(content: Any) -> str:
    return content.text if isinstance(content, types.TextContent) else ""
