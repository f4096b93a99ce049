"""OpenAI Chat Completions, streamed, and the many servers that speak it.

`POST {base_url}/chat/completions` with `stream: true` and
`stream_options.include_usage`. Known to fit: OpenAI, Ollama, vLLM, the
llama.cpp server, LM Studio, OpenRouter, DeepSeek, Groq.

How a `ModelRequest` is sent:

- the guide is the first message, `role: system`;
- a user message's tool results become `role: tool` messages (an error result's
  content is prefixed with "Error: ", the format has no error flag), followed by
  one user message with its text (joined by blank lines, as a plain string) or,
  when it holds images, a list of `text` and `image_url` (data URL) parts;
- an assistant message's text joined, its tool calls as `tool_calls`; its
  reasoning is not sent back (compatible servers reject or ignore it);
- `reasoning_effort` is sent as is; the output cap goes in `max_completion_tokens`
  (OpenAI) or `max_tokens` (most compatible servers), by `max_tokens_field`;
- `cacheable_prefix` is not sent: these servers cache prefixes on their own.

How the stream is read: `choices[0].delta.content` is text; `reasoning_content`
(DeepSeek, vLLM) or `reasoning` (OpenRouter, Ollama, newer vLLM) is reasoning;
`tool_calls[i]` deltas carry id and name first and the arguments in pieces; a
`refusal` delta is shown as text and ends the reply as a refusal;
`finish_reason` maps `stop` → end_turn, `tool_calls` → tool_use, `length` →
max_tokens, `content_filter` → refusal (a `stop` after tool calls, as some
servers send, is tool_use); the chunk with `usage` reports tokens; `data: [DONE]`
ends the reply. A chunk with an `error` object (OpenRouter, vLLM) is an error event.

Authentication: the API key is `Authorization: Bearer <key>`. Userinfo in the
base URL (`http://user:pass@proxy/v1`) becomes `Authorization: Basic …` only
when no key is configured; with a key the key wins and the userinfo is ignored,
with one warning (see `acp_agent.url_credentials`). Messages show the URL with
its userinfo as `***`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs
import httpx

from acp_agent.models._errors import ProviderConnectionLost, ProviderError, ProviderResponseInvalid
from acp_agent.models._events import (
    ModelEvent,
    ReasoningDelta,
    ReasoningEnded,
    ResponseEnded,
    StopReason,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallEnded,
    ToolCallStarted,
    UsageReported,
)
from acp_agent.models._http import body_snippet, decode_json, json_int, stream_reply
from acp_agent.models._provider import ModelStream
from acp_agent.models._request import (
    Image,
    Message,
    ModelRequest,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
)
from acp_agent.models._retry import RetryPolicy, parse_retry_after
from acp_agent.models._sse import ServerSentEvent
from acp_agent.models._status import KeyHint, classify_status_error, redact_secrets
from acp_agent.url_credentials import url_target

__all__ = (
    "OPENAI_BASE_URL",
    "MaxTokensField",
    "OpenAIProvider",
    "request_body",
)

logger = logging.getLogger(__name__)

OPENAI_BASE_URL: Final = "https://api.openai.com/v1"

#: Which request field carries the output cap: OpenAI's own API wants
#: `max_completion_tokens` (reasoning models reject `max_tokens`); most compatible
#: servers know only `max_tokens`.
MaxTokensField: TypeAlias = Literal["max_completion_tokens", "max_tokens"]


_FINISH_REASONS: Final[Mapping[str, StopReason]] = {
    "stop": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


class OpenAIProvider:
    """Streams replies from an OpenAI Chat Completions endpoint.

    **Parameters:**

    * `client`: the `httpx.AsyncClient` to send with (its timeouts apply).
    * `name`: the configured provider name, used in messages (`openai`, `ollama`).
    * `base_url`: up to and including the version, e.g. `http://127.0.0.1:11434/v1`;
      its userinfo, if any, authenticates only without `api_key` (module docstring).
    * `api_key`: sent as a bearer token; None sends no bearer token.
    * `api_key_env`: where the key came from, named in authentication errors.
    * `max_tokens_field`: which field carries `max_output_tokens`.
    * `retry`: when and how to retry before the first event.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        name: str = "openai",
        base_url: str = OPENAI_BASE_URL,
        api_key: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        max_tokens_field: MaxTokensField = "max_completion_tokens",
        retry: RetryPolicy | None = None,
    ):
        self._client = client
        self._name = name
        self._target = url_target(
            base_url.rstrip("/") + "/chat/completions",
            authorization=None if api_key is None else (api_key_env or "the API key"),
            owner=name,
        )
        self._api_key = api_key
        self._key_hint = KeyHint(api_key_env, key_present=api_key is not None)
        self._max_tokens_field = max_tokens_field
        self._retry = retry if retry is not None else RetryPolicy()

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"OpenAIProvider(name={self._name!r}, url={self._target.shown!r})"

    def stream(self, request: ModelRequest) -> ModelStream:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self._api_key is not None:
            headers["authorization"] = f"Bearer {self._api_key}"
        return ModelStream(
            stream_reply(
                self._client,
                provider=self._name,
                target=self._target,
                headers=headers,
                body=request_body(request, max_tokens_field=self._max_tokens_field),
                retry=self._retry,
                read_error=self._read_error,
                new_parser=lambda: _ChunkParser(self._name, self._error_event),
            )
        )

    def _read_error(self, response: httpx.Response, body: bytes) -> ProviderError:
        message, error_type, error_code = _error_fields(decode_json(body), body)
        return classify_status_error(
            provider=self._name,
            status=response.status_code,
            message=redact_secrets(message, [self._api_key]),
            error_type=error_type,
            error_code=error_code,
            retry_after_s=parse_retry_after(response.headers),
            key_hint=self._key_hint,
        )

    def _error_event(self, error: Any) -> ProviderError:
        message, error_type, error_code = _error_fields({"error": error}, b"")
        status = error.get("code") if isinstance(error, dict) else None
        return classify_status_error(
            provider=self._name,
            status=status if isinstance(status, int) and status >= 400 else None,
            message=redact_secrets(message, [self._api_key]),
            error_type=error_type,
            error_code=error_code,
            retry_after_s=None,
            key_hint=self._key_hint,
        )


def request_body(request: ModelRequest, *, max_tokens_field: MaxTokensField) -> dict[str, Any]:
    """The JSON object sent for `request`."""
    messages: list[dict[str, Any]] = []
    if request.guide:
        messages.append({"role": "system", "content": request.guide})
    for message in request.messages:
        messages.extend(_wire_messages(message))
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.input_schema),
                },
            }
            for tool in request.tools
        ]
    if request.max_output_tokens is not None:
        body[max_tokens_field] = request.max_output_tokens
    if request.reasoning_effort is not None:
        body["reasoning_effort"] = request.reasoning_effort
    return body


def _wire_messages(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return [_assistant_message(message)]
    wire: list[dict[str, Any]] = [
        {
            "role": "tool",
            "tool_call_id": part.call_id,
            "content": f"Error: {part.content}" if part.is_error else part.content,
        }
        for part in message.parts
        if isinstance(part, ToolResult)
    ]
    shown = [part for part in message.parts if isinstance(part, Text | Image)]
    if not shown:
        return wire
    if all(isinstance(part, Text) for part in shown):
        content: Any = "\n\n".join(part.text for part in shown if isinstance(part, Text))
    else:
        content = [
            {"type": "text", "text": part.text}
            if isinstance(part, Text)
            else {
                "type": "image_url",
                "image_url": {"url": f"data:{part.mime_type};base64,{part.data_base64}"},
            }
            for part in shown
        ]
    wire.append({"role": "user", "content": content})
    return wire


def _assistant_message(message: Message) -> dict[str, Any]:
    text = "\n\n".join(part.text for part in message.parts if isinstance(part, Text))
    calls = [part for part in message.parts if isinstance(part, ToolCall)]
    wire: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        wire["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ]
    return wire


def _error_fields(decoded: Any, raw: bytes) -> tuple[str, str | None, str | None]:
    """(message, type, code) from an OpenAI-style error body, whatever the server's variant."""
    if not isinstance(decoded, dict):
        return body_snippet(raw), None, None
    error = decoded.get("error", decoded)
    if isinstance(error, str):  # Ollama: {"error": "model 'x' not found"}
        return error, None, None
    if not isinstance(error, dict):
        return body_snippet(raw), None, None
    message = error.get("message") or decoded.get("message") or ""
    error_type = error.get("type")
    code = error.get("code")
    return (
        str(message),
        str(error_type) if error_type is not None else None,
        str(code) if code is not None else None,
    )


@attrs.define
class _ToolCallState:
    index: int
    call_id: str
    name: str
    arguments: list[str] = attrs.Factory(list)


class _ChunkParser:
    """Reads one Chat Completions stream; see the module docstring."""

    def __init__(self, provider: str, error_event: Callable[[Any], ProviderError]):
        self._provider = provider
        self._error_event = error_event
        self._done = False
        self._reasoning: list[str] | None = None
        self._calls: dict[int, _ToolCallState] = {}
        self._finish_reason: str | None = None
        self._refused = False
        self._usage: UsageReported | None = None

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, sse: ServerSentEvent) -> list[ModelEvent]:
        if sse.data.strip() == "[DONE]":
            return self._end()
        try:
            chunk = json.loads(sse.data)
        except (ValueError, RecursionError) as exc:
            snippet = body_snippet(sse.data.encode())
            raise ProviderResponseInvalid(
                f"{self._provider} sent a chunk that is not JSON: {snippet}",
                provider=self._provider,
            ) from exc
        if not isinstance(chunk, dict):
            raise ProviderResponseInvalid(
                f"{self._provider} sent a chunk that is not an object: {sse.data[:100]}",
                provider=self._provider,
            )
        if chunk.get("error"):
            raise self._error_event(chunk["error"])
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = _usage(usage)
        choices = chunk.get("choices")
        if not choices or not isinstance(choices[0], dict):
            return []
        choice = choices[0]
        events = self._delta(choice.get("delta") or {})
        if choice.get("finish_reason"):
            self._finish_reason = str(choice["finish_reason"])
        return events

    def finish(self) -> list[ModelEvent]:
        if self._finish_reason is None:
            raise ProviderConnectionLost(
                f"{self._provider}: the stream ended before the reply was complete",
                provider=self._provider,
            )
        return self._end()

    def _delta(self, delta: dict[str, Any]) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            if self._reasoning is None:
                self._reasoning = []
            self._reasoning.append(reasoning)
            events.append(ReasoningDelta(reasoning))
        for key in ("content", "refusal"):
            text = delta.get(key)
            if isinstance(text, str) and text:
                self._end_reasoning(events)
                self._refused = self._refused or key == "refusal"
                events.append(TextDelta(text))
        for position, call in enumerate(delta.get("tool_calls") or ()):
            self._end_reasoning(events)
            self._tool_call_delta(call, position, events)
        return events

    def _tool_call_delta(self, call: Any, position: int, events: list[ModelEvent]) -> None:
        if not isinstance(call, dict):
            return
        function = call.get("function") or {}
        index = call.get("index")
        call_id = call.get("id")
        if not isinstance(index, int):
            # Servers that omit the index send each call whole, or continue the last one.
            known = any(state.call_id == call_id for state in self._calls.values())
            index = len(self._calls) if call_id and not known else max(self._calls, default=0)
        state = self._calls.get(index)
        if state is None:
            state = _ToolCallState(
                index=len(self._calls),
                call_id=str(call_id or f"call_{len(self._calls)}"),
                name=str(function.get("name") or ""),
            )
            self._calls[index] = state
            events.append(ToolCallStarted(state.index, state.call_id, state.name))
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # some servers send the object itself
            arguments = json.dumps(arguments, ensure_ascii=False)
        if isinstance(arguments, str) and arguments:
            state.arguments.append(arguments)
            events.append(ToolCallArgumentsDelta(state.index, arguments))

    def _end_reasoning(self, events: list[ModelEvent]) -> None:
        if self._reasoning is not None:
            events.append(ReasoningEnded(Reasoning("".join(self._reasoning))))
            self._reasoning = None

    def _end(self) -> list[ModelEvent]:
        self._done = True
        events: list[ModelEvent] = []
        self._end_reasoning(events)
        for state in self._calls.values():
            events.append(
                ToolCallEnded(
                    state.index, state.call_id, state.name, "".join(state.arguments) or "{}"
                )
            )
        if self._usage is not None:
            events.append(self._usage)
        events.append(ResponseEnded(self._stop_reason(), self._finish_reason))
        return events

    def _stop_reason(self) -> StopReason:
        if self._refused:
            return StopReason.REFUSAL
        reason = _FINISH_REASONS.get(self._finish_reason or "", StopReason.END_TURN)
        if self._calls and reason is StopReason.END_TURN:
            return StopReason.TOOL_USE
        return reason


def _usage(usage: dict[str, Any]) -> UsageReported:
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    cache_read = prompt_details.get("cached_tokens") or usage.get("prompt_cache_hit_tokens")
    return UsageReported(
        input_tokens=json_int(usage.get("prompt_tokens")),
        output_tokens=json_int(usage.get("completion_tokens")),
        cache_read_tokens=json_int(cache_read),
        reasoning_tokens=json_int(completion_details.get("reasoning_tokens")),
    )
