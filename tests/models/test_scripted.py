"""The scripted provider: its file format, which reply answers which request, and playback."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from acp_agent.models import (
    ContextWindowExceeded,
    Message,
    ModelEvent,
    ModelProvider,
    ModelRequest,
    RateLimited,
    ReasoningDelta,
    ReplyBuilder,
    RequestOrigin,
    ResponseEnded,
    Script,
    ScriptedProvider,
    ScriptError,
    StopReason,
    StreamBroken,
    Text,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallEnded,
    ToolCallStarted,
    UsageReported,
    load_script,
    parse_script,
)
from acp_agent.models import TextDelta as ModelTextDelta
from acp_agent.models._scripted import (
    DEFAULT_CONTEXT_WINDOW,
    SUMMARY,
    Fail,
    Sleep,
    Stop,
    TextDelta,
    ThoughtDelta,
    ToolCallStep,
    UsageStep,
)

REQUEST = ModelRequest(model="greeting", guide="Guide.", messages=[Message("user", [Text("Hi")])])
USAGE = UsageReported(input_tokens=7, output_tokens=3)


async def play(provider: ModelProvider, request: ModelRequest = REQUEST) -> list[ModelEvent]:
    async with provider.stream(request) as events:
        return [event async for event in events]


def provider_for(*replies: list[dict[str, Any]]) -> ScriptedProvider:
    return ScriptedProvider(parse_script({"replies": list(replies)}))


def test_a_script_parses_into_replies_of_steps_in_order():
    script = parse_script(
        {
            "replies": [
                [{"thought": "t"}, {"text": "a"}, {"sleep_ms": 5}, {"text": "b"}],
                [
                    {"tool_call": {"name": "read", "arguments": {"path": "a.py"}, "id": "c1"}},
                    {"tool_call": {"name": "shell", "arguments": "{not json"}},
                    {"usage": {"input_tokens": 7, "output_tokens": 3}},
                    {"stop": "max_tokens"},
                ],
                [{"text": "x"}, {"error": "stream_broken", "message": "the line dropped"}],
            ],
            "context_window": 1000,
        },
        name="greeting",
    )

    assert script == Script(
        (
            (ThoughtDelta("t"), TextDelta("a"), Sleep(5), TextDelta("b")),
            (
                ToolCallStep("read", '{"path":"a.py"}', "c1"),
                ToolCallStep("shell", "{not json"),
                UsageStep(USAGE),
                Stop(StopReason.MAX_TOKENS),
            ),
            (TextDelta("x"), Fail("stream_broken", "the line dropped")),
        ),
        context_window=1000,
        name="greeting",
    )
    assert script.model_id == "scripted/greeting"


def test_reply_i_answers_request_i_and_the_last_reply_repeats():
    script = parse_script({"replies": [[{"text": "one"}], [{"text": "two"}]]})

    assert [script.reply_for(i) for i in range(4)] == [
        (TextDelta("one"),),
        (TextDelta("two"),),
        (TextDelta("two"),),
        (TextDelta("two"),),
    ]
    assert script.context_window == DEFAULT_CONTEXT_WINDOW


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        ([[{"text": "a"}]], 'an object with "replies"'),
        ({"replies": [], "extra": 1}, 'an object with "replies"'),
        ({"replies": []}, "non-empty list"),
        ({"replies": [[]], "context_window": 0}, "context_window"),
        ({"replies": [{"text": "a"}]}, "replies[0] must be a list"),
        ({"replies": [[{"text": "a", "thought": "b"}]]}, "replies[0][0] must be an object"),
        ({"replies": [[{"text": 5}]]}, "replies[0][0].text must be a string"),
        ({"replies": [[{"sleep_ms": -1}]]}, "sleep_ms must be a non-negative integer"),
        ({"replies": [[{"sleep_ms": True}]]}, "sleep_ms must be a non-negative integer"),
        (
            {"replies": [[{"tool_call": {}}]]},
            'replies[0][0].tool_call must be an object with "name"',
        ),
        ({"replies": [[{"tool_call": {"name": "x", "arguments": 3}}]]}, "arguments must be"),
        ({"replies": [[{"usage": {"tokens": 3}}]]}, "usage must be an object"),
        ({"replies": [[{"stop": "tired"}]]}, "stop must be one of end_turn"),
        ({"replies": [[{"error": "gremlins"}]]}, "error must be one of rate_limited"),
        ({"replies": [[{"stop": "end_turn"}, {"text": "a"}]]}, '"stop" step must be the last'),
        ({"replies": [[{"error": "timeout"}, {"text": "a"}]]}, '"error" step must be the last'),
        ({"replies": [[{"error": "stream_broken"}]]}, '"stream_broken" needs a text'),
        ({"replies": [[{"say": "hi"}]]}, "unknown step 'say'"),
        ({"replies": [[]], "branches": {}}, '"branches" must be a list'),
        ({"replies": [[]], "branches": [{"title": "x"}]}, "branches[0] must be an object"),
        ({"replies": [[]], "branches": [{"replies": []}]}, "branches[0].replies must be"),
        ({"replies": [[]], "branches": [{"replies": [[]], "title": 3}]}, "branches[0].title"),
        (
            {"replies": [[]], "branches": [{"replies": [[{"text": 5}]]}]},
            "branches[0].replies[0][0].text must be a string",
        ),
    ],
)
def test_a_malformed_script_is_refused_with_the_place_named(data: Any, complaint: str):
    with pytest.raises(ScriptError, match=re.escape(complaint)):
        parse_script(data)


def test_each_branch_plays_its_entry_by_title_then_by_order_of_creation():
    script = parse_script(
        {
            "replies": [[{"text": "main"}]],
            "branches": [
                {"replies": [[{"text": "first"}]]},
                {"replies": [[{"text": "tests"}], [{"text": "tests again"}]], "title": "tests"},
            ],
        }
    )
    assert script.for_line(None) is script
    assert script.for_line(RequestOrigin()) is script  # the main line
    assert script.for_line(RequestOrigin(0)).reply_for(0) == (TextDelta("first"),)
    # Matched by title wherever it was created; its requests count on their own.
    tests = script.for_line(RequestOrigin(0, "tests"))
    assert [tests.reply_for(i) for i in range(2)] == [
        (TextDelta("tests"),),
        (TextDelta("tests again"),),
    ]
    assert tests.branches == ()
    # Past the end of the list: the last entry.
    assert script.for_line(RequestOrigin(7, "other")).reply_for(0) == (TextDelta("tests"),)


def test_without_branches_a_branch_plays_the_main_replies():
    script = parse_script({"replies": [[{"text": "main"}]]})
    assert script.for_line(RequestOrigin(2, "x")) is script


def test_loading_a_missing_or_non_json_file_is_a_script_error(tmp_path: Path):
    with pytest.raises(ScriptError, match="cannot read script"):
        load_script(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ScriptError, match="cannot read script"):
        load_script(broken)


def test_loading_names_the_file_and_the_script_after_it(tmp_path: Path):
    path = tmp_path / "demo.json"
    path.write_text(json.dumps({"replies": [[{"text": "a"}]]}))
    assert load_script(path).model_id == "scripted/demo"
    path.write_text(json.dumps({"replies": [[{"text": 1}]]}))
    with pytest.raises(ScriptError, match=re.escape(f"{path}: replies[0][0].text")):
        load_script(path)


async def test_text_and_thoughts_stream_with_usage_and_the_end_and_the_sleeps_stay_inside():
    provider = provider_for(
        [{"thought": "t"}, {"sleep_ms": 1}, {"text": "a"}, {"usage": {"input_tokens": 7}}]
    )

    events = await play(provider)

    assert events == [
        ReasoningDelta("t"),
        ModelTextDelta("a"),
        UsageReported(input_tokens=7, output_tokens=0),
        ResponseEnded(StopReason.END_TURN, "end_turn"),
    ]


async def test_without_a_usage_step_a_reply_reports_a_deterministic_estimate():
    provider = provider_for([{"text": "12345678"}])

    first, second = await play(provider), await play(provider)

    usage = UsageReported(input_tokens=2, output_tokens=2)  # "Guide." + "Hi" = 8 chars
    assert first[-2] == second[-2] == usage


async def test_tool_calls_stream_whole_and_end_the_reply_with_tool_use():
    provider = provider_for(
        [
            {"tool_call": {"name": "read", "arguments": {"path": "a"}}},
            {"tool_call": {"name": "shell", "id": "call_x"}},
        ]
    )

    events = await play(provider)
    builder = ReplyBuilder()
    for event in events:
        builder.add(event)

    assert events[:6] == [
        ToolCallStarted(0, "call_0_0", "read"),
        ToolCallArgumentsDelta(0, '{"path":"a"}'),
        ToolCallEnded(0, "call_0_0", "read", '{"path":"a"}'),
        ToolCallStarted(1, "call_x", "shell"),
        ToolCallArgumentsDelta(1, "{}"),
        ToolCallEnded(1, "call_x", "shell", "{}"),
    ]
    assert events[-1] == ResponseEnded(StopReason.TOOL_USE, "tool_use")
    assert builder.reply().tool_calls == (
        ToolCall("call_0_0", "read", '{"path":"a"}'),
        ToolCall("call_x", "shell", "{}"),
    )


async def test_a_request_that_says_which_it_is_gets_that_reply_of_its_line():
    script = parse_script(
        {
            "replies": [[{"text": "one"}], [{"text": "two"}], [{"text": "three"}]],
            "branches": [{"title": "tests", "replies": [[{"text": "b0"}], [{"text": "b1"}]]}],
        }
    )
    provider = ScriptedProvider(script)

    def asked(origin: RequestOrigin) -> ModelRequest:
        return attrs.evolve(REQUEST, origin=origin)

    # A loaded session goes on where it stopped: its third request gets the third reply.
    assert (await play(provider, asked(RequestOrigin(earlier_requests=2))))[0] == (
        ModelTextDelta("three")
    )
    assert (await play(provider, asked(RequestOrigin(0, "tests", 1))))[0] == ModelTextDelta("b1")
    # The same request again gets the same reply: the provider keeps no count of its own.
    assert (await play(provider, asked(RequestOrigin(earlier_requests=0))))[0] == (
        ModelTextDelta("one")
    )
    assert (await play(provider, asked(RequestOrigin(earlier_requests=0))))[0] == (
        ModelTextDelta("one")
    )


async def test_requests_that_do_not_say_which_they_are_take_the_next_reply_each():
    provider = provider_for([{"text": "one"}], [{"text": "two"}])

    texts = [(await play(provider))[0] for _ in range(3)]

    assert texts == [ModelTextDelta("one"), ModelTextDelta("two"), ModelTextDelta("two")]


async def test_a_stop_step_sets_the_stop_reason():
    provider = provider_for([{"text": "I can't help"}, {"stop": "refusal"}])

    assert (await play(provider))[-1] == ResponseEnded(StopReason.REFUSAL, "refusal")


async def test_an_error_before_any_output_is_the_named_provider_error():
    provider = provider_for([{"error": "rate_limited"}], [{"error": "context_window"}])

    with pytest.raises(RateLimited) as rate_limited:
        await play(provider)
    with pytest.raises(ContextWindowExceeded):
        await play(provider)

    assert rate_limited.value.status == 429


async def test_an_error_after_output_breaks_the_stream_and_keeps_the_partial_reply():
    provider = provider_for([{"text": "Hel"}, {"error": "overloaded", "message": "busy"}])
    received: list[ModelEvent] = []

    async def consume() -> None:
        async with provider.stream(REQUEST) as events:
            async for event in events:
                received.append(event)

    with pytest.raises(StreamBroken) as broken:
        await consume()

    assert received == [ModelTextDelta("Hel")]
    assert broken.value.events_received == 1
    assert "busy" in str(broken.value.__cause__)


async def test_a_summary_request_is_answered_without_taking_a_reply():
    provider = provider_for([{"text": "one"}], [{"text": "two"}])
    ask = Message("user", [Text('<compaction-request kind="auto">Summarise.</compaction-request>')])
    summary_request = ModelRequest(model="m", guide="G", messages=[*REQUEST.messages, ask])

    summary = await play(provider, summary_request)
    first = await play(provider)

    assert summary[0] == ModelTextDelta(SUMMARY)
    assert summary[-1] == ResponseEnded(StopReason.END_TURN, "end_turn")
    assert first[0] == ModelTextDelta("one")
