"""Whatever a client writes, the agent answers with a coded error and goes on serving.

Hypothesis writes hostile lines (bytes that are no UTF-8, JSON that is no
message, envelopes with every method of the agent side and params of every
shape: deep, wide, huge, wrong types, lone surrogates) to one agent process.
Every request is answered once with a result or an error whose code says why
(never -32603, which would be our own failure), every notification goes
unanswered, and after each line the agent still answers a plain request.
A `cwd` the file system cannot take is -32602 and leaves nothing in the store.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import methods
from tests.support.raw_agent import RawAgent

pytestmark = pytest.mark.e2e

#: The codes a hostile line may be answered with: the client's fault, or "not found".
CLIENT_FAULT_CODES = {-32700, -32600, -32601, -32602, -32002, -32000}
AGENT_METHODS = sorted(
    name for name, spec in methods.REQUESTS.items() if spec.side is methods.Side.AGENT
)
AGENT_NOTIFICATIONS = sorted(
    name for name, spec in methods.NOTIFICATIONS.items() if spec.side is methods.Side.AGENT
)

_ids = itertools.count(1)


class Agent:
    """One agent process shared by every example of a test, with its home."""

    def __init__(self, home: Path, *args: str) -> None:
        self.home = home
        self.raw = RawAgent([sys.executable, "-m", "acp_agent", "--home", str(home), *args])
        self.request("initialize", {"protocolVersion": 1})

    def request(self, method: str, params: Any) -> dict[str, Any]:
        msg_id = f"probe-{next(_ids)}"
        self.raw.send_json({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.answer(msg_id)

    def answer(self, msg_id: Any) -> dict[str, Any]:
        """The response to `msg_id`, skipping notifications and answers to other lines."""
        while True:
            message = self.raw.read_message()
            if "method" not in message and message.get("id") == msg_id:
                return message

    def answers_to(self, msg_id: Any) -> list[dict[str, Any]]:
        """Every response to `msg_id` received so far."""
        found = []
        for line in self.raw.received:
            message = json.loads(line)
            if "method" not in message and message.get("id") == msg_id:
                found.append(message)
        return found

    def still_serving(self) -> None:
        answer = self.request("session/list", {})
        assert "result" in answer, answer


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    served = Agent(tmp_path_factory.mktemp("hostile-home"))
    yield served
    assert served.raw.stop() == 0


def json_values(max_leaves: int = 20) -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text()
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=max_leaves,
    )


def deep(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"x": [value]}
    return value


params_shapes = st.one_of(
    json_values(),
    st.builds(deep, st.integers(1, 400)),
    st.dictionaries(
        st.sampled_from(
            ["sessionId", "cwd", "prompt", "mcpServers", "modeId", "configId", "value", "_meta"]
        ),
        json_values(8)
        | st.sampled_from(["/", "\ud800", "/tmp/\x00", "x" * 100_000, "sess_unknown"]),
    ),
)


def ids() -> st.SearchStrategy[Any]:
    return st.one_of(st.integers(), st.text(max_size=20), st.none(), st.booleans(), st.floats())


@settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    method=st.sampled_from(AGENT_METHODS) | st.text(max_size=30),
    params=params_shapes,
    msg_id=st.integers(0, 2**31),
)
def test_every_request_is_answered_once_with_a_coded_error_or_a_result(
    agent: Agent, method: str, params: Any, msg_id: int
):
    if method == "session/prompt":
        params = params if not isinstance(params, dict) else {**params, "sessionId": "sess_none"}
    wire_id = f"hostile-{msg_id}-{next(_ids)}"
    agent.raw.send_json({"jsonrpc": "2.0", "id": wire_id, "method": method, "params": params})
    answer = agent.answer(wire_id)
    if "error" in answer:
        assert answer["error"]["code"] in CLIENT_FAULT_CODES, answer
        assert isinstance(answer["error"]["message"], str)
    else:
        assert "result" in answer
    agent.still_serving()
    assert len(agent.answers_to(wire_id)) == 1


@settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(method=st.sampled_from(AGENT_NOTIFICATIONS) | st.text(max_size=30), params=params_shapes)
def test_no_notification_is_answered_and_the_agent_serves_on(
    agent: Agent, method: str, params: Any
):
    agent.raw.send_json({"jsonrpc": "2.0", "method": method, "params": params})
    agent.still_serving()  # fails on any answer to the notification


hostile_lines = st.one_of(
    st.binary(min_size=1).filter(lambda b: b"\n" not in b and b.strip()),
    json_values().map(lambda v: json.dumps(v).encode()),
    st.builds(
        lambda msg_id, extra: json.dumps({"jsonrpc": "2.0", "id": msg_id, **extra}).encode(),
        ids(),
        st.dictionaries(st.sampled_from(["method", "params", "result", "error"]), json_values(4)),
    ),
    st.sampled_from(
        [
            b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":NaN}',
            b'{"jsonrpc":"2.0","id":1e400,"method":"session/list"}',
            b'{"jsonrpc":"2.0","id":"\\ud800","method":"\\ud800"}',
            b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"\\ud800"}}',
            b"\xff\xfe\x00{}",
            b"[" * 5000 + b"]" * 5000,
            b'{"jsonrpc":"2.0","id":[],"method":"initialize"}',
        ]
    ),
)


@settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(line=hostile_lines)
def test_any_line_gets_at_most_one_coded_answer_and_the_agent_serves_on(agent: Agent, line: bytes):
    before = len(agent.raw.received)
    agent.raw.send(line + b"\n")
    agent.still_serving()
    answers = [
        json.loads(received)
        for received in agent.raw.received[before:]
        if b'"method"' not in received[:40]
    ]
    # The probe's own answer is the last; anything before it answered the hostile line.
    for answer in answers[:-1]:
        if "error" in answer:
            assert answer["error"]["code"] in CLIENT_FAULT_CODES | {-32603}, answer
            # An internal error must never come from a line we could have refused.
            assert answer["error"]["code"] != -32603, (line[:200], answer)
    assert len(answers) <= 2


@pytest.mark.parametrize(
    "cwd",
    ["/tmp/a\x00b", "/tmp/\ud800", "relative/path", "/" + "a" * 5000],
    ids=["nul", "lone-surrogate", "relative", "too-long"],
)
@pytest.mark.parametrize(
    "method", ["session/new", "session/load", "session/resume", "session/list", "session/fork"]
)
def test_a_cwd_the_file_system_cannot_take_is_invalid_params_and_stores_nothing(
    tmp_path: Path, method: str, cwd: str
):
    home = tmp_path / "home"
    agent = Agent(home, "--unstable")
    try:
        answer = agent.request(method, {"cwd": cwd, "sessionId": "sess_none", "mcpServers": []})
        listed = agent.request("session/list", {})
    finally:
        assert agent.raw.stop() == 0
    assert answer["error"]["code"] == -32602, answer
    assert "cwd" in answer["error"]["message"]
    assert listed["result"]["sessions"] == []
    database = home / "data" / "sessions.sqlite3"
    if database.exists():
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
