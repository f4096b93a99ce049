"""When to try a model request again, and how long to wait first.

A request is retried only while it has yielded nothing: once the first event
reached the consumer the reply is never replayed (a failure then is
`StreamBroken`). What is retried: `RateLimited` (429), `ProviderOverloaded`
(5xx, 529, overloaded errors, also as an error event before any output) and
`ProviderTransportError` (refused or reset connections, timeouts). Never
retried: authentication, quota, unknown model, context window, bad requests.

The wait honours the provider's `Retry-After` (seconds or an HTTP date, or
`retry-after-ms`) when it gave one; a provider asking for longer than
`max_retry_after_s` is not waited for: the error goes to the caller at once,
with `retry_after_s` set, so a person can decide. Otherwise the wait is
exponential backoff with full jitter: a uniform draw from
``[0, min(max_delay_s, base_delay_s * 2 ** (attempt - 1))]``.

`sleep` and `jitter` are injectable, so tests neither wait nor guess.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeAlias

import anyio
import attrs

from acp_agent.models._errors import (
    ProviderError,
    ProviderOverloaded,
    ProviderStatusError,
    ProviderTransportError,
    RateLimited,
)
from acp_agent.values import Value

__all__ = ("NO_RETRY", "RetryPolicy", "Sleep", "is_retryable", "parse_retry_after")

#: An awaitable pause of the given number of seconds (`anyio.sleep`, or a test's recorder).
Sleep: TypeAlias = Callable[[float], Awaitable[None]]


def is_retryable(error: ProviderError) -> bool:
    """Whether trying the same request again may succeed."""
    return isinstance(error, RateLimited | ProviderOverloaded | ProviderTransportError)


@attrs.frozen
class RetryPolicy(Value):
    """Bounded retries with exponential backoff and full jitter.

    **Parameters:**

    * `max_attempts`: attempts in all, the first included (1 means no retry).
    * `base_delay_s`, `max_delay_s`: the backoff's first ceiling and its cap.
    * `max_retry_after_s`: the longest `Retry-After` the policy waits for.
    * `sleep`: how to wait; `jitter`: a draw from [0, 1).
    """

    max_attempts: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0
    sleep: Sleep = anyio.sleep
    jitter: Callable[[], float] = random.random

    def delay_before_retry(self, error: ProviderError, attempts_made: int) -> float | None:
        """Seconds to wait before another attempt after `error`, or None to give up."""
        if attempts_made >= self.max_attempts or not is_retryable(error):
            return None
        if isinstance(error, ProviderStatusError) and error.retry_after_s is not None:
            if error.retry_after_s > self.max_retry_after_s:
                return None
            return max(0.0, error.retry_after_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0 ** (attempts_made - 1))
        return self.jitter() * ceiling


#: One attempt, no retries.
NO_RETRY = RetryPolicy(max_attempts=1)


def parse_retry_after(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """The wait a response asks for, in seconds, or None when it names none.

    Reads `retry-after-ms`, then `retry-after` as seconds or as an HTTP date
    (`Wed, 21 Oct 2026 07:28:00 GMT`, measured against `now()`); a date in the
    past means 0. `headers` must look names up case-insensitively, as
    `httpx.Headers` does.
    """
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now())
