"""The agent under test: one process of the checked command, seen through our client side.

`Probe` starts the command with our `ClientConnection` and keeps everything a
rule may need as evidence: every line the agent wrote, with when it arrived, the
lines we wrote, the lines that were not JSON, and the `fs/*` and `terminal/*`
requests it made (which this client never advertises; they are answered with an
error). Requests are typed (`call`) or raw (`raw_request`, for what the typed side
refuses to send: an unknown method, a bad version).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from protocol import methods, types
from protocol.connection import ClientConnection
from protocol.errors import MethodNotFound

if TYPE_CHECKING:
    from protocol._dispatch import Writer

__all__ = ("Probe", "Received")

#: Client methods this checker never advertises: an agent must not call them.
UNADVERTISED: Final = (
    methods.FS_READ_TEXT_FILE,
    methods.FS_WRITE_TEXT_FILE,
    methods.TERMINAL_CREATE,
    methods.TERMINAL_OUTPUT,
    methods.TERMINAL_WAIT_FOR_EXIT,
    methods.TERMINAL_KILL,
    methods.TERMINAL_RELEASE,
)


@attrs.frozen
class Received:
    """One line the agent wrote, decoded when it is JSON, and when it came."""

    at: float
    line: bytes
    message: Any


class Probe(ClientConnection):
    """One process of the agent command, and what it did."""

    def __init__(self, command: Sequence[str], *, timeout_s: float) -> None:
        super().__init__()
        self.command = list(command)
        self.timeout_s = timeout_s
        self.received: list[Received] = []
        #: Lines we wrote (raw and typed), for the schema check's response types.
        self.sent: list[bytes] = []
        self.not_json: list[bytes] = []
        #: (method, params) of every fs/terminal request the agent made.
        self.unadvertised_calls: list[tuple[str, Any]] = []
        self.permission_requests: list[Any] = []
        self.stderr_tail: list[str] = []
        self._raw_ids = itertools.count(1)
        self._raw_answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        for method in UNADVERTISED:
            self.register(method, self._unadvertised(method))
        self.register(methods.SESSION_REQUEST_PERMISSION, self._permission)
        self.register(methods.SESSION_UPDATE, lambda params: None)

    async def start(self) -> None:
        """Start the command (its stdout and stdin are the connection)."""
        # In the caller's directory, as a shell would run it: relative paths in the
        # command work; the sessions are rooted in the checker's scratch directory.
        await self.start_io(self.command[0], *self.command[1:])
        writer = self.protocol.writer
        assert writer is not None  # set by start_io
        self.protocol.writer = _RecordingWriter(writer, self.sent)

    # --- what the agent writes -------------------------------------------------------

    def line_received(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self.not_json.append(line)
            message = None
        self.received.append(Received(time.monotonic(), line, message))
        if isinstance(message, dict) and "method" not in message:
            answer = self._raw_answers.pop(str(message.get("id")), None)
            if answer is not None and not answer.done():
                answer.set_result(message)

    def stderr_received(self, line: bytes) -> None:
        self.stderr_tail = [*self.stderr_tail[-19:], line.decode("utf-8", "replace").rstrip()]

    def updates(self, session_id: str | None = None, *, since: float = 0.0) -> list[Received]:
        """The `session/update`s received after `since` (of `session_id`, if given)."""
        return [
            r
            for r in self.received
            if r.at > since
            and isinstance(r.message, dict)
            and r.message.get("method") == methods.SESSION_UPDATE
            and (
                session_id is None or (r.message.get("params") or {}).get("sessionId") == session_id
            )
        ]

    # --- what we send -----------------------------------------------------------------

    async def call(self, method: str, params: Any) -> Any:
        """A typed request, bounded by the probe's timeout."""
        return await asyncio.wait_for(self.request(method, params), self.timeout_s)

    async def raw_request(self, method: str, params: Any) -> dict[str, Any]:
        """Send a hand-written request; its whole response message (`TimeoutError` if none)."""
        msg_id = f"check-{next(self._raw_ids)}"
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._raw_answers[msg_id] = answer
        self.raw_send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await asyncio.wait_for(answer, self.timeout_s)

    def raw_send(self, message: dict[str, Any]) -> None:
        writer = self.protocol.writer
        assert writer is not None, "start() first"
        writer.write(json.dumps(message).encode())

    async def initialize(self, version: int = types.PROTOCOL_VERSION) -> dict[str, Any]:
        """`initialize` as a client with no capabilities; the raw response message."""
        return await self.raw_request(
            methods.INITIALIZE,
            {
                "protocolVersion": version,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
                "clientInfo": {"name": "acp-agent-check", "version": "1"},
            },
        )

    async def end_input(self, bound_s: float) -> float | None:
        """Close the agent's stdin; seconds until it exited, or None if not within `bound_s`
        (`close()` then ends it)."""
        process = self.process
        if process is None:
            return None
        began = time.monotonic()
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), bound_s)
        except TimeoutError:
            return None
        return time.monotonic() - began

    async def close(self) -> None:
        """End the process: it had its chance to exit on its own (`end_input`)."""
        with contextlib.suppress(Exception):
            await self.stop(timeout_s=0.1)

    # --- what the agent asks ----------------------------------------------------------

    def _unadvertised(self, method: str) -> Any:
        def refuse(params: Any) -> Any:
            self.unadvertised_calls.append((method, params))
            raise MethodNotFound(f"Method not found: {method} (not advertised)")

        return refuse

    async def _permission(
        self, params: types.RequestPermissionRequest
    ) -> types.RequestPermissionResponse:
        self.permission_requests.append(params)
        for option in params.options:
            if option.kind in (
                types.PermissionOptionKind.REJECT_ONCE,
                types.PermissionOptionKind.REJECT_ALWAYS,
            ):
                return types.RequestPermissionResponse(
                    outcome=types.SelectedPermissionOutcome(option_id=option.option_id)
                )
        return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())


class _RecordingWriter:
    """Writes through to the agent and keeps each line (the schema check needs our ids)."""

    def __init__(self, writer: Writer, sent: list[bytes]) -> None:
        self._writer = writer
        self._sent = sent

    def write(self, data: bytes) -> None:
        self._sent.append(data)
        self._writer.write(data)
