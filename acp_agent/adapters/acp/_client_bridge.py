"""The editor's side of a session, over ACP: its files, its terminals, and the person.

`AcpClientBridge` implements the capabilities' `ClientBridge` with
`fs/read_text_file`, `fs/write_text_file` and `terminal/*`, each offered
only when the client advertised it. Each request waits at most
`request_timeout_s` for its answer (`ACP_AGENT_EDITOR_TIMEOUT_S`, default 30):
then it is withdrawn with `$/cancel_request` and fails with `ClientTimedOut`.
`terminal/wait_for_exit` alone waits as long as its caller lets it, unless
asked to be bounded. A lone surrogate in text the editor returns (a file,
terminal output) becomes U+FFFD. `AcpPermissionPrompter` asks permission
questions with `session/request_permission`, showing the call and the full
command or path (in a code fence no line of it can close, `fenced`), what the
call would do (the diff of a change, what a deletion removes, an MCP call's
arguments), and the four answers. A question waits for the person, however
long (cancelling the turn withdraws it); a question the client cancels (it
must, once it sent `session/cancel`) or cannot answer counts as cancelled,
unless the prompter was given somewhere else to ask when the client refuses it
with an error (`on_refused`: a subagent session's question goes to its parent,
as a client that does not route child sessions needs). Each question carries
`_meta: {"acp-agent": {"outsideRoots": bool}}`: whether the call reaches outside
every root of the workspace (a front end may refuse those without asking).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from acp_agent.agent import PermissionAnswer, PermissionChoice, PermissionQuestion
from acp_agent.lone_surrogates import replace_lone_surrogates
from acp_agent.toolkit import (
    DEFAULT_REQUEST_TIMEOUT_S,
    ClientTimedOut,
    EditorRefused,
    NotOffered,
    TerminalExit,
    TerminalOutput,
    TerminalRefused,
    fenced,
)
from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.errors import (
    AcpError,
    ConnectionClosed,
    PeerError,
    PeerTimedOut,
    RemoteProtocolError,
    RequestCancelled,
)

__all__ = (
    "AcpClientBridge",
    "AcpPermissionPrompter",
    "AcpTerminal",
    "permission_answer",
    "permission_request",
    "unanswered",
)

logger = logging.getLogger(__name__)

#: Our extensions live under this key of a question's `_meta`.
_META_KEY = "acp-agent"


async def _ask_editor(
    connection: AgentConnection, method: str, params: Any, timeout_s: float | None
) -> Any:
    """`connection.request`, with a deadline passing as `ClientTimedOut`."""
    try:
        return await connection.request(method, params, timeout_s=timeout_s)
    except PeerTimedOut as exc:
        raise ClientTimedOut(method, exc.timeout_s) from None


async def _ask_for_file(
    connection: AgentConnection, method: str, params: Any, timeout_s: float | None
) -> Any:
    """`_ask_editor` for `fs/*`: the editor's error answer is `EditorRefused`, which the
    tool reports (one it cancelled stays `RequestCancelled`)."""
    try:
        return await _ask_editor(connection, method, params, timeout_s)
    except RequestCancelled:
        raise
    except AcpError as exc:
        raise EditorRefused(method, exc.message) from None


class AcpClientBridge:
    """The client's file system and terminals, as far as it offers them."""

    def __init__(
        self,
        connection: AgentConnection,
        session_id: str,
        capabilities: types.ClientCapabilities | None,
        *,
        request_timeout_s: float | None = None,
        caught_up: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """`caught_up` waits until the session's updates published so far were sent (a
        terminal is shown before it is awaited or released)."""
        self._connection = connection
        self._session_id = session_id
        #: None: `DEFAULT_REQUEST_TIMEOUT_S`.
        self._timeout_s = (
            DEFAULT_REQUEST_TIMEOUT_S if request_timeout_s is None else request_timeout_s
        )
        capabilities = capabilities or types.ClientCapabilities()
        fs = capabilities.fs or types.FileSystemCapabilities()
        self._reads = fs.read_text_file
        self._writes = fs.write_text_file
        self._terminals = capabilities.terminal
        self._streams = bool((capabilities.meta or {}).get("terminal_output") is True)
        self._caught_up = caught_up

    @property
    def can_read_files(self) -> bool:
        return self._reads

    async def updates_sent(self) -> None:
        if self._caught_up is not None:
            await self._caught_up()

    @property
    def can_write_files(self) -> bool:
        return self._writes

    @property
    def has_terminals(self) -> bool:
        return self._terminals

    @property
    def streams_terminal_output(self) -> bool:
        return self._streams

    @property
    def request_timeout_s(self) -> float:
        return self._timeout_s

    async def read_text_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        if not self._reads:
            raise NotOffered("fs/read_text_file")
        response = await _ask_for_file(
            self._connection,
            methods.FS_READ_TEXT_FILE,
            types.ReadTextFileRequest(
                session_id=self._session_id, path=path, line=line, limit=limit
            ),
            self._timeout_s,
        )
        return replace_lone_surrogates(str(response.content))

    async def write_text_file(self, path: str, content: str) -> None:
        if not self._writes:
            raise NotOffered("fs/write_text_file")
        await _ask_for_file(
            self._connection,
            methods.FS_WRITE_TEXT_FILE,
            types.WriteTextFileRequest(session_id=self._session_id, path=path, content=content),
            self._timeout_s,
        )

    async def create_terminal(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> AcpTerminal:
        if not self._terminals:
            raise NotOffered("terminals")
        try:
            response = await self._create(command, args, env, cwd, output_byte_limit)
        except AcpError as exc:
            raise TerminalRefused(exc.message) from None
        return AcpTerminal(
            self._connection, self._session_id, str(response.terminal_id), self._timeout_s
        )

    async def _create(
        self,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str] | None,
        cwd: str | None,
        output_byte_limit: int | None,
    ) -> Any:
        return await _ask_editor(
            self._connection,
            methods.TERMINAL_CREATE,
            types.CreateTerminalRequest(
                session_id=self._session_id,
                command=command,
                args=list(args),
                env=[types.EnvVariable(name=k, value=v) for k, v in (env or {}).items()],
                cwd=cwd,
                output_byte_limit=output_byte_limit,
            ),
            self._timeout_s,
        )


class AcpTerminal:
    """A terminal the client runs a command in."""

    def __init__(
        self, connection: AgentConnection, session_id: str, terminal_id: str, timeout_s: float
    ) -> None:
        self._connection = connection
        self._session_id = session_id
        self._terminal_id = terminal_id
        self._timeout_s = timeout_s

    @property
    def terminal_id(self) -> str:
        return self._terminal_id

    async def output(self) -> TerminalOutput:
        response = await _ask_editor(
            self._connection,
            methods.TERMINAL_OUTPUT,
            types.TerminalOutputRequest(session_id=self._session_id, terminal_id=self._terminal_id),
            self._timeout_s,
        )
        status = response.exit_status
        exit = None if status is None else TerminalExit(status.exit_code, status.signal)
        output = replace_lone_surrogates(str(response.output))
        return TerminalOutput(output, bool(response.truncated), exit)

    async def wait_for_exit(self, *, bounded: bool = False) -> TerminalExit:
        response = await _ask_editor(
            self._connection,
            methods.TERMINAL_WAIT_FOR_EXIT,
            types.WaitForTerminalExitRequest(
                session_id=self._session_id, terminal_id=self._terminal_id
            ),
            self._timeout_s if bounded else None,
        )
        return TerminalExit(response.exit_code, response.signal)

    async def kill(self) -> None:
        await _ask_editor(
            self._connection,
            methods.TERMINAL_KILL,
            types.KillTerminalRequest(session_id=self._session_id, terminal_id=self._terminal_id),
            self._timeout_s,
        )

    async def release(self) -> None:
        await _ask_editor(
            self._connection,
            methods.TERMINAL_RELEASE,
            types.ReleaseTerminalRequest(
                session_id=self._session_id, terminal_id=self._terminal_id
            ),
            self._timeout_s,
        )


class AcpPermissionPrompter:
    """Asks the person with `session/request_permission`.

    `on_refused` asks elsewhere when the client answers the request with an error
    (None: the question counts as cancelled); a client that went away is no refusal.
    """

    def __init__(
        self,
        connection: AgentConnection,
        session_id: str,
        *,
        on_refused: Callable[[PermissionQuestion], Awaitable[PermissionAnswer]] | None = None,
    ) -> None:
        self._connection = connection
        self._session_id = session_id
        self._on_refused = on_refused

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        request = permission_request(self._session_id, question)
        try:
            response = await self._connection.request(methods.SESSION_REQUEST_PERMISSION, request)
        except (AcpError, PeerError, ConnectionClosed) as exc:
            is_refusal = isinstance(exc, AcpError) and not isinstance(exc, RequestCancelled)
            if is_refusal and self._on_refused is not None:
                logger.info("permission request for %s refused: %s", question.call_id, exc)
                return await self._on_refused(question)
            return unanswered(question, exc)
        return permission_answer(question, response)


def unanswered(
    question: PermissionQuestion, exc: AcpError | PeerError | ConnectionClosed
) -> PermissionAnswer:
    """What a question the client did not answer with a choice comes to (`exc`): withdrawn
    when the request was cancelled or the client went away (nobody to tell); otherwise
    the client could not answer it (an error, a result that is no answer, no answer in
    time), which the call's result says, not as a cancel (and the log warns of it)."""
    why: str | None = None
    if isinstance(exc, RequestCancelled):
        pass
    elif isinstance(exc, AcpError):
        why = f"the editor answered with an error ({exc})"
    elif isinstance(exc, RemoteProtocolError):
        why = f"the editor's answer was not one ({exc})"
    elif isinstance(exc, PeerTimedOut):
        why = f"the editor did not answer within {exc.timeout_s:g} s"
    if why is None:
        logger.info("permission request for %s not answered: %s", question.call_id, exc)
        return PermissionAnswer(None)
    logger.warning("the permission question about %s: %s", question.call_id, why)
    return PermissionAnswer(None, unanswered=why)


def permission_request(
    session_id: str, question: PermissionQuestion
) -> types.RequestPermissionRequest:
    """The `session/request_permission` that asks `question` in session `session_id`."""
    return types.RequestPermissionRequest(
        session_id=session_id,
        tool_call=types.ToolCallUpdate(
            tool_call_id=question.call_id,
            title=question.title,
            kind=_tool_kind(question.kind.value),
            status=types.ToolCallStatus.PENDING,
            content=[
                types.Content(content=types.TextContent(text=_question_text(question))),
                *_preview_of(question),
            ],
            locations=[
                types.ToolCallLocation(path=location.path, line=location.line)
                for location in question.locations
            ]
            or None,
            raw_input=dict(question.arguments),
        ),
        options=[
            types.PermissionOption(
                option_id=option.option_id,
                name=option.label,
                kind=types.PermissionOptionKind(option.choice.value),
            )
            for option in question.options
        ],
        meta={_META_KEY: {"outsideRoots": question.outside_roots}},
    )


def permission_answer(
    question: PermissionQuestion, response: types.RequestPermissionResponse
) -> PermissionAnswer:
    """The person's choice in `response` to `question` (an option never offered: reject)."""
    outcome = response.outcome
    if isinstance(outcome, types.SelectedPermissionOutcome):
        offered = {option.option_id: option.choice for option in question.options}
        choice = offered.get(str(outcome.option_id))
        if choice is None:
            logger.warning("the client chose an option we did not offer; taken as reject")
            return PermissionAnswer(PermissionChoice.REJECT_ONCE)
        return PermissionAnswer(choice)
    return PermissionAnswer(None)


def _preview_of(question: PermissionQuestion) -> list[types.ToolCallContent]:
    """What the call would do, worked out before asking: `diff` items for a change (what
    the person approves), text for the rest (what a deletion removes, a call's arguments)."""
    from acp_agent.toolkit import DiffContent, TextContent

    shown: list[types.ToolCallContent] = []
    for part in question.content:
        if isinstance(part, DiffContent):
            shown.append(types.Diff(path=part.path, old_text=part.old_text, new_text=part.new_text))
        elif isinstance(part, TextContent):
            shown.append(types.Content(content=types.TextContent(text=part.text)))
    return shown


def _question_text(question: PermissionQuestion) -> str:
    lines = [f"`{question.tool}` asks for:\n{fenced(question.target)}"]
    if question.note:
        lines.append(question.note)
    return "\n\n".join(lines)


def _tool_kind(value: str) -> types.ToolKind:
    """The wire kind of one of ours, OTHER when ACP has none like it."""
    # Looked up at call time: a table built at import would load the wire types'
    # turn part with the session, before its answer.
    return next((kind for kind in types.ToolKind if kind.value == value), types.ToolKind.OTHER)
