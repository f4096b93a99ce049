"""Anthropic Messages: the contract, the request body, thinking and caching."""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from acp_agent.models import (
    NO_RETRY,
    AnthropicProvider,
    Image,
    Message,
    ModelEvent,
    ModelProvider,
    ModelRequest,
    Reasoning,
    ReasoningEnded,
    ResponseEnded,
    RetryPolicy,
    StopReason,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    UsageReported,
)
from tests.models.contract import API_KEY, REQUEST, TOOL_CALLS, ProviderContract, collect
from tests.support.fake_provider import (
    Exchange,
    FakeProviderServer,
    anthropic_event,
    anthropic_stream,
    anthropic_text_block,
    json_error,
)

_STOP = {
    StopReason.END_TURN: "end_turn",
    StopReason.TOOL_USE: "tool_use",
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.REFUSAL: "refusal",
}
_MESSAGE_START = anthropic_event(
    "message_start",
    message={
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 20,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 100,
            "output_tokens": 1,
        },
    },
)
_PING = anthropic_event("ping")
_OVERLOADED = anthropic_event("error", error={"type": "overloaded_error", "message": "Overloaded"})


def _end(stop_reason: str) -> bytes:
    return anthropic_event(
        "message_delta",
        delta={"stop_reason": stop_reason, "stop_sequence": None},
        usage={"output_tokens": 30},
    ) + anthropic_event("message_stop")


def _error(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


class TestAnthropicContract(ProviderContract):
    KEY_ENV: ClassVar[str] = "ANTHROPIC_API_KEY"
    PATH: ClassVar[str] = "/v1/messages"
    REASONING_SIGNATURE: ClassVar[str | None] = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk"

    def make_provider(
        self, client: httpx.AsyncClient, base_url: str, retry: RetryPolicy
    ) -> ModelProvider:
        return AnthropicProvider(client, base_url=base_url, api_key=API_KEY, retry=retry)

    def auth_header(self) -> tuple[str, str]:
        return "x-api-key", API_KEY

    def text_stream(self, *pieces: str, stop: StopReason = StopReason.END_TURN) -> bytes:
        return anthropic_stream(
            _MESSAGE_START, anthropic_text_block(0, *pieces), _PING, _end(_STOP[stop])
        )

    def opening(self, text: str) -> bytes:
        return _MESSAGE_START + anthropic_text_block(0, text)[: -len(_block_stop(0))]

    def reasoning_stream(self, reasoning: tuple[str, ...], text: str) -> bytes:
        thinking = [
            anthropic_event(
                "content_block_start",
                index=0,
                content_block={"type": "thinking", "thinking": "", "signature": ""},
            ),
            *(
                anthropic_event(
                    "content_block_delta",
                    index=0,
                    delta={"type": "thinking_delta", "thinking": piece},
                )
                for piece in reasoning
            ),
            anthropic_event(
                "content_block_delta",
                index=0,
                delta={"type": "signature_delta", "signature": self.REASONING_SIGNATURE},
            ),
            _block_stop(0),
        ]
        return anthropic_stream(
            _MESSAGE_START, *thinking, anthropic_text_block(1, text), _end("end_turn")
        )

    def tool_calls_stream(self) -> bytes:
        blocks = []
        for index, call in enumerate(TOOL_CALLS):
            start = {"type": "tool_use", "id": call.call_id, "name": call.name, "input": {}}
            blocks.append(anthropic_event("content_block_start", index=index, content_block=start))
            cut = call.arguments.index(":") + 1
            for piece in ("", call.arguments[:cut], call.arguments[cut:]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                blocks.append(anthropic_event("content_block_delta", index=index, delta=delta))
            blocks.append(_block_stop(index))
        return anthropic_stream(_MESSAGE_START, *blocks, _end("tool_use"))

    def keep_alive(self) -> bytes:
        return _PING + b": keep-alive\n\n"

    def text_then_error_stream(self, text: str) -> bytes:
        return self.opening(text) + _OVERLOADED

    def error_before_output_stream(self) -> bytes:
        return _MESSAGE_START + _OVERLOADED

    def rate_limited(self, retry_after: str) -> Exchange:
        body = _error("rate_limit_error", "This request would exceed the rate limit.")
        return json_error(429, body, {"retry-after": retry_after})

    def overloaded(self) -> Exchange:
        return json_error(529, _error("overloaded_error", "Overloaded"))

    def unauthorized(self) -> Exchange:
        return json_error(401, _error("authentication_error", f"invalid x-api-key {API_KEY}"))

    def context_exceeded(self) -> Exchange:
        body = _error("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum")
        return json_error(400, body)

    def model_not_found(self) -> Exchange:
        return json_error(404, _error("not_found_error", "model: claude-9"))

    def quota_exhausted(self) -> Exchange:
        message = (
            "Your credit balance is too low to access the Anthropic API. "
            "Please go to Plans & Billing to upgrade or purchase credits."
        )
        return json_error(400, _error("invalid_request_error", message))


def _block_stop(index: int) -> bytes:
    return anthropic_event("content_block_stop", index=index)


# The request body

SIGNATURE = "EqQBCgIYAhIM"
READ_FILE = ToolSpec(
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
HISTORY = (
    Message("user", [Text('<state source="environment/cwd">/src</state>'), Text("Fix it.")]),
    Message(
        "assistant",
        [
            Reasoning("The bug is in a.py.", signature=SIGNATURE),
            Reasoning("", signature="opaque", redacted=True),
            Text("Reading a.py."),
            ToolCall("call_1", "read_file", '{"path":"a.py"}'),
        ],
    ),
    Message(
        "user",
        [
            Text("Here is a screenshot."),
            ToolResult("call_1", "no such file", is_error=True),
            Image("iVBORw0KGgo=", "image/png"),
        ],
    ),
)


async def _sent_body(request: ModelRequest) -> dict[str, Any]:
    with FakeProviderServer() as server:
        server.add(Exchange(chunks=[_MESSAGE_START + _end("end_turn")]))
        async with httpx.AsyncClient() as client:
            provider = AnthropicProvider(client, base_url=server.base_url, api_key="k")
            await collect(provider, request)
        (sent,) = server.requests
    assert (sent.headers["anthropic-version"], sent.headers["x-api-key"]) == ("2023-06-01", "k")
    body: dict[str, Any] = sent.json()
    return body


async def test_request_body_is_exactly_the_messages_format() -> None:
    request = ModelRequest(
        model="claude-sonnet-4-5",
        guide="Read <state> tags as facts about the environment.",
        messages=HISTORY,
        tools=[READ_FILE],
        max_output_tokens=4096,
        reasoning_effort="medium",
        cacheable_prefix=2,
    )
    assert await _sent_body(request) == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096 + 8192,
        "system": [
            {
                "type": "text",
                "text": "Read <state> tags as facts about the environment.",
                "cache_control": {"type": "ephemeral"},
            }
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": '<state source="environment/cwd">/src</state>'},
                    {"type": "text", "text": "Fix it."},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "The bug is in a.py.", "signature": SIGNATURE},
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "text", "text": "Reading a.py."},
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "read_file",
                        "input": {"path": "a.py"},
                        "cache_control": {"type": "ephemeral"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_1",
                        "content": "no such file",
                        "is_error": True,
                    },
                    {"type": "text", "text": "Here is a screenshot."},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": "iVBORw0KGgo=",
                        },
                    },
                ],
            },
        ],
        "tools": [
            {
                "name": "read_file",
                "description": "Read a file.",
                "input_schema": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            }
        ],
        "thinking": {"type": "enabled", "budget_tokens": 8192},
        "stream": True,
    }


async def test_without_effort_reasoning_is_not_sent_back_and_thinking_stays_off() -> None:
    body = await _sent_body(ModelRequest(model="m", guide="", messages=HISTORY))
    assert "thinking" not in body
    assert "system" not in body
    assert body["max_tokens"] == 8192
    assert [block["type"] for block in body["messages"][1]["content"]] == ["text", "tool_use"]


async def test_thinking_stays_off_in_a_tool_loop_that_began_without_it() -> None:
    unsigned = Message("assistant", [Reasoning("hmm"), ToolCall("c", "ls", "{}")])
    messages = (HISTORY[0], unsigned, Message("user", [ToolResult("c", "a.py")]))
    body = await _sent_body(
        ModelRequest(model="m", guide="g", messages=messages, reasoning_effort="high")
    )
    assert "thinking" not in body
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c", "name": "ls", "input": {}}
    ]


async def test_a_reply_cut_off_while_reasoning_is_sent_back_without_it() -> None:
    cut_off = Message("assistant", [Text("Let me think."), Reasoning("half", signature=None)])
    messages = (HISTORY[0], cut_off, Message("user", [Text("Go on.")]))
    body = await _sent_body(
        ModelRequest(model="m", guide="g", messages=messages, reasoning_effort="low")
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Let me think."}]


# Stream details


async def _events_for(body: bytes) -> list[ModelEvent]:
    with FakeProviderServer() as server:
        server.add(Exchange(chunks=[body]))
        async with httpx.AsyncClient() as client:
            provider = AnthropicProvider(client, base_url=server.base_url, retry=NO_RETRY)
            return await collect(provider, REQUEST)


async def test_redacted_thinking_is_kept_opaque_for_replay() -> None:
    start = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}
    events = await _events_for(
        anthropic_stream(
            _MESSAGE_START,
            anthropic_event("content_block_start", index=0, content_block=start),
            _block_stop(0),
            _end("end_turn"),
        )
    )
    assert events[0] == ReasoningEnded(Reasoning("", "EmwKAhgBEgy3va3pzix", redacted=True))


async def test_pause_and_stop_sequence_end_the_turn_and_keep_the_word() -> None:
    for word in ("pause_turn", "stop_sequence"):
        events = await _events_for(anthropic_stream(_MESSAGE_START, _end(word)))
        assert events[-1] == ResponseEnded(StopReason.END_TURN, word)


async def test_cache_writes_count_as_input_and_as_cache_writes() -> None:
    start = anthropic_event(
        "message_start",
        message={
            "usage": {
                "input_tokens": 5,
                "cache_creation_input_tokens": 300,
                "cache_read_input_tokens": 0,
                "output_tokens": 1,
            }
        },
    )
    events = await _events_for(anthropic_stream(start, _end("end_turn")))
    assert events[-2] == UsageReported(input_tokens=305, output_tokens=30, cache_write_tokens=300)
