"""The strict client's check (`tests.support.strict_updates`) and the wire it holds us to.

Every end-to-end test runs the check on what the agent wrote (the shared
launcher does); these tests show it catches each way a strict client such as
Toad would drop an update, and that a stored result whose raw output is not an
object (a session recorded before) still goes out as one.
"""

from __future__ import annotations

import json
from typing import Any

from acp_agent.adapters.acp._updates import UpdateTranslator
from acp_agent.core import BatchId, BranchId, CallId, Event, Seq, ToolResultRecorded
from protocol import types
from protocol.converter import shared_converter
from tests.support.strict_updates import strict_problems


def update_line(update: dict[str, Any], session_id: str = "s1") -> bytes:
    params = {"sessionId": session_id, "update": update}
    return json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}).encode()


def call(status: str, **fields: Any) -> dict[str, Any]:
    update = {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "t", "status": status}
    return {**update, **fields}


def progress(status: str | None = None, **fields: Any) -> dict[str, Any]:
    update = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", **fields}
    return update if status is None else {**update, "status": status}


def test_a_tool_call_that_goes_its_way_once_passes():
    lines = [
        update_line(call("pending", rawInput={"path": "a"})),
        update_line(progress("in_progress")),
        update_line(progress(content=[])),
        update_line(progress("completed", rawOutput={"ok": True})),
    ]

    assert strict_problems(lines) == []


def test_a_raw_output_that_is_not_an_object_is_caught():
    lines = [update_line(call("pending")), update_line(progress("completed", rawOutput=[1, 2]))]

    assert strict_problems(lines) == [
        "line 2: rawOutput of c1 is not a JSON object: [1, 2]",
    ]


def test_a_question_whose_raw_input_is_not_an_object_is_caught():
    request = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "session/request_permission",
        "params": {"sessionId": "s1", "toolCall": {"toolCallId": "c1", "rawInput": "ls"}},
    }

    assert strict_problems([json.dumps(request).encode()]) == [
        'line 1: rawInput of c1 is not a JSON object: "ls"'
    ]


def test_a_completed_call_going_back_to_in_progress_is_caught():
    lines = [
        update_line(call("in_progress")),
        update_line(progress("completed")),
        update_line(progress("in_progress")),
        update_line(call("in_progress")),
    ]

    assert strict_problems(lines) == [
        "line 3: tool call c1 went from completed back to in_progress",
        "line 4: tool call c1 announced again after completed",
    ]


def test_an_update_of_a_call_never_announced_is_caught_per_session():
    lines = [update_line(call("pending"), "s1"), update_line(progress("in_progress"), "s2")]

    assert strict_problems(lines) == [
        "line 2: tool_call_update of c1, never announced with tool_call"
    ]


def test_a_stored_list_raw_output_goes_out_as_an_object():
    translator = UpdateTranslator(replay=True)
    recorded = ToolResultRecorded(CallId("c1"), "r1", [], False, raw_output=[{"branch_id": "b1"}])
    event = Event(BranchId("main"), Seq(1), BatchId("b1"), recorded, "tools", 0.0)

    [update] = translator.translate(event)

    assert isinstance(update, types.ToolCallProgress)
    wire = shared_converter().unstructure(update)
    assert wire["rawOutput"] == {"items": [{"branch_id": "b1"}]}


def test_a_load_starts_its_session_afresh():
    replayed = [update_line(call("pending")), update_line(progress("completed"))]
    lines = replayed + replayed + [update_line(progress("in_progress"))]

    # A second load of the session replays its calls again: a new conversation.
    assert strict_problems(lines, {2: {"s1"}}) == [
        "line 5: tool call c1 went from completed back to in_progress"
    ]
    assert strict_problems(lines)[0] == "line 3: tool call c1 announced again after completed"
