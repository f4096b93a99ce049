"""MCP tool results as ToolResults: what the editor shows and what the model reads."""

from __future__ import annotations

import base64

import mcp.types as mcp_types

from acp_agent.mcp import to_tool_result
from acp_agent.toolkit import ImageContent, TextContent, ToolResult

DATA = base64.b64encode(b"0123456789").decode()


def test_text_blocks_are_text_for_both() -> None:
    result = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(text="one"), mcp_types.TextContent(text="two")]
    )
    assert to_tool_result(result) == ToolResult(
        content=(TextContent("one"), TextContent("two")), model_text="one\ntwo"
    )


def test_an_image_is_shown_and_the_model_reads_a_line_naming_it() -> None:
    result = mcp_types.CallToolResult(
        content=[mcp_types.ImageContent(data=DATA, mime_type="image/png")]
    )
    assert to_tool_result(result) == ToolResult(
        content=(ImageContent(data=DATA, mime_type="image/png"),),
        model_text="[image: image/png, 10 bytes; shown to the user]",
    )


def test_resources_links_and_audio_become_text() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.EmbeddedResource(
                resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="hello")
            ),
            mcp_types.EmbeddedResource(
                resource=mcp_types.BlobResourceContents(
                    uri="file:///a.bin", blob=DATA, mime_type="application/zip"
                )
            ),
            mcp_types.ResourceLink(
                uri="https://example.com/doc", name="doc", description="the docs"
            ),
            mcp_types.AudioContent(data=DATA, mime_type="audio/wav"),
        ]
    )
    converted = to_tool_result(result)
    texts = [
        "file:///a.txt:\nhello",
        "[resource file:///a.bin: application/zip, 10 bytes]",
        "[doc](https://example.com/doc): the docs",
        "[audio: audio/wav, 10 bytes]",
    ]
    assert converted.content == tuple(TextContent(text) for text in texts)
    assert converted.model_text == "\n".join(texts)


def test_structured_content_alone_is_shown_as_json_and_kept_as_raw_output() -> None:
    result = mcp_types.CallToolResult(content=[], structured_content={"temperature_c": 21})
    converted = to_tool_result(result)
    assert converted.raw_output == {"temperature_c": 21}
    assert converted.content == (TextContent('```json\n{\n  "temperature_c": 21\n}\n```'),)
    assert converted.model_text == '{\n  "temperature_c": 21\n}'


def test_a_server_side_error_stays_an_error_result() -> None:
    result = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(text="no such city")], is_error=True
    )
    assert to_tool_result(result).is_error


def test_an_empty_result_says_so() -> None:
    assert to_tool_result(mcp_types.CallToolResult(content=[])).model_text == "(no output)"
