"""The provider-neutral request refuses shapes no provider could send."""

from __future__ import annotations

import pytest

from acp_agent.models import Image, Message, ModelRequest, Reasoning, Text, ToolCall, ToolResult


def test_each_role_holds_only_its_own_parts() -> None:
    Message("user", [Text("hi"), Image("AAAA", "image/png"), ToolResult("c", "ok")])
    Message("assistant", [Reasoning("r", "sig"), Text("hi"), ToolCall("c", "ls", "{}")])
    with pytest.raises(ValueError, match="a user message holds Text, Image, ToolResult"):
        Message("user", [ToolCall("c", "ls", "{}")])
    with pytest.raises(ValueError, match="not ToolResult"):
        Message("assistant", [ToolResult("c", "ok")])


def test_the_cacheable_prefix_lies_within_the_messages() -> None:
    messages = [Message("user", [Text("hi")])]
    assert ModelRequest("m", "g", messages, cacheable_prefix=1).cacheable_prefix == 1
    with pytest.raises(ValueError, match="between 0 and 1"):
        ModelRequest("m", "g", messages, cacheable_prefix=2)


def test_image_data_stays_out_of_reprs_and_logs() -> None:
    assert repr(Image("A" * 5000, "image/png")) == (
        "Image(data_base64=<5000 base64 chars>, mime_type='image/png')"
    )
