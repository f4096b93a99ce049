"""The ACP test client: our `ClientConnection`, recording everything for assertions.

It keeps every line both ways (to check the wire against the schema and a
strict client's demands, and to assert on exact bytes), the agent's stderr,
and every `session/update`, with `wait_for_update` to await one. `updates_for` gives a session's
conversation (what its turns showed); the updates about the session itself
(its commands, title, mode and options) are in `session_updates_for`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from protocol import methods, types
from protocol.connection import ClientConnection
from tests.support.schema_validation import negotiated_problems
from tests.support.strict_updates import strict_problems

__all__ = ("SESSION_LEVEL_UPDATES", "UPDATE_TIMEOUT_S", "AcpTestClient")

#: How long a test waits for an update that should come; generous on purpose,
#: only a failing test ever waits this long.
UPDATE_TIMEOUT_S = 10.0

#: Updates about a session rather than its conversation.
SESSION_LEVEL_UPDATES = (
    types.AvailableCommandsUpdate,
    types.SessionInfoUpdate,
    types.CurrentModeUpdate,
    types.ConfigOptionUpdate,
)


class _RecordingWriter:
    """Passes writes on and keeps a copy of each line."""

    def __init__(self, inner: Any, lines: list[bytes], on_write: Callable[[bytes], None]):
        self._inner = inner
        self._lines = lines
        self._on_write = on_write

    def write(self, data: bytes) -> None:
        self._lines.append(data)
        self._inner.write(data)
        self._on_write(data)

    def close(self) -> None:
        self._inner.close()


class AcpTestClient(ClientConnection):
    """A `ClientConnection` that records the wire and collects `session/update`s."""

    def __init__(self, *, unstable: bool = False):
        super().__init__(unstable=unstable)
        #: Lines the agent wrote to stdout, in order.
        self.received: list[bytes] = []
        #: Lines we wrote to the agent's stdin, in order.
        self.sent: list[bytes] = []
        #: What the agent wrote to stderr.
        self.stderr_lines: list[str] = []
        #: Every session/update, in arrival order.
        self.updates: list[types.SessionNotification] = []
        self._update_arrived = asyncio.Event()
        self._activity = asyncio.Event()
        #: The sessions loaded from each point on (an index into `received`).
        self._loads: dict[int, set[str]] = {}
        self._raw_ids = 0
        self.register(methods.SESSION_UPDATE, self._on_update)

    async def start_io(self, cmd: str, *args: str, **kwargs: Any) -> None:
        await super().start_io(cmd, *args, **kwargs)
        self.protocol.writer = _RecordingWriter(self.protocol.writer, self.sent, self._wrote)

    def _wrote(self, line: bytes) -> None:
        self._activity.set()
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return  # tests send garbage on purpose
        if isinstance(message, dict) and message.get("method") == methods.SESSION_LOAD:
            session_id = str((message.get("params") or {}).get("sessionId"))
            self._loads.setdefault(len(self.received), set()).add(session_id)

    def line_received(self, line: bytes) -> None:
        self.received.append(line)
        self._activity.set()

    def stderr_received(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace")
        self.stderr_lines.append(text)
        self._activity.set()
        super().stderr_received(line)

    async def wait_until(
        self, condition: Callable[[], bool], *, timeout_s: float = UPDATE_TIMEOUT_S
    ) -> None:
        """Return once `condition()` holds, re-checking whenever a line comes or goes."""
        async with asyncio.timeout(timeout_s):
            while not condition():
                self._activity.clear()
                await self._activity.wait()

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The agent's lines, decoded."""
        return [json.loads(line) for line in self.received]

    def send_raw(self, message: dict[str, Any]) -> None:
        """Write `message` as it is, bypassing the typed API (for protocol-level probes)."""
        self.protocol.writer.write(json.dumps(message).encode())

    def sent_messages(self) -> list[dict[str, Any]]:
        """Our lines, decoded."""
        return [json.loads(line) for line in self.sent]

    async def request_raw(
        self, method: str, params: Any, *, timeout_s: float = UPDATE_TIMEOUT_S
    ) -> dict[str, Any]:
        """Send a hand-written request and return the agent's whole response message."""
        self._raw_ids += 1
        msg_id = f"raw-{self._raw_ids}"
        self.send_raw({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

        def answer() -> dict[str, Any] | None:
            for message in self.messages:
                if message.get("id") == msg_id and "method" not in message:
                    return message
            return None

        await self.wait_until(lambda: answer() is not None, timeout_s=timeout_s)
        response = answer()
        assert response is not None
        return response

    def _on_update(self, params: types.SessionNotification) -> None:
        self.updates.append(params)
        self._update_arrived.set()

    async def wait_for_update(
        self,
        session_id: str,
        matches: Callable[[types.SessionUpdate], bool] | None = None,
        *,
        after: int = 0,
        timeout_s: float = UPDATE_TIMEOUT_S,
    ) -> types.SessionUpdate:
        """The first update for `session_id` at index >= `after` that `matches`.

        By default the first conversation update (session-level ones do not count).
        """
        if matches is None:
            matches = _conversation
        async with asyncio.timeout(timeout_s):
            while True:
                for notification in self.updates[after:]:
                    if notification.session_id == session_id and matches(notification.update):
                        return notification.update
                self._update_arrived.clear()
                await self._update_arrived.wait()

    def updates_for(self, session_id: str) -> list[types.SessionUpdate]:
        """The conversation updates received so far for `session_id` (no session-level ones)."""
        return [
            update
            for update in self.session_updates_for(session_id)
            if not isinstance(update, SESSION_LEVEL_UPDATES)
        ]

    def session_updates_for(self, session_id: str) -> list[types.SessionUpdate]:
        """Every update received so far for `session_id`, session-level ones included."""
        return [n.update for n in self.updates if n.session_id == session_id]

    def wire_problems(self) -> list[str]:
        """Every way the agent's lines break the schema that governs each (the unstable one
        for a shape this client negotiated: `negotiated_problems`), or would be dropped by
        a strict client (`strict_updates`); empty when all are valid."""
        schema = negotiated_problems(self.sent, self.received, unstable=self.unstable)
        return schema + strict_problems(self.received, self._loads)


def _conversation(update: types.SessionUpdate) -> bool:
    return not isinstance(update, SESSION_LEVEL_UPDATES)
