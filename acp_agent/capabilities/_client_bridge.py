"""What tools may ask of the editor: its file system (unsaved buffers) and terminals.

Declared here, implemented by the ACP adapter over `fs/*` and `terminal/*`
requests. Each capability is present only when the client advertised it;
tools fall back to the local disk and local processes otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import attrs

from acp_agent.records import Record

__all__ = (
    "NO_CLIENT",
    "ClientBridge",
    "ClientTerminal",
    "NoClient",
    "NotOffered",
    "TerminalExit",
    "TerminalOutput",
)


class NotOffered(NotImplementedError):
    """The client does not offer what a tool asked of it (it should have checked first)."""

    def __init__(self, feature: str) -> None:
        super().__init__(f"the client does not offer {feature}")
        self.feature = feature


@attrs.frozen
class TerminalExit(Record):
    """How a command in a client terminal ended."""

    exit_code: int | None = None
    signal: str | None = None


@attrs.frozen
class TerminalOutput(Record):
    """A terminal's output so far; `exit` is set once the command has ended."""

    output: str
    truncated: bool
    exit: TerminalExit | None = None


class ClientTerminal(Protocol):
    """A command running in a terminal the editor owns (output visible live there)."""

    @property
    def terminal_id(self) -> str: ...

    async def output(self) -> TerminalOutput: ...

    async def wait_for_exit(self) -> TerminalExit: ...

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
