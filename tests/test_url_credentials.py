"""URL credentials: how they are hidden in any text, and what they add to a request."""

from __future__ import annotations

import base64
import logging

import pytest

from acp_agent.url_credentials import UrlTarget, redact_url_credentials, url_target


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://user:secret@host:8080/v1", "http://***@host:8080/v1"),
        ("https://ghp_token@example.com/mcp", "https://***@example.com/mcp"),
        ("http://user:p@ss@host/v1", "http://***@host/v1"),  # an unencoded @ in the password
        ("http://us%40er:p%2Fss@host", "http://***@host"),
        ("http://***@host/v1", "http://***@host/v1"),  # already redacted: unchanged
        ("https://registry.npmjs.org/@scope/pkg", "https://registry.npmjs.org/@scope/pkg"),
        ("https://host/path?user=a@b.c", "https://host/path?user=a@b.c"),
        ("write to bob@example.com", "write to bob@example.com"),
        (
            "for url 'http://u:p@a/x' then wss://k@b:1?q",
            "for url 'http://***@a/x' then wss://***@b:1?q",
        ),
    ],
)
def test_userinfo_of_every_url_in_a_text_is_shown_as_stars(text: str, shown: str) -> None:
    assert redact_url_credentials(text) == shown


def test_a_url_without_userinfo_is_sent_and_shown_as_it_is() -> None:
    assert url_target("http://host/v1", authorization=None, owner="openai") == UrlTarget(
        "http://host/v1", "http://host/v1"
    )


def test_userinfo_becomes_basic_auth_when_nothing_else_fills_authorization() -> None:
    target = url_target("http://us%40er:p%3Ass@host/v1", authorization=None, owner="openai")

    basic = base64.b64encode(b"us@er:p:ss").decode()
    assert target == UrlTarget(
        "http://host/v1", "http://***@host/v1", {"authorization": f"Basic {basic}"}
    )


def test_userinfo_is_ignored_with_one_warning_when_authorization_is_taken(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = "http://user:secret@warned-once.example/v1"
    with caplog.at_level(logging.WARNING, logger="acp_agent.url_credentials"):
        targets = [url_target(url, authorization="OPENAI_API_KEY", owner="openai") for _ in "abc"]

    bare = UrlTarget("http://warned-once.example/v1", "http://***@warned-once.example/v1")
    assert targets == [bare] * 3
    assert [record.getMessage() for record in caplog.records] == [
        "openai: the userinfo of http://***@warned-once.example/v1 is ignored: OPENAI_API_KEY "
        "fills the Authorization header instead; remove the userinfo from the URL to silence this"
    ]


def test_empty_userinfo_adds_no_header() -> None:
    assert url_target("http://@host/v1", authorization=None, owner="openai") == UrlTarget(
        "http://host/v1", "http://***@host/v1"
    )
