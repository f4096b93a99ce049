"""Token accounting: a character estimate, calibrated by the provider's reports."""

from __future__ import annotations

import pytest

from acp_agent.capabilities.context._token_budget import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    ContextUsage,
    TokenAccount,
    estimate_request_tokens,
    estimate_text_tokens,
)
from acp_agent.models import Image, Message, ModelRequest, Text, ToolSpec


def test_the_estimate_counts_characters_per_token_plus_overheads() -> None:
    request = ModelRequest(
        model="m",
        guide="g" * 40,
        messages=[Message("user", [Text("x" * 9), Image("aGk=", "image/png")])],
        tools=[ToolSpec("t", "d", {})],
    )
    tools = estimate_text_tokens("td{}")
    expected = 10 + tools + MESSAGE_OVERHEAD_TOKENS + 3 + IMAGE_TOKENS
    assert estimate_request_tokens(request) == expected


def test_the_first_report_sets_the_ratio_and_later_ones_move_it_halfway() -> None:
    account = TokenAccount(1000)
    account.note_estimate(100)
    account.note_usage(200, 5)
    assert account.ratio == 2.0
    account.note_estimate(100)
    account.note_usage(100, 5)
    assert account.ratio == 1.5
    assert account.calibrated(100) == 150


def test_an_odd_report_cannot_run_the_ratio_away() -> None:
    account = TokenAccount(1000)
    account.note_estimate(100)
    account.note_usage(100_000, 0)
    assert account.ratio == 4.0


def test_a_report_without_an_estimate_updates_usage_but_not_the_ratio() -> None:
    account = TokenAccount(1000)
    account.note_usage(300, 20)
    assert account.ratio == 1.0
    assert account.usage() == ContextUsage(320, 1000)


def test_usage_is_the_calibrated_estimate_until_the_provider_reports() -> None:
    account = TokenAccount(1000)
    account.note_estimate(100)
    account.note_usage(200, 10)
    assert account.note_estimate(50) == 100
    assert account.usage() == ContextUsage(100, 1000)


def test_a_window_and_smoothing_must_make_sense() -> None:
    with pytest.raises(ValueError, match="at least one token"):
        TokenAccount(0)
    with pytest.raises(ValueError, match="fraction"):
        TokenAccount(10, smoothing=0)


def test_a_refusal_within_the_known_window_teaches_a_smaller_one_and_repeats_halve_it() -> None:
    account = TokenAccount(128_000)
    assert account.note_overflow(200_000) == 128_000  # larger than we knew: nothing new
    assert account.note_overflow(40_000) == 36_000  # the window was wrong: 90% of it
    assert account.note_overflow(30_000) == 15_000  # refused again within it: half
    assert account.note_overflow(100) == 1024  # never below the floor
    assert account.usage().size_tokens == 1024
