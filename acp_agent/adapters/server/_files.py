"""A session's files on the server: its own disk, or the buffers of an attached editor.

A session on the server reads and writes its own disk, unless an attached
controller offered to serve its files (`_acp-agent/attach` with `"files": true`,
from a client whose `initialize` offered `fs.readTextFile` and
`fs.writeTextFile`): while it stays attached, the session's reads and writes go
to it as `fs/read_text_file` and `fs/write_text_file`, as over stdio, so an edit
lands in the person's editor (`acp-agent lsp --connect` applies it there with
`workspace/applyEdit`). One client serves a session's files at a time; when it
detaches or leaves, they are the server's disk again. A read waits for the client
at most the editor timeout; a write as long as it takes, since the client may
confirm it with the person first (cancelling the turn withdraws it). Commands
never run in a client's terminal: the session outlives every editor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from acp_agent.lone_surrogates import replace_lone_surrogates
from acp_agent.toolkit import DEFAULT_REQUEST_TIMEOUT_S, ClientTimedOut, EditorRefused, NotOffered
from acp_agent.values import Value
from protocol import methods, types
from protocol.errors import AcpError, PeerTimedOut, RequestCancelled

if TYPE_CHECKING:
    from acp_agent.toolkit import ClientTerminal
    from protocol.connection import AgentConnection

__all__ = ("FileHost", "SessionFiles")


@attrs.frozen(eq=False)
class FileHost(Value):
    """The client serving a session's files."""

    client_id: str
    connection: AgentConnection
    #: How long a read waits for the client's answer.
    read_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S


class SessionFiles:
    """The `ClientBridge` a session on the server opens with (see the module docstring)."""

    has_terminals = False
    streams_terminal_output = False

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id
        #: The client serving the files now (None: the server's disk).
        self.host: FileHost | None = None

    def serve(self, host: FileHost) -> None:
        """`host` serves the files from now on (the caller checked nobody else does)."""
        self.host = host

    def release(self, client_id: str) -> None:
        """`client_id` serves the files no more (nothing if it did not)."""
        if self.host is not None and self.host.client_id == client_id:
            self.host = None

    @property
    def can_read_files(self) -> bool:
        return self.host is not None

    @property
    def can_write_files(self) -> bool:
        return self.host is not None

    @property
    def request_timeout_s(self) -> float:
        return DEFAULT_REQUEST_TIMEOUT_S if self.host is None else self.host.read_timeout_s

    def _serving(self, method: str) -> FileHost:
        host = self.host
        if host is None:  # it left between the tool's look and its call
            raise NotOffered(method)
        return host

    async def read_text_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        host = self._serving(methods.FS_READ_TEXT_FILE)
        try:
            response = await host.connection.request(
                methods.FS_READ_TEXT_FILE,
                types.ReadTextFileRequest(
                    session_id=self._session_id, path=path, line=line, limit=limit
                ),
                timeout_s=host.read_timeout_s,
            )
        except PeerTimedOut as exc:
            raise ClientTimedOut(methods.FS_READ_TEXT_FILE, exc.timeout_s) from None
        except RequestCancelled:
            raise
        except AcpError as exc:
            raise EditorRefused(methods.FS_READ_TEXT_FILE, exc.message) from None
        return replace_lone_surrogates(str(response.content))

    async def write_text_file(self, path: str, content: str) -> None:
        host = self._serving(methods.FS_WRITE_TEXT_FILE)
        # No deadline: the client may be asking the person to confirm the change.
        try:
            await host.connection.request(
                methods.FS_WRITE_TEXT_FILE,
                types.WriteTextFileRequest(session_id=self._session_id, path=path, content=content),
            )
        except RequestCancelled:
            raise
        except AcpError as exc:  # the person rejected it in the editor, say
            raise EditorRefused(methods.FS_WRITE_TEXT_FILE, exc.message) from None

    async def updates_sent(self) -> None:
        return None

    async def create_terminal(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> ClientTerminal:
        raise NotOffered("terminals")
