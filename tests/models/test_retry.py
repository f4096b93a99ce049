"""When a failed request is tried again, and after how long."""

from __future__ import annotations

import httpx
import pytest

from acp_agent.models import (
    AuthenticationFailed,
    ContextWindowExceeded,
    ProviderConnectError,
    ProviderError,
    ProviderOverloaded,
    ProviderResponseInvalid,
    QuotaExceeded,
    RateLimited,
    RetryPolicy,
    StreamBroken,
)
from acp_agent.models._retry import parse_retry_after

NOW = 1_790_000_000.0  # 2026-09-21T14:13:20Z


def status_error(
    kind: type[RateLimited | ProviderOverloaded], retry_after_s: float | None
) -> ProviderError:
    return kind(provider="p", status=429, provider_message="m", retry_after_s=retry_after_s)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Mon, 21 Sep 2026 14:13:50 GMT"}, 30.0),
        ({"retry-after": "Mon, 21 Sep 2026 14:00:00 GMT"}, 0.0),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_is_read_as_seconds_milliseconds_or_an_http_date(
    headers: dict[str, str], expected: float | None
) -> None:
    assert parse_retry_after(httpx.Headers(headers), now=lambda: NOW) == expected


def test_backoff_draws_from_a_doubling_capped_ceiling() -> None:
    policy = RetryPolicy(max_attempts=10, base_delay_s=1.0, max_delay_s=5.0, jitter=lambda: 1.0)
    error = status_error(ProviderOverloaded, None)
    assert [policy.delay_before_retry(error, attempt) for attempt in range(1, 6)] == [
        1.0,
        2.0,
        4.0,
        5.0,
        5.0,
    ]


def test_full_jitter_scales_the_ceiling_by_the_draw() -> None:
    policy = RetryPolicy(base_delay_s=2.0, jitter=lambda: 0.25)
    assert policy.delay_before_retry(status_error(ProviderOverloaded, None), 2) == 1.0


def test_retry_after_is_honoured_exactly_up_to_the_cap() -> None:
    policy = RetryPolicy(max_retry_after_s=60.0, jitter=lambda: 0.0)
    assert policy.delay_before_retry(status_error(RateLimited, 42.0), 1) == 42.0
    assert policy.delay_before_retry(status_error(RateLimited, 61.0), 1) is None


def test_attempts_are_bounded() -> None:
    policy = RetryPolicy(max_attempts=3)
    error = ProviderConnectError("refused", provider="p")
    assert policy.delay_before_retry(error, 2) is not None
    assert policy.delay_before_retry(error, 3) is None


@pytest.mark.parametrize(
    "error",
    [
        AuthenticationFailed(provider="p", status=401, provider_message="no"),
        QuotaExceeded(provider="p", status=429, provider_message="no"),
        ContextWindowExceeded(provider="p", status=400, provider_message="no"),
        ProviderResponseInvalid("not SSE", provider="p"),
        StreamBroken(provider="p", events_received=3, reason="reset"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_errors_that_a_retry_cannot_fix_are_not_retried(error: ProviderError) -> None:
    assert RetryPolicy().delay_before_retry(error, 1) is None
