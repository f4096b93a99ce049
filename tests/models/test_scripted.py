"""The scripted model: its file format, which reply answers which prompt, and playback."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from acp_agent.models.scripted import (
    DEFAULT_REPLY,
    Script,
    ScriptedModel,
    ScriptError,
    Sleep,
    TextDelta,
    ThoughtDelta,
    load_script,
    parse_script,
)


def test_a_script_parses_into_replies_of_steps_in_order():
    script = parse_script(
        {"replies": [[{"thought": "t"}, {"text": "a"}, {"sleep_ms": 5}, {"text": "b"}]]}
    )

    assert script == Script(((ThoughtDelta("t"), TextDelta("a"), Sleep(5), TextDelta("b")),))


def test_reply_i_answers_prompt_i_and_the_last_reply_repeats():
    script = parse_script({"replies": [[{"text": "one"}], [{"text": "two"}]]})

    assert [script.reply_for(i) for i in range(4)] == [
        (TextDelta("one"),),
        (TextDelta("two"),),
        (TextDelta("two"),),
        (TextDelta("two"),),
    ]


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        ([[{"text": "a"}]], 'one key, "replies"'),
        ({"replies": [], "extra": 1}, 'one key, "replies"'),
        ({"replies": []}, "non-empty list"),
        ({"replies": [{"text": "a"}]}, "replies[0] must be a list"),
        ({"replies": [[{"text": "a", "thought": "b"}]]}, "replies[0][0] must be an object"),
        ({"replies": [[{"text": 5}]]}, "replies[0][0].text must be a string"),
        ({"replies": [[{"sleep_ms": -1}]]}, "sleep_ms must be a non-negative integer"),
        ({"replies": [[{"sleep_ms": True}]]}, "sleep_ms must be a non-negative integer"),
        ({"replies": [[{"tool_call": {}}]]}, "unknown step 'tool_call'"),
    ],
)
def test_a_malformed_script_is_refused_with_the_place_named(data: Any, complaint: str):
    with pytest.raises(ScriptError, match=re.escape(complaint)):
        parse_script(data)


def test_loading_a_missing_or_non_json_file_is_a_script_error(tmp_path: Path):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")

    with pytest.raises(ScriptError, match="cannot read script"):
        load_script(tmp_path / "missing.json")
    with pytest.raises(ScriptError, match="cannot read script"):
        load_script(broken)


def test_loading_names_the_file_when_its_content_is_wrong(tmp_path: Path):
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps({"replies": [[{"say": "hi"}]]}))

    with pytest.raises(ScriptError, match=r"wrong\.json: replies"):
        load_script(path)


async def test_the_model_streams_text_and_thoughts_and_keeps_the_sleeps_to_itself():
    model = ScriptedModel(
        parse_script({"replies": [[{"thought": "t"}, {"sleep_ms": 1}, {"text": "a"}]]})
    )

    outputs = [output async for output in model.stream_reply(0)]

    assert outputs == [ThoughtDelta("t"), TextDelta("a")]


async def test_without_a_script_every_prompt_gets_the_default_reply():
    model = ScriptedModel()

    for prompt_index in (0, 5):
        assert [o async for o in model.stream_reply(prompt_index)] == [TextDelta(DEFAULT_REPLY)]
