"""Anthropic Messages, streamed (and servers that speak its format).

`POST {base_url}/v1/messages` with `stream: true`, headers `x-api-key` and
`anthropic-version: 2023-06-01`.

How a `ModelRequest` is sent:

- the guide is `system`, one text block marked `cache_control: ephemeral` (tools
  come before the system prompt in Anthropic's cache order, so they are cached
  with it);
- the last block of message `cacheable_prefix - 1` is marked too, so the stable
  history is read from the cache on the next request;
- a user message's tool results come first (`tool_result` blocks, with
  `is_error`), then its text and images (`base64` sources);
- an assistant message's signed reasoning is sent back as `thinking` (or
  `redacted_thinking`) blocks, its tool calls as `tool_use` blocks; reasoning
  without a signature is dropped (Anthropic rejects it), and so is all reasoning
  when thinking is off for the request;
- `reasoning_effort` enables thinking with `THINKING_BUDGET_TOKENS[effort]`;
  `max_tokens` is then the visible cap plus that budget, so thinking never eats
  the answer. Thinking stays off when a tool loop began without it: Anthropic
  requires the last assistant turn before tool results to start with a signed
  thinking block, which such a turn does not have.

How the stream is read: `message_start` (input and cache usage),
`content_block_start/delta/stop` for `text` (`text_delta`), `thinking`
(`thinking_delta`, `signature_delta`), `redacted_thinking` and `tool_use`
(`input_json_delta`); `message_delta` (stop reason, output tokens);
`message_stop` ends the reply; `ping` is ignored; `error` is an error event.
Stop reasons: `end_turn`, `stop_sequence` and `pause_turn` (only server tools
pause, and none are sent) → end_turn; `tool_use` → tool_use; `max_tokens` and
`model_context_window_exceeded` → max_tokens; `refusal` → refusal.

Authentication: the API key goes in `x-api-key`, so userinfo in the base URL
(`https://user:pass@gateway`) does not compete with it: it is sent as
`Authorization: Basic …` (see `acp_agent.url_credentials`). Messages show the
URL with its userinfo as `***`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

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
    ReasoningEffort,
    Text,
    ToolCall,
    ToolResult,
)
from acp_agent.models._retry import RetryPolicy, parse_retry_after
from acp_agent.models._sse import ServerSentEvent
from acp_agent.models._status import KeyHint, classify_status_error, redact_secrets
from acp_agent.url_credentials import url_target

__all__ = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_VERSION",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "THINKING_BUDGET_TOKENS",
    "AnthropicProvider",
    "request_body",
)

logger = logging.getLogger(__name__)

ANTHROPIC_BASE_URL: Final = "https://api.anthropic.com"
ANTHROPIC_VERSION: Final = "2023-06-01"
#: `max_tokens` is required; this is the visible cap when the request names none.
DEFAULT_MAX_OUTPUT_TOKENS: Final = 8192
#: Thinking budget per effort (Anthropic's minimum is 1024).
THINKING_BUDGET_TOKENS: Final[Mapping[ReasoningEffort, int]] = {
    "low": 2048,
    "medium": 8192,
    "high": 16384,
}

_EPHEMERAL: Final = {"type": "ephemeral"}
_STOP_REASONS: Final[Mapping[str, StopReason]] = {
    "end_turn": StopReason.END_TURN,
    "stop_sequence": StopReason.END_TURN,
    "pause_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
}


class AnthropicProvider:
    """Streams replies from an Anthropic Messages endpoint.

    **Parameters:**

    * `client`: the `httpx.AsyncClient` to send with (its timeouts apply).
    * `name`: the configured provider name, used in messages.
    * `base_url`: without the version path, e.g. `https://api.anthropic.com`; its
      userinfo, if any, is sent as Basic auth (module docstring).
    * `api_key`: sent as `x-api-key`; None sends none.
    * `api_key_env`: where the key came from, named in authentication errors.
    * `retry`: when and how to retry before the first event.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        name: str = "anthropic",
        base_url: str = ANTHROPIC_BASE_URL,
        api_key: str | None = None,
        api_key_env: str | None = "ANTHROPIC_API_KEY",
        retry: RetryPolicy | None = None,
    ):
        self._client = client
        self._name = name
        self._target = url_target(
            base_url.rstrip("/") + "/v1/messages", authorization=None, owner=name
        )
        self._api_key = api_key
        self._key_hint = KeyHint(api_key_env, key_present=api_key is not None)
        self._retry = retry if retry is not None else RetryPolicy()

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"AnthropicProvider(name={self._name!r}, url={self._target.shown!r})"

    def stream(self, request: ModelRequest) -> ModelStream:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        if self._api_key is not None:
            headers["x-api-key"] = self._api_key
        return ModelStream(
            stream_reply(
                self._client,
                provider=self._name,
                target=self._target,
                headers=headers,
                body=request_body(request),
                retry=self._retry,
                read_error=self._read_error,
                new_parser=lambda: _EventParser(self._name, self._error_event),
            )
        )

    def _read_error(self, response: httpx.Response, body: bytes) -> ProviderError:
        decoded = decode_json(body)
        error = decoded.get("error") if isinstance(decoded, dict) else None
        if not isinstance(error, dict):
            error = {"message": body_snippet(body)}
        return self._classify(error, response.status_code, parse_retry_after(response.headers))

    def _error_event(self, error: Any) -> ProviderError:
        return self._classify(error if isinstance(error, dict) else {}, None, None)

    def _classify(
        self, error: dict[str, Any], status: int | None, retry_after_s: float | None
    ) -> ProviderError:
        error_type = error.get("type")
        return classify_status_error(
            provider=self._name,
            status=status,
            message=redact_secrets(str(error.get("message") or ""), [self._api_key]),
            error_type=str(error_type) if error_type is not None else None,
            error_code=None,
            retry_after_s=retry_after_s,
            key_hint=self._key_hint,
        )


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON object sent for `request`."""
    thinking = request.reasoning_effort is not None and _thinking_allowed(request.messages)
    messages: list[dict[str, Any]] = []
    for position, message in enumerate(request.messages):
        content = _content(message, keep_reasoning=thinking)
        if not content:
            continue
        if position == request.cacheable_prefix - 1:
            content[-1]["cache_control"] = dict(_EPHEMERAL)
        messages.append({"role": message.role, "content": content})
    max_tokens = request.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
    body: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens}
    if request.guide:
        body["system"] = [{"type": "text", "text": request.guide, "cache_control": _EPHEMERAL}]
    body["messages"] = messages
    if request.tools:
        body["tools"] = [
            {
                "name": tool.name,
                "description": tool.description,
                "input_schema": dict(tool.input_schema),
            }
            for tool in request.tools
        ]
    if thinking and request.reasoning_effort is not None:
        budget = THINKING_BUDGET_TOKENS[request.reasoning_effort]
        body["max_tokens"] = max_tokens + budget
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    body["stream"] = True
    return body


def _thinking_allowed(messages: tuple[Message, ...]) -> bool:
    """False when a tool loop is open whose assistant turn has no signed reasoning."""
    if not messages or not any(isinstance(part, ToolResult) for part in messages[-1].parts):
        return True
    for message in reversed(messages):
        if message.role == "assistant":
            first = message.parts[0] if message.parts else None
            return isinstance(first, Reasoning) and first.signature is not None
    return True


def _content(message: Message, *, keep_reasoning: bool) -> list[dict[str, Any]]:
    if message.role == "user":
        results = [part for part in message.parts if isinstance(part, ToolResult)]
        others = [part for part in message.parts if not isinstance(part, ToolResult)]
        return [block for part in (*results, *others) if (block := _block(part)) is not None]
    blocks = [
        block
        for part in message.parts
        if (keep_reasoning or not isinstance(part, Reasoning))
        and (block := _block(part)) is not None
    ]
    # An assistant message may not end with thinking (a reply cut off while reasoning).
    while blocks and blocks[-1]["type"] in ("thinking", "redacted_thinking"):
        blocks.pop()
    return blocks


def _block(part: Text | Image | ToolCall | ToolResult | Reasoning) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, Image):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": part.mime_type, "data": part.data_base64},
        }
    if isinstance(part, ToolResult):
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": part.call_id,
            "content": part.content,
        }
        if part.is_error:
            block["is_error"] = True
        return block
    if isinstance(part, ToolCall):
        return {"type": "tool_use", "id": part.call_id, "name": part.name, "input": _input(part)}
    if part.signature is None:
        return None
    if part.redacted:
        return {"type": "redacted_thinking", "data": part.signature}
    return {"type": "thinking", "thinking": part.text, "signature": part.signature}


def _input(call: ToolCall) -> dict[str, Any]:
    """The call's arguments as the object Anthropic requires; {} when they are not one."""
    try:
        value = json.loads(call.arguments) if call.arguments.strip() else {}
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        logger.debug("tool call %s has arguments that are not a JSON object", call.call_id)
        return {}
    return value


@attrs.define
class _Block:
    """A content block being streamed: its kind and what has arrived."""

    kind: str
    pieces: list[str] = attrs.Factory(list)
    signature: str | None = None
    tool_index: int = -1
    call_id: str = ""
    name: str = ""


class _EventParser:
    """Reads one Messages stream; see the module docstring."""

    def __init__(self, provider: str, error_event: Callable[[Any], ProviderError]):
        self._provider = provider
        self._error_event = error_event
        self._done = False
        self._blocks: dict[int, _Block] = {}
        self._tool_calls = 0
        self._input_usage: dict[str, Any] = {}
        self._output_tokens = 0
        self._stop_reason: str | None = None

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, sse: ServerSentEvent) -> list[ModelEvent]:
        try:
            data = json.loads(sse.data)
        except (ValueError, RecursionError) as exc:
            raise ProviderResponseInvalid(
                f"{self._provider} sent an event that is not JSON: "
                f"{body_snippet(sse.data.encode())}",
                provider=self._provider,
            ) from exc
        if not isinstance(data, dict):
            return []
        kind = data.get("type", sse.event)
        if kind == "content_block_delta":
            return self._block_delta(data)
        if kind == "content_block_start":
            return self._block_start(data)
        if kind == "content_block_stop":
            return self._block_stop(data)
        if kind == "message_start":
            message = data.get("message") or {}
            self._input_usage = dict(message.get("usage") or {})
            self._output_tokens = json_int(self._input_usage.get("output_tokens"))
        elif kind == "message_delta":
            self._stop_reason = (data.get("delta") or {}).get("stop_reason") or self._stop_reason
            usage = data.get("usage") or {}
            self._output_tokens = json_int(usage.get("output_tokens")) or self._output_tokens
            for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
                if usage.get(key) is not None:
                    self._input_usage[key] = usage[key]
        elif kind == "message_stop":
            return self._end()
        elif kind == "error":
            raise self._error_event(data.get("error"))
        return []

    def finish(self) -> list[ModelEvent]:
        if self._stop_reason is None:
            raise ProviderConnectionLost(
                f"{self._provider}: the stream ended before the reply was complete",
                provider=self._provider,
            )
        return self._end()

    def _block_start(self, data: dict[str, Any]) -> list[ModelEvent]:
        start = data.get("content_block") or {}
        block = _Block(kind=str(start.get("type")))
        self._blocks[json_int(data.get("index"))] = block
        if block.kind == "tool_use":
            block.tool_index = self._tool_calls
            self._tool_calls += 1
            block.call_id = str(start.get("id") or "")
            block.name = str(start.get("name") or "")
            return [ToolCallStarted(block.tool_index, block.call_id, block.name)]
        if block.kind == "redacted_thinking":
            block.signature = str(start.get("data") or "")
        elif block.kind == "text" and start.get("text"):
            block.pieces.append(start["text"])
            return [TextDelta(start["text"])]
        elif block.kind == "thinking" and start.get("thinking"):
            block.pieces.append(start["thinking"])
            return [ReasoningDelta(start["thinking"])]
        return []

    def _block_delta(self, data: dict[str, Any]) -> list[ModelEvent]:
        block = self._blocks.get(json_int(data.get("index")))
        delta = data.get("delta") or {}
        kind = delta.get("type")
        if block is None:
            return []
        if kind == "text_delta" and delta.get("text"):
            return [TextDelta(delta["text"])]
        if kind == "thinking_delta" and delta.get("thinking"):
            block.pieces.append(delta["thinking"])
            return [ReasoningDelta(delta["thinking"])]
        if kind == "signature_delta":
            block.signature = (block.signature or "") + str(delta.get("signature") or "")
        elif kind == "input_json_delta" and delta.get("partial_json"):
            block.pieces.append(delta["partial_json"])
            return [ToolCallArgumentsDelta(block.tool_index, delta["partial_json"])]
        return []

    def _block_stop(self, data: dict[str, Any]) -> list[ModelEvent]:
        block = self._blocks.pop(json_int(data.get("index")), None)
        if block is None:
            return []
        if block.kind == "tool_use":
            arguments = "".join(block.pieces) or "{}"
            return [ToolCallEnded(block.tool_index, block.call_id, block.name, arguments)]
        if block.kind == "thinking":
            return [ReasoningEnded(Reasoning("".join(block.pieces), block.signature))]
        if block.kind == "redacted_thinking":
            return [ReasoningEnded(Reasoning("", block.signature, redacted=True))]
        return []

    def _end(self) -> list[ModelEvent]:
        self._done = True
        cache_read = json_int(self._input_usage.get("cache_read_input_tokens"))
        cache_write = json_int(self._input_usage.get("cache_creation_input_tokens"))
        uncached = json_int(self._input_usage.get("input_tokens"))
        usage = UsageReported(
            input_tokens=uncached + cache_read + cache_write,
            output_tokens=self._output_tokens,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
        )
        reason = _STOP_REASONS.get(self._stop_reason or "", StopReason.END_TURN)
        if self._tool_calls and reason is StopReason.END_TURN and self._stop_reason is None:
            reason = StopReason.TOOL_USE
        return [usage, ResponseEnded(reason, self._stop_reason)]
