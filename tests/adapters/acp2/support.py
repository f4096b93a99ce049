"""A v2 client for tests: the real agent over its pipes, JSON lines, every line kept.

`V2Client` sends requests and waits for their answers while reading everything
else the agent writes: `session/update`s (kept in order, per session), and the
agent's own requests, answered at once (`session/request_permission` by
`answers`, in order; the first option of its kind). Each line it read can be
checked against the v2 schema afterwards (`problems`).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from protocol.validation import WireValidator
from tests.support.raw_agent import RawAgent

__all__ = ("V2Client", "initialize_v2")

_V2 = WireValidator(protocol_version=2)
_V2_UNSTABLE = WireValidator(protocol_version=2, unstable=True)
#: How long a test waits for what should come; only failing tests wait this long.
WAIT_S = 15.0


class V2Client:
    """One agent process spoken to in ACP v2 (see the module docstring)."""

    def __init__(
        self, command: Sequence[str], env: dict[str, str], *, unstable: bool = False
    ) -> None:
        """`unstable`: the agent runs with `--unstable`, its lines read against the v2
        draft's unstable schema."""
        self.agent = RawAgent(command, env=env)
        self._schema = _V2_UNSTABLE if unstable else _V2
        self._ids = itertools.count(1)
        #: Every notification the agent sent, in order.
        self.notifications: list[dict[str, Any]] = []
        #: The agent's requests to us, in order.
        self.requests: list[dict[str, Any]] = []
        #: Kinds of permission answer to give, in order ("allow_once", ...); then cancelled.
        self.answers: list[str] = []
        #: Hold permission questions unanswered (a test answers them itself).
        self.hold_questions = False
        self._responses: dict[Any, dict[str, Any]] = {}

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The `session/update` bodies received so far (of one session, if given)."""
        return [
            n["params"]["update"]
            for n in self.notifications
            if n.get("method") == "session/update"
            and (session_id is None or n["params"]["sessionId"] == session_id)
        ]

    def send(self, method: str, params: dict[str, Any]) -> int:
        """Send request `method`; returns its id (the answer: `response`)."""
        request_id = next(self._ids)
        self.agent.send_json(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        )
        return request_id

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.agent.send_json({"jsonrpc": "2.0", "method": method, "params": params})

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and return its whole answer (`result` or `error`)."""
        return self.response(self.send(method, params))

    def response(self, request_id: int) -> dict[str, Any]:
        self.read_until(lambda: request_id in self._responses)
        return self._responses.pop(request_id)

    def read_until(self, done: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
        """Read and dispatch lines until `done()`; fails the test after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out waiting for the agent")
            self._dispatch(self.agent.read_message(left))

    def wait_update(
        self, session_id: str, match: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any]:
        """Read until an update of `session_id` matches; return it."""
        seen = len(self.updates(session_id))

        def found() -> bool:
            return any(match(u) for u in self.updates(session_id)[seen:])

        self.read_until(found)
        return next(u for u in self.updates(session_id)[seen:] if match(u))

    def wait_idle(self, session_id: str) -> dict[str, Any]:
        """Read until the session's foreground work is `idle`; return that update."""
        return self.wait_update(session_id, is_idle)

    def answer(self, request: dict[str, Any], kind: str | None) -> None:
        """Answer a permission question: the first option of `kind`, None: cancelled."""
        if kind is None:
            outcome: dict[str, Any] = {"outcome": "cancelled"}
        else:
            option = next(o for o in request["params"]["options"] if o["kind"] == kind)
            outcome = {"outcome": "selected", "optionId": option["optionId"]}
        self.agent.send_json(
            {"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": outcome}}
        )

    def problems(self) -> list[str]:
        """Every line the agent wrote that breaks the v2 schema."""
        return self._schema.problems(_unbatched(self.agent.sent), self.agent.received)

    def stop(self) -> int:
        return self.agent.stop()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            self._responses[message.get("id")] = message
        elif "id" in message:
            self.requests.append(message)
            if message["method"] == "session/request_permission" and not self.hold_questions:
                self.answer(message, self.answers.pop(0) if self.answers else None)
        else:
            self.notifications.append(message)


def _unbatched(lines: list[bytes]) -> list[bytes]:
    """The lines sent, a batch's entries as lines of their own (what each response answers)."""
    out: list[bytes] = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        if isinstance(value, list):
            out.extend(json.dumps(entry).encode() for entry in value)
        else:
            out.append(line)
    return out


def is_idle(update: dict[str, Any]) -> bool:
    return update.get("sessionUpdate") == "state_update" and update.get("state") == "idle"


def cursor_of(update: dict[str, Any]) -> str | None:
    return ((update.get("_meta") or {}).get("acp-agent") or {}).get("cursor")


def initialize_v2(client: V2Client, version: int = 2) -> dict[str, Any]:
    """`initialize` as a v2 client; returns the result."""
    answer = client.call(
        "initialize",
        {
            "protocolVersion": version,
            "info": {"name": "v2-test", "version": "1.0"},
            "capabilities": {},
        },
    )
    assert "result" in answer, answer
    return answer["result"]
