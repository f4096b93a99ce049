"""The stdio transport: a server subprocess in its own process group.

Like the SDK's `stdio_client`, but it keeps what we need to report and to
clean up: the process (its exit code or signal for error messages), the
last lines of its stderr (read from a pipe into a small ring, also logged
at debug level), and the process group, which is always signalled when
the connection ends, even when the server itself exited promptly and left
children behind.

Ending a server: close its stdin, give it `EXIT_GRACE_S` to exit, signal
its group with SIGTERM, and after `KILL_AFTER_S` with SIGKILL.

Given a `Sandbox` (a server declared with `sandbox = true`) the server runs
inside it, bwrap leading the group in its place.

A message holding a lone surrogate (`\\ud800`, which JSON allows and the SDK's
own parser refuses) is taken with each one replaced by U+FFFD, the Unicode policy
for outside text (`acp_agent.lone_surrogates`), rather than dropped: a dropped
answer would leave its call waiting.

A message is held whole at most twice at any moment, as a bare reader holds it
(a tool result of megabytes is read in bounded memory): its line is decoded to
text and freed, the text parsed with `json.loads` and freed, and the values
validated in place (pydantic keeps the strings it is given). The SDK's own
`validate_json` costs about three times more for a big result: it builds the
message once in Rust and again in Python.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import re
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, Final

import anyio
import mcp.types as mcp_types
from anyio.abc import Process
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from acp_agent.lone_surrogates import replace_in_json
from acp_agent.process_groups import process_groups
from acp_agent.sandbox import Sandbox, places_in_tmp
from jsonbounds import LineSplitter, OverLongLine

__all__ = (
    "EXIT_GRACE_S",
    "KILL_AFTER_S",
    "MAX_MESSAGE_BYTES",
    "ServerProcess",
    "message_id",
    "stdio_transport",
    "take_message",
)

logger = logging.getLogger(__name__)

#: After stdin closes, how long a server may take to exit on its own.
EXIT_GRACE_S: Final = 2.0
#: After SIGTERM to its group, how long before SIGKILL.
KILL_AFTER_S: Final = 2.0
_POLL_S: Final = 0.01
_STDERR_LINES: Final = 20
_STDERR_LINE_CHARS: Final = 500
#: A stderr line is kept whole up to this (only its start is ever shown).
_STDERR_LINE_BYTES: Final = 64 * 1024
#: The largest message a server may send over stdio (newline excluded): generous for
#: tool results (the result budget caps what is kept of them), and what one message
#: may cost in memory. A longer one is dropped and answered as an error.
MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024

_ID: Final = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def message_id(head: bytes) -> int | str | None:
    """The JSON-RPC id in the first bytes of a message, if they name one."""
    found = _ID.search(head)
    if found is None:
        return None
    raw = found.group(1)
    if raw.startswith(b'"'):
        return raw[1:-1].decode("utf-8", "replace")
    return int(raw)


class ServerProcess:
    """What we know of a running (or ended) server process."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.process: Process | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)

    def stderr_tail(self) -> str:
        """The last lines it wrote to stderr."""
        return "\n".join(self._stderr)

    def add_stderr(self, line: str) -> None:
        line = line.rstrip()
        if line:
            self._stderr.append(line[:_STDERR_LINE_CHARS])
            logger.debug("MCP server %s stderr: %s", self.name, line)

    def exit_description(self) -> str | None:
        """How the process ended, or None while it runs."""
        if self.process is None or self.process.returncode is None:
            return None
        code = self.process.returncode
        if code < 0:
            try:
                return f"the server process was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"the server process was killed by signal {-code}"
        return f"the server process exited with code {code}"

    async def wait_exit_description(self, timeout_s: float) -> str | None:
        """How it ended, waiting up to `timeout_s` (its stdout usually closes first)."""
        await _wait(lambda: self.exit_description() is not None, timeout_s)
        return self.exit_description()


def _over_long(server: str, line: OverLongLine) -> SessionMessage | Exception:
    """What the session gets for a message over the limit: an error answer to the request
    it answered (so the call ends at once, saying why), else an error to log."""
    reason = (
        f"MCP server {server!r} sent a message of {line.size_bytes} bytes, over the limit of "
        f"{MAX_MESSAGE_BYTES} bytes; it was dropped"
    )
    logger.warning("%s", reason)
    msg_id = message_id(line.head)
    if msg_id is None or b'"method"' in line.head:
        return ValueError(reason)
    error = mcp_types.JSONRPCError(
        jsonrpc="2.0",
        id=msg_id,
        error=mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=reason),
    )
    return SessionMessage(error)


def _stderr_text(line: bytes | bytearray | OverLongLine) -> str:
    if isinstance(line, OverLongLine):
        return line.head.decode("utf-8", "replace") + f" [... {line.size_bytes} bytes in all]"
    return line.decode("utf-8", "replace")


def take_message(line: bytearray) -> SessionMessage | Exception:
    """The message on `line`, or why there is none. Takes the line: its buffer is
    emptied once decoded, so the message is never bytes, text and values at once."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc
    line.clear()
    escaped = "\\u" in text  # only an escape makes a lone surrogate of valid UTF-8
    try:
        value = json.loads(text)
        del text
        if escaped:
            value = replace_in_json(value)
    except RecursionError:
        return ValueError("the message nests too deep to read")
    except ValueError as exc:
        return exc
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValueError as exc:
        return exc
    return SessionMessage(message)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _wait(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Poll `predicate` until true (True) or `timeout_s` passes (False).

    Polling, not `process.wait()`: on asyncio that also waits for the pipes to
    close, which a child that inherited them can keep open indefinitely.
    """
    with anyio.move_on_after(timeout_s):
        while not predicate():  # noqa: ASYNC110 - nothing to wait on but the poll
            await anyio.sleep(_POLL_S)
        return True
    return False


async def _stop(process: Process) -> None:
    """Close stdin, let it exit, then end its whole process group."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    await _wait(lambda: process.returncode is not None, EXIT_GRACE_S)
    pgid = process.pid  # the leader of a new session: its pid is the group id
    if _group_alive(pgid):
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        if not await _wait(
            lambda: not _group_alive(pgid) and process.returncode is not None, KILL_AFTER_S
        ):
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            await _wait(lambda: process.returncode is not None, KILL_AFTER_S)


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    env: Mapping[str, str],
    cwd: Path | str | None,
    info: ServerProcess,
    sandbox: Sandbox | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and yield the SDK's (read, write) stream pair over its stdio.

    The read side ends when the server closes its stdout (usually: it exited).
    Leaving ends the server and its process group (shielded: a cancelled caller
    cannot leak it). With a `sandbox` it runs confined to it.
    """
    environment = {**get_default_environment(), **env}
    argv = [command, *args]
    if sandbox is not None:
        # Its environment stays as declared: the base holds no keys, and `env` is the
        # person's own choice for this server.
        # Its own program and script stay readable where they live under `/tmp`.
        where = Path(cwd) if cwd is not None else Path.cwd()
        argv = sandbox.wrap(
            argv, cwd=where, show=places_in_tmp([shutil.which(command) or command, *args])
        )
    # A group of its own, registered before the server runs: the agent's reaper ends it
    # if the agent dies. The door opens with the first line on its stdin.
    gate = process_groups().gate(argv, protocol_stdin=True, env=environment, cwd=cwd)
    process = await anyio.open_process(
        gate.argv,
        env=environment,
        cwd=cwd,
        start_new_session=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    info.process = process
    registration = gate.admit(process.pid)
    if gate.first_line:
        assert process.stdin is not None
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.send(gate.first_line)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_stdout() -> None:
        assert process.stdout is not None
        lines = LineSplitter(MAX_MESSAGE_BYTES)
        async with read_send:
            with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                async for chunk in process.stdout:
                    for line in lines.feed(chunk):
                        if isinstance(line, OverLongLine):
                            await read_send.send(_over_long(info.name, line))
                        elif line and not line.isspace():  # `strip()` would copy it
                            await read_send.send(take_message(line))

    async def write_stdin() -> None:
        assert process.stdin is not None
        async with write_receive:
            try:
                async for message in write_receive:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                # The server stopped reading: let the session see the end, not hang.
                await read_send.aclose()

    async def read_stderr() -> None:
        assert process.stderr is not None
        lines = LineSplitter(_STDERR_LINE_BYTES)
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for chunk in process.stderr:
                for line in lines.feed(chunk):
                    info.add_stderr(_stderr_text(line))
        last = lines.end()
        if last is not None:
            info.add_stderr(_stderr_text(last))

    async with anyio.create_task_group() as group:
        group.start_soon(read_stdout)
        group.start_soon(write_stdin)
        group.start_soon(read_stderr)
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):
                write_send.close()
                read_receive.close()
                await _stop(process)
                with anyio.move_on_after(KILL_AFTER_S):
                    await process.aclose()
                if registration is not None:
                    registration.release()
            group.cancel_scope.cancel()
