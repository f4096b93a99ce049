"""OpenAI Chat Completions (and compatible servers): the contract, the request body, dialects."""

from __future__ import annotations

from typing import Any, ClassVar

import httpx
import pytest

from acp_agent.models import (
    NO_RETRY,
    Image,
    Message,
    ModelNotFound,
    ModelProvider,
    ModelRequest,
    OpenAIProvider,
    Reasoning,
    ReasoningDelta,
    ReasoningEnded,
    ResponseEnded,
    RetryPolicy,
    StopReason,
    Text,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallEnded,
    ToolCallStarted,
    ToolResult,
    ToolSpec,
    UsageReported,
)
from tests.models.contract import API_KEY, REQUEST, TOOL_CALLS, ProviderContract, collect
from tests.support.fake_provider import (
    Exchange,
    FakeProviderServer,
    json_error,
    openai_chunk,
    openai_stream,
    sse_data,
)

_FINISH = {
    StopReason.END_TURN: "stop",
    StopReason.TOOL_USE: "tool_calls",
    StopReason.MAX_TOKENS: "length",
    StopReason.REFUSAL: "content_filter",
}
_USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 100, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
}
_ROLE = openai_chunk({"role": "assistant", "content": "", "refusal": None})
_OVERLOADED_CHUNK = {
    "id": "gen-fake",
    "object": "chat.completion.chunk",
    "error": {"code": "server_error", "message": "Provider disconnected unexpectedly"},
    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
}


def _error(message: str, error_type: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _tool_call_delta(index: int, **fields: Any) -> dict[str, Any]:
    return openai_chunk({"tool_calls": [{"index": index, **fields}]})


class TestOpenAIContract(ProviderContract):
    KEY_ENV: ClassVar[str] = "OPENAI_API_KEY"
    PATH: ClassVar[str] = "/v1/chat/completions"
    REASONING_SIGNATURE: ClassVar[str | None] = None

    def make_provider(
        self, client: httpx.AsyncClient, base_url: str, retry: RetryPolicy
    ) -> ModelProvider:
        return OpenAIProvider(client, base_url=base_url + "/v1", api_key=API_KEY, retry=retry)

    def auth_header(self) -> tuple[str, str]:
        return "authorization", f"Bearer {API_KEY}"

    def text_stream(self, *pieces: str, stop: StopReason = StopReason.END_TURN) -> bytes:
        return openai_stream(
            _ROLE,
            *(openai_chunk({"content": piece}) for piece in pieces),
            openai_chunk({}, _FINISH[stop]),
            openai_chunk(usage=_USAGE),
        )

    def opening(self, text: str) -> bytes:
        return openai_stream(_ROLE, openai_chunk({"content": text}), done=False)

    def reasoning_stream(self, reasoning: tuple[str, ...], text: str) -> bytes:
        return openai_stream(
            openai_chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
            *(openai_chunk({"content": None, "reasoning_content": piece}) for piece in reasoning),
            openai_chunk({"content": text, "reasoning_content": None}),
            openai_chunk({}, "stop"),
            openai_chunk(usage=_USAGE),
        )

    def tool_calls_stream(self) -> bytes:
        chunks: list[dict[str, Any]] = [openai_chunk({"role": "assistant", "content": None})]
        for index, call in enumerate(TOOL_CALLS):
            function = {"name": call.name, "arguments": ""}
            chunks.append(
                _tool_call_delta(index, id=call.call_id, type="function", function=function)
            )
            cut = call.arguments.index(":") + 1
            for piece in (call.arguments[:cut], call.arguments[cut:]):
                chunks.append(_tool_call_delta(index, function={"arguments": piece}))
        return openai_stream(*chunks, openai_chunk({}, "tool_calls"), openai_chunk(usage=_USAGE))

    def keep_alive(self) -> bytes:
        return b": keep-alive\n\n: OPENROUTER PROCESSING\n\n"

    def text_then_error_stream(self, text: str) -> bytes:
        return self.opening(text) + sse_data(_OVERLOADED_CHUNK)

    def error_before_output_stream(self) -> bytes:
        return sse_data(_OVERLOADED_CHUNK)

    def rate_limited(self, retry_after: str) -> Exchange:
        message = "Rate limit reached for gpt-4.1 on tokens per min (TPM). Please try again in 2s."
        body = _error(message, "tokens", "rate_limit_exceeded")
        return json_error(429, body, {"retry-after": retry_after})

    def overloaded(self) -> Exchange:
        return json_error(503, _error("The server is overloaded.", "server_error", None))

    def unauthorized(self) -> Exchange:
        message = f"Incorrect API key provided: {API_KEY}. You can find your API key online."
        return json_error(401, _error(message, "invalid_request_error", "invalid_api_key"))

    def context_exceeded(self) -> Exchange:
        message = (
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130000 tokens. Please reduce the length of the messages."
        )
        body = _error(message, "invalid_request_error", "context_length_exceeded")
        return json_error(400, body)

    def model_not_found(self) -> Exchange:
        message = "The model `gpt-9` does not exist or you do not have access to it."
        return json_error(404, _error(message, "invalid_request_error", "model_not_found"))

    def quota_exhausted(self) -> Exchange:
        message = "You exceeded your current quota, please check your plan and billing details."
        return json_error(429, _error(message, "insufficient_quota", "insufficient_quota"))


# The request body


FULL_REQUEST = ModelRequest(
    model="gpt-4.1",
    guide="Read <state> tags as facts about the environment.",
    messages=[
        Message("user", [Text('<state source="environment/cwd">/src</state>'), Text("Fix it.")]),
        Message(
            "assistant",
            [
                Reasoning("The bug is in a.py.", signature="sig"),
                Text("Reading a.py."),
                ToolCall("call_1", "read_file", '{"path":"a.py"}'),
                ToolCall("call_2", "read_file", '{"path":"b.py"}'),
            ],
        ),
        Message(
            "user",
            [
                Text("Here is a screenshot."),
                ToolResult("call_1", "print('a')"),
                ToolResult("call_2", "no such file", is_error=True),
                Image("iVBORw0KGgo=", "image/png"),
            ],
        ),
    ],
    tools=[
        ToolSpec(
            "read_file",
            "Read a file.",
            {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        )
    ],
    max_output_tokens=4096,
    reasoning_effort="high",
    cacheable_prefix=2,
)


async def _sent_body(
    request: ModelRequest, client: httpx.AsyncClient, **options: Any
) -> dict[str, Any]:
    with FakeProviderServer() as server:
        server.add(Exchange(chunks=[openai_stream(openai_chunk({}, "stop"))]))
        provider = OpenAIProvider(client, base_url=server.base_url + "/v1", **options)
        await collect(provider, request)
        (sent,) = server.requests
        body: dict[str, Any] = sent.json()
        return body


async def test_request_body_is_exactly_the_chat_completions_format() -> None:
    async with httpx.AsyncClient() as client:
        body = await _sent_body(FULL_REQUEST, client, api_key="k")
    assert body == {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "Read <state> tags as facts about the environment."},
            {
                "role": "user",
                "content": '<state source="environment/cwd">/src</state>\n\nFix it.',
            },
            {
                "role": "assistant",
                "content": "Reading a.py.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"a.py"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"b.py"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "print('a')"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Here is a screenshot."},
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                    },
                ],
            },
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                    },
                },
            }
        ],
        "max_completion_tokens": 4096,
        "reasoning_effort": "high",
    }


async def test_compatible_servers_get_max_tokens_and_no_key_header() -> None:
    with FakeProviderServer() as server:
        server.add(Exchange(chunks=[openai_stream(openai_chunk({}, "stop"))]))
        async with httpx.AsyncClient() as client:
            provider = OpenAIProvider(
                client,
                name="ollama",
                base_url=server.base_url + "/v1",
                api_key=None,
                max_tokens_field="max_tokens",
            )
            await collect(provider, FULL_REQUEST)
        (sent,) = server.requests
    assert "authorization" not in sent.headers
    assert (sent.json()["max_tokens"], "max_completion_tokens" in sent.json()) == (4096, False)


# Dialects of compatible servers


async def _events_for(body: bytes | Exchange) -> list[Any]:
    with FakeProviderServer() as server:
        server.add(body if isinstance(body, Exchange) else Exchange(chunks=[body]))
        async with httpx.AsyncClient() as client:
            provider = OpenAIProvider(
                client, name="compat", base_url=server.base_url, api_key=None, retry=NO_RETRY
            )
            return await collect(provider, REQUEST)


async def test_reasoning_field_named_reasoning_is_read_like_reasoning_content() -> None:
    events = await _events_for(
        openai_stream(
            openai_chunk({"role": "assistant", "content": "", "reasoning": "Hmm."}),
            openai_chunk({"content": "Yes.", "reasoning": None}),
            openai_chunk({}, "stop"),
        )
    )
    assert events == [
        ReasoningDelta("Hmm."),
        ReasoningEnded(Reasoning("Hmm.")),
        TextDelta("Yes."),
        ResponseEnded(StopReason.END_TURN, "stop"),
    ]


async def test_stop_after_tool_calls_is_tool_use_and_missing_done_is_tolerated() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    events = await _events_for(
        openai_stream(
            openai_chunk({"role": "assistant", "tool_calls": [{"index": 0, **call}]}),
            openai_chunk({}, "stop"),
            done=False,
        )
    )
    assert events == [
        ToolCallStarted(0, "c1", "ls"),
        ToolCallArgumentsDelta(0, "{}"),
        ToolCallEnded(0, "c1", "ls", "{}"),
        ResponseEnded(StopReason.TOOL_USE, "stop"),
    ]


async def test_tool_calls_sent_whole_without_an_index_are_told_apart() -> None:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "a", "arguments": '{"x":1}'}},
        {"id": "c2", "type": "function", "function": {"name": "b", "arguments": {"y": 2}}},
    ]
    events = await _events_for(
        openai_stream(
            openai_chunk({"role": "assistant", "tool_calls": calls[:1]}),
            openai_chunk({"tool_calls": calls[1:]}),
            openai_chunk({}, "tool_calls"),
        )
    )
    ended = [event for event in events if isinstance(event, ToolCallEnded)]
    assert ended == [
        ToolCallEnded(0, "c1", "a", '{"x":1}'),
        ToolCallEnded(1, "c2", "b", '{"y": 2}'),
    ]


async def test_refusal_is_shown_as_text_and_ends_as_a_refusal() -> None:
    events = await _events_for(
        openai_stream(
            openai_chunk({"role": "assistant", "refusal": "I can't help with that."}),
            openai_chunk({}, "stop"),
        )
    )
    assert events == [
        TextDelta("I can't help with that."),
        ResponseEnded(StopReason.REFUSAL, "stop"),
    ]


async def test_deepseek_cache_hits_count_as_cache_reads() -> None:
    usage = {"prompt_tokens": 50, "completion_tokens": 5, "prompt_cache_hit_tokens": 40}
    events = await _events_for(
        openai_stream(openai_chunk({"content": "x"}, "stop"), openai_chunk(usage=usage))
    )
    assert UsageReported(50, 5, cache_read_tokens=40) in events


async def test_ollama_plain_string_error_for_a_missing_model_is_model_not_found() -> None:
    exchange = json_error(404, {"error": 'model "qwen3" not found, try pulling it first'})
    with pytest.raises(ModelNotFound) as caught:
        await _events_for(exchange)
    assert caught.value.provider_message == 'model "qwen3" not found, try pulling it first'
    assert str(caught.value).startswith('compat answered 404: model "qwen3" not found')
