"""What tools may ask of the editor: its file system (unsaved buffers) and terminals.

Declared here, implemented by the ACP adapter over `fs/*` and `terminal/*`
requests. Each capability is present only when the client advertised it;
tools fall back to the local disk and local processes otherwise.

No request waits forever: each has a deadline (`ClientBridge.request_timeout_s`)
and raises `ClientTimedOut` when it passes, except the wait for a terminal's
exit, which its caller bounds (a command's `timeout_s`; a background job runs
for hours and is checked by `output` polls instead). Text the editor returns
(files, terminal output) holds no lone surrogate: each became U+FFFD.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Protocol

import attrs

from acp_agent.values import Value

__all__ = (
    "DEFAULT_REQUEST_TIMEOUT_S",
    "NO_CLIENT",
    "ClientBridge",
    "ClientTerminal",
    "ClientTimedOut",
    "EditorRefused",
    "NoClient",
    "NotOffered",
    "TerminalExit",
    "TerminalOutput",
    "TerminalRefused",
    "TerminalsWithheld",
)


#: How long a request to the editor waits for its answer unless configured otherwise:
#: long enough for a slow editor (a large file, a busy machine).
DEFAULT_REQUEST_TIMEOUT_S: Final = 30.0


class NotOffered(NotImplementedError):
    """The client does not offer what a tool asked of it (it should have checked first)."""

    def __init__(self, feature: str) -> None:
        super().__init__(f"the client does not offer {feature}")
        self.feature = feature


class EditorRefused(Exception):
    """The editor answered a file request with an error (its permission policy, a file it
    will not touch): that request did nothing. `request` is the ACP method, `reason` the
    editor's message."""

    def __init__(self, request: str, reason: str) -> None:
        super().__init__(f"the editor refused {request}: {reason}")
        self.request = request
        self.reason = reason


class TerminalRefused(Exception):
    """The editor answered `terminal/create` with an error (its permission policy, say):
    no terminal was started and nothing ran."""


class ClientTimedOut(Exception):
    """The editor did not answer a request within its deadline; the request was withdrawn.

    Whether the editor carried it out anyway is unknown: a write may have landed,
    a command may have started. `request` is the ACP method, for messages.
    """

    def __init__(self, request: str, timeout_s: float) -> None:
        super().__init__(f"the editor did not answer {request} within {timeout_s:g} s")
        self.request = request
        self.timeout_s = timeout_s


@attrs.frozen
class TerminalExit(Value):
    """How a command in a client terminal ended."""

    exit_code: int | None = None
    signal: str | None = None


@attrs.frozen
class TerminalOutput(Value):
    """A terminal's output so far; `exit` is set once the command has ended."""

    output: str
    truncated: bool
    exit: TerminalExit | None = None


class ClientTerminal(Protocol):
    """A command running in a terminal the editor owns (output visible live there)."""

    @property
    def terminal_id(self) -> str: ...

    async def output(self) -> TerminalOutput: ...

    async def wait_for_exit(self, *, bounded: bool = False) -> TerminalExit:
        """Until the command ends: as long as it takes, or with `bounded` no longer than
        any other request to the editor (`ClientTimedOut` then)."""
        ...

    async def kill(self) -> None: ...

    async def release(self) -> None:
        """Free the terminal; always called, also after `kill`."""
        ...


class ClientBridge(Protocol):
    """The editor's side of a session, as far as tools are concerned."""

    #: `fs/read_text_file` is available (reads see unsaved buffers).
    @property
    def can_read_files(self) -> bool: ...

    #: `fs/write_text_file` is available (the editor tracks the edit for review).
    @property
    def can_write_files(self) -> bool: ...

    #: `terminal/*` is available.
    @property
    def has_terminals(self) -> bool: ...

    #: The client renders `_meta.terminal_output` streaming (Zed's extension).
    @property
    def streams_terminal_output(self) -> bool: ...

    #: How long each request to the editor waits for its answer (`ClientTimedOut` after).
    @property
    def request_timeout_s(self) -> float: ...

    async def read_text_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str: ...

    async def write_text_file(self, path: str, content: str) -> None: ...

    async def updates_sent(self) -> None:
        """Return once the updates recorded so far have reached the editor (bounded wait):
        a terminal is shown before it is awaited, and released only after."""
        ...

    async def create_terminal(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> ClientTerminal: ...


class NoClient:
    """A client that offers nothing: every tool uses the local fallback."""

    can_read_files = False
    can_write_files = False
    has_terminals = False
    streams_terminal_output = False
    request_timeout_s = DEFAULT_REQUEST_TIMEOUT_S

    async def read_text_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        raise NotOffered("fs/read_text_file")

    async def write_text_file(self, path: str, content: str) -> None:
        raise NotOffered("fs/write_text_file")

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


NO_CLIENT = NoClient()


class TerminalsWithheld:
    """`client` without its terminals: commands run locally, files still go through it.

    What a branch shown as a row of main's turn uses: a terminal the editor
    creates for it would be shown where the editor puts new terminals (at the
    bottom of the conversation, under whatever row is last), or refused outside
    a prompt, never in the branch's row.
    """

    has_terminals = False
    streams_terminal_output = False

    def __init__(self, client: ClientBridge) -> None:
        self._client = client

    @property
    def can_read_files(self) -> bool:
        return self._client.can_read_files

    @property
    def can_write_files(self) -> bool:
        return self._client.can_write_files

    @property
    def request_timeout_s(self) -> float:
        return self._client.request_timeout_s

    async def read_text_file(
        self, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        return await self._client.read_text_file(path, line=line, limit=limit)

    async def write_text_file(self, path: str, content: str) -> None:
        await self._client.write_text_file(path, content)

    async def updates_sent(self) -> None:
        await self._client.updates_sent()

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
