"""A v2 resume replays in as few updates as it takes, and resumes from any of them.

`V2Stream.show_replay` joins consecutive pieces of one message's text, and
consecutive upserts of one tool call, into one update carrying the cursor of the
last it holds. These tests hold it to the per-event stream: a client that applies
either ends in the same state, and a client that got the joined replay up to any
of its cursors and resumes from there ends there too, nothing missing, nothing
twice.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_agent.adapters.acp._updates import UpdateTranslator
from acp_agent.adapters.acp2._stream import V2Stream, V2Translator, joined
from acp_agent.content import TextContent
from acp_agent.core import (
    BatchId,
    BranchId,
    CallId,
    Event,
    ModelRequestFinished,
    ModelRequestStarted,
    ModelStopReason,
    ModelTextDelta,
    Seq,
    ToolCallAdmitted,
    ToolCallCompleted,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultRecorded,
    TurnEnded,
    TurnId,
    TurnStopReason,
    Usage,
    UserInputAdopted,
)
from protocol.converter import shared_converter


class Notes:
    """A connection that keeps the update bodies it is asked to send, one by one or as
    lines written together (a replay)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.writes = 0

    def notify(self, method: str, params: Any) -> None:
        self.notify_encoded(self.encode_notification(method, params))

    def encode_notification(self, method: str, params: Any) -> bytes:
        wire = shared_converter(include_unstable=True).unstructure(params)
        return json.dumps({"jsonrpc": "2.0", "method": method, "params": wire}).encode()

    def notify_encoded(self, lines: bytes) -> None:
        self.writes += 1
        for line in lines.split(b"\n"):
            self.bodies.append(json.loads(line)["params"]["update"])


def _translator() -> V2Translator:
    def made(*, replay: bool) -> UpdateTranslator:
        return UpdateTranslator(
            replay=replay,
            terminal_output=True,
            plan_operations=True,
            notices=True,
            compaction_updates=True,
        )

    return V2Translator(made(replay=False), made(replay=True))


def _turn(n: int) -> list[Any]:
    turn, first, second, call = TurnId(f"t{n}"), f"r{n}a", f"r{n}b", CallId(f"c{n}")
    used = Usage(input_tokens=100, output_tokens=10)
    return [
        UserInputAdopted(f"t{n}", (TextContent(f"Fix it ({n})"),)),
        ModelRequestStarted(first, turn, "scripted/x"),
        ModelTextDelta(first, "I will ", ("I will ", "read ")),
        ModelTextDelta(first, "the parser."),
        ModelRequestFinished(first, ModelStopReason.TOOL_USE, used),
        ToolCallRequested(first, call, "read", {"path": "p.py"}, "Read p.py", "read"),
        ToolCallAdmitted(call),
        ToolCallStarted(call),
        ToolCallCompleted(call, True),
        ToolResultRecorded(call, first, (TextContent("def f(): pass"),), False),
        ModelRequestStarted(second, turn, "scripted/x"),
        ModelTextDelta(second, "Fixed"),
        ModelTextDelta(second, ", it was off by one."),
        ModelRequestFinished(second, ModelStopReason.END_TURN, used),
        TurnEnded(turn, TurnStopReason.END_TURN),
    ]


EVENTS = [
    Event(BranchId("main"), Seq(seq), BatchId(seq), payload, "test", 0.0)
    for seq, payload in enumerate([p for n in range(3) for p in _turn(n)], start=1)
]


def _replay(*, joined_: bool, after: tuple[int, int] | None = None) -> list[dict[str, Any]]:
    notes = Notes()
    stream = V2Stream(notes, "sess_1", _translator())  # type: ignore[arg-type]
    if joined_:
        assert stream.show_replay(EVENTS, after=after) == len(notes.bodies)
        assert notes.writes <= 1  # a small replay: one write
    else:
        for event in EVENTS:
            stream.show(event, after=after)
    return notes.bodies


def _cursor(body: dict[str, Any]) -> tuple[int, int]:
    seq, part = body["_meta"]["acp-agent"]["cursor"].split(":")
    return int(seq), int(part)


def _state(bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """What a v2 client holds after `bodies`: each message's text, each call's fields,
    the states it went through, the rest in order."""
    messages: dict[tuple[str, str], str] = {}
    calls: dict[str, dict[str, Any]] = {}
    states: list[str] = []
    others: list[str] = []
    for body in bodies:
        kind = body["sessionUpdate"]
        if kind.endswith("_chunk"):
            key = (kind, body["messageId"])
            messages[key] = messages.get(key, "") + body["content"]["text"]
        elif kind == "tool_call_update":
            fields = {k: v for k, v in body.items() if k != "_meta"}
            calls[body["toolCallId"]] = {**calls.get(body["toolCallId"], {}), **fields}
        elif kind == "state_update":
            states.append(body["state"])
        else:
            others.append(kind)
    return {"messages": messages, "calls": calls, "states": states, "others": others}


def test_a_joined_replay_leaves_the_client_where_every_update_would() -> None:
    every = _replay(joined_=False)
    fewer = _replay(joined_=True)
    assert _state(fewer) == _state(every)
    # Per turn: running, the prompt, a reply, its call (one upsert), the answer, idle.
    assert len(fewer) == 6 * 3 < len(every)
    assert [_cursor(b) for b in fewer] == sorted(_cursor(b) for b in fewer)


@pytest.mark.parametrize("at", range(6 * 3))
def test_a_resume_from_any_cursor_of_a_joined_replay_misses_and_repeats_nothing(
    at: int,
) -> None:
    fewer = _replay(joined_=True)
    had = fewer[: at + 1]
    rest = _replay(joined_=True, after=_cursor(had[-1]))
    assert _state(had + rest) == _state(fewer)
    assert len(had) + len(rest) == len(fewer)


def test_what_is_joined_and_what_is_not() -> None:
    text = {"sessionUpdate": "agent_message_chunk", "messageId": "m1"}
    a = {**text, "content": {"type": "text", "text": "Hel"}}
    b = {**text, "content": {"type": "text", "text": "lo"}}
    assert joined(a, b) == {**text, "content": {"type": "text", "text": "Hello"}}
    assert joined(a, {**b, "messageId": "m2"}) is None
    assert joined(a, {**b, "sessionUpdate": "agent_thought_chunk"}) is None
    annotated = {**b, "content": {"type": "text", "text": "lo", "annotations": {}}}
    assert joined(a, annotated) is None
    assert joined(a, {**b, "_meta": {"x": 1}}) is None

    call = {"sessionUpdate": "tool_call_update", "toolCallId": "c1"}
    pending = {**call, "title": "Read", "status": "pending", "capabilities": {"cancel": {}}}
    done = {**call, "status": "completed", "capabilities": None}
    assert joined(pending, done) == {
        **call,
        "title": "Read",
        "status": "completed",
        "capabilities": None,
    }
    assert joined(pending, {**done, "toolCallId": "c2"}) is None
    assert joined(pending, {**done, "_meta": {"terminal_info": {}}}) is None
    state = {"sessionUpdate": "state_update", "state": "idle"}
    assert joined(state, state) is None
