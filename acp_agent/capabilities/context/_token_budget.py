"""Token accounting: a cheap estimate before sending, calibrated by what the provider reports.

The estimate counts characters (`CHARS_PER_TOKEN` per token) plus a fixed
overhead per message and per image; it needs no tokenizer and is the same
for every provider. After each reply the provider reports the input tokens
it actually counted; `TokenAccount` keeps a smoothed ratio of reported to
estimated and applies it to later estimates. The account also says how
full the context is, for the editor's `usage_update` (`used`, `size`).

The configured window can be wrong (a local server started with a small
context, a model name the table does not know). When the provider refuses a
request as too long, `note_overflow` learns a smaller window: half the
refused request, so a few refusals find any real limit; every later request,
compaction and check uses `window_tokens`, the smaller of the two.
"""

from __future__ import annotations

import json
from typing import Final

import attrs

from acp_agent.models import Image, Message, ModelRequest, Reasoning, Text, ToolCall, ToolResult
from acp_agent.values import Value

__all__ = (
    "CHARS_PER_TOKEN",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "ContextUsage",
    "TokenAccount",
    "estimate_message_tokens",
    "estimate_request_tokens",
    "estimate_text_tokens",
)

CHARS_PER_TOKEN: Final = 4
#: Role markers and separators a provider adds around each message.
MESSAGE_OVERHEAD_TOKENS: Final = 4
#: What an image costs, roughly (a ~1000x1000 picture at Anthropic's and OpenAI's rates).
IMAGE_TOKENS: Final = 1600
#: The calibration ratio stays within these bounds, so one odd report cannot run away.
MIN_RATIO: Final = 0.25
MAX_RATIO: Final = 4.0
#: A window learned from refusals is never taken to be smaller than this.
MIN_LEARNED_WINDOW_TOKENS: Final = 1024


def estimate_text_tokens(text: str) -> int:
    """Tokens in `text`, by characters; at least 1 for non-empty text."""
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate_message_tokens(message: Message) -> int:
    """Tokens one message costs, with its overhead."""
    tokens = MESSAGE_OVERHEAD_TOKENS
    for part in message.parts:
        if isinstance(part, Text | Reasoning):
            tokens += estimate_text_tokens(part.text)
        elif isinstance(part, ToolResult):
            tokens += estimate_text_tokens(part.content) + MESSAGE_OVERHEAD_TOKENS
        elif isinstance(part, ToolCall):
            tokens += estimate_text_tokens(part.name + part.arguments) + MESSAGE_OVERHEAD_TOKENS
        elif isinstance(part, Image):
            tokens += IMAGE_TOKENS
    return tokens


def estimate_request_tokens(request: ModelRequest) -> int:
    """Input tokens `request` costs: guide, tool definitions and messages."""
    tokens = estimate_text_tokens(request.guide)
    for tool in request.tools:
        schema = json.dumps(dict(tool.input_schema), separators=(",", ":"), sort_keys=True)
        tokens += estimate_text_tokens(tool.name + tool.description + schema)
    return tokens + sum(estimate_message_tokens(message) for message in request.messages)


@attrs.frozen
class ContextUsage(Value):
    """How full the context is: ACP `usage_update`'s `used` and `size`."""

    used_tokens: int
    size_tokens: int


class TokenAccount:
    """A branch's calibration ratio and the last known context use.

    **Parameters:**

    * `context_window_tokens`: the model's context window.
    * `smoothing`: how much each new report moves the ratio (0..1).
    """

    def __init__(self, context_window_tokens: int, *, smoothing: float = 0.5) -> None:
        if context_window_tokens <= 0:
            raise ValueError("the context window must hold at least one token")
        if not 0 < smoothing <= 1:
            raise ValueError("smoothing is a fraction in (0, 1]")
        self.context_window_tokens = context_window_tokens
        self._learned_window: int | None = None
        self._smoothing = smoothing
        self._ratio = 1.0
        self._calibrated = False
        self._last_estimate: int | None = None
        self._used_tokens = 0

    @property
    def window_tokens(self) -> int:
        """The window requests must fit: the configured one, or a smaller one learned."""
        if self._learned_window is None:
            return self.context_window_tokens
        return min(self.context_window_tokens, self._learned_window)

    def note_overflow(self, estimate: int | None = None) -> int:
        """The provider refused a request (calibrated estimate `estimate`, default: the
        last one) as larger than its window: learn a smaller window. Returns it.

        The first refusal of a request larger than the window we knew teaches 90% of
        it; one that still fails within what we knew halves that, so a few refusals
        find any real limit.
        """
        refused = estimate if estimate is not None else self._used_tokens
        if refused <= 0:
            return self.window_tokens
        known = self.window_tokens
        if refused > known:
            return known  # larger than the window we knew: nothing new
        learned = refused * 9 // 10 if self._learned_window is None else refused // 2
        self._learned_window = max(MIN_LEARNED_WINDOW_TOKENS, learned)
        return self.window_tokens

    @property
    def ratio(self) -> float:
        """Reported input tokens per estimated token, smoothed; 1.0 until the first report."""
        return self._ratio

    def calibrated(self, estimate: int) -> int:
        """`estimate` corrected by the ratio."""
        return round(estimate * self._ratio)

    def note_estimate(self, estimate: int) -> int:
        """A request estimated at `estimate` is about to be sent; returns it calibrated."""
        self._last_estimate = estimate
        self._used_tokens = self.calibrated(estimate)
        return self._used_tokens

    def note_usage(self, input_tokens: int, output_tokens: int) -> None:
        """The provider counted this for the last request: calibrate, and update `used`."""
        self._used_tokens = input_tokens + output_tokens
        estimate = self._last_estimate
        self._last_estimate = None
        if estimate is None or estimate <= 0 or input_tokens <= 0:
            return
        sample = min(MAX_RATIO, max(MIN_RATIO, input_tokens / estimate))
        if self._calibrated:
            self._ratio += self._smoothing * (sample - self._ratio)
        else:
            self._ratio, self._calibrated = sample, True

    def usage(self) -> ContextUsage:
        """What to show as `usage_update`."""
        return ContextUsage(self._used_tokens, self.window_tokens)
