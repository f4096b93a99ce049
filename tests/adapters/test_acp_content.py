"""ACP's content blocks as content parts and back: nothing a person sent is lost on the way."""

from __future__ import annotations

import pytest

from acp_agent.adapters.acp_content import (
    acp_block,
    acp_locations,
    acp_plan,
    acp_tool_content,
    part_from_json,
    part_of,
    plan_from_json,
    tool_part_from_json,
)
from acp_agent.content import (
    DiffContent,
    ImageContent,
    Location,
    PlanContent,
    PlanEntry,
    PlanPriority,
    PlanStatus,
    ResourceContent,
    ResourceLinkContent,
    TerminalContent,
    TextContent,
)
from protocol import types
from protocol.converter import shared_converter

ANNOTATIONS = types.Annotations(
    audience=[types.Role.USER, types.Role.ASSISTANT],
    priority=0.25,
    last_modified="2025-01-02T03:04:05Z",
    meta={"a": [1]},
)

BLOCKS: list[types.ContentBlock] = [
    types.TextContent(text="hi"),
    types.TextContent(text="hi", annotations=ANNOTATIONS, meta={"editor": {"x": 1}}),
    types.ImageContent(data="aGk=", mime_type="image/png", uri="file:///p.png", meta={"k": 2}),
    types.ResourceLink(
        uri="file:///w/a.py",
        name="a.py",
        title="A",
        description="the a",
        mime_type="text/x-python",
        size=12,
        annotations=ANNOTATIONS,
    ),
    types.EmbeddedResource(
        resource=types.TextResourceContents(
            uri="file:///w/b.py", text="x = 1\n", mime_type="text/x-python", meta={"r": 1}
        ),
        meta={"block": True},
    ),
    types.EmbeddedResource(
        resource=types.BlobResourceContents(uri="file:///w/c.bin", blob="AAEC"),
        annotations=types.Annotations(priority=1.0),
    ),
]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.type)
def test_a_prompt_block_comes_back_as_it_was_sent(block: types.ContentBlock) -> None:
    part = part_of(block)
    assert not isinstance(part, DiffContent | TerminalContent | PlanContent)
    again = acp_block(part)
    assert again == block
    converter = shared_converter()
    assert converter.unstructure(again) == converter.unstructure(block)


def test_audio_has_no_part() -> None:
    with pytest.raises(TypeError, match="audio"):
        part_of(types.AudioContent(data="AA==", mime_type="audio/wav"))


def test_a_tool_s_parts_are_shown_as_tool_call_content() -> None:
    assert acp_tool_content(TextContent("done")) == types.Content(
        content=types.TextContent(text="done")
    )
    assert acp_tool_content(DiffContent("/w/a", None, "new")) == types.Diff(
        path="/w/a", old_text=None, new_text="new"
    )
    assert acp_tool_content(TerminalContent("t1", "/w")) == types.Terminal(terminal_id="t1")
    assert acp_tool_content(ImageContent("aGk=", "image/png")) == types.Content(
        content=types.ImageContent(data="aGk=", mime_type="image/png")
    )
    assert acp_tool_content(ResourceContent("file:///r", "text")) == types.Content(
        content=types.EmbeddedResource(
            resource=types.TextResourceContents(uri="file:///r", text="text")
        )
    )
    assert acp_tool_content(ResourceLinkContent("https://x", "x")) == types.Content(
        content=types.ResourceLink(uri="https://x", name="x")
    )
    with pytest.raises(TypeError, match="plan"):
        acp_tool_content(PlanContent(()))


def test_a_plan_is_a_plan_update_and_places_keep_their_1_based_lines() -> None:
    entry = PlanEntry("Read", PlanPriority.LOW, PlanStatus.IN_PROGRESS)
    assert acp_plan(PlanContent((entry,))) == types.Plan(
        entries=[
            types.PlanEntry(
                content="Read",
                priority=types.PlanEntryPriority.LOW,
                status=types.PlanEntryStatus.IN_PROGRESS,
            )
        ]
    )
    assert acp_locations([Location("/a", 3), Location("/b"), Location("/c", 0)]) == [
        types.ToolCallLocation(path="/a", line=3),
        types.ToolCallLocation(path="/b"),
    ]


def test_what_an_agent_wrote_is_read_as_parts_and_what_does_not_fit_is_not() -> None:
    assert part_from_json({"type": "text", "text": "hi"}) == TextContent("hi")
    assert part_from_json({"type": "text"}) is None
    assert part_from_json({"type": "audio", "data": "AA==", "mimeType": "audio/wav"}) is None
    assert tool_part_from_json(
        {"type": "diff", "path": "/a", "oldText": None, "newText": "x"}
    ) == DiffContent("/a", None, "x")
    assert tool_part_from_json({"type": "terminal", "terminalId": "t"}) == TerminalContent("t")
    assert tool_part_from_json("not content") is None
    entries = [
        {"content": "Read", "priority": "high", "status": "completed"},
        {"content": "no priority", "status": "pending"},
    ]
    assert plan_from_json(entries) == PlanContent(
        (PlanEntry("Read", PlanPriority.HIGH, PlanStatus.COMPLETED),)
    )
