"""The provider error tree: drawn right, reached from httpx once, chosen from error answers."""

from __future__ import annotations

import re

import httpx
import pytest

from acp_agent.models import (
    AuthenticationFailed,
    ContextWindowExceeded,
    ModelNotFound,
    ProviderConnectError,
    ProviderConnectionLost,
    ProviderError,
    ProviderNotConfigured,
    ProviderOverloaded,
    ProviderResponseInvalid,
    ProviderStatusError,
    ProviderTimeout,
    ProviderTransportError,
    QuotaExceeded,
    RateLimited,
)
from acp_agent.models import _errors as errors
from acp_agent.models._http import map_httpx_errors
from acp_agent.models._status import KeyHint, classify_status_error, redact_secrets

REQUEST = httpx.Request("POST", "https://api.example.com/v1/chat/completions")


def test_the_docstring_tree_is_the_class_tree() -> None:
    assert errors.__doc__ is not None
    drawn = [
        (match.group(1), match.group(2))
        for line in errors.__doc__.splitlines()
        if (match := re.match(r"^([\s│├└─]*)(\w+)\s{2,}\S", line))
    ]
    parents: list[tuple[int, type]] = []
    names = set()
    for indent, name in drawn:
        cls = getattr(errors, name)
        depth = len(indent)
        while parents and parents[-1][0] >= depth:
            parents.pop()
        if parents:
            assert cls.__bases__ == (parents[-1][1],), name
        parents.append((depth, cls))
        names.add(name)
    assert names == set(errors.__all__)


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (httpx.ConnectTimeout("timed out", request=REQUEST), ProviderTimeout),
        (httpx.ReadTimeout("timed out", request=REQUEST), ProviderTimeout),
        (httpx.PoolTimeout("timed out", request=REQUEST), ProviderTimeout),
        (
            httpx.ConnectError("[Errno 111] Connection refused", request=REQUEST),
            ProviderConnectError,
        ),
        (httpx.ReadError("reset by peer", request=REQUEST), ProviderConnectionLost),
        (httpx.RemoteProtocolError("peer closed", request=REQUEST), ProviderConnectionLost),
        (httpx.WriteError("broken pipe", request=REQUEST), ProviderConnectionLost),
        (httpx.UnsupportedProtocol("ftp", request=REQUEST), ProviderNotConfigured),
        (httpx.InvalidURL("bad"), ProviderNotConfigured),
        (httpx.DecodingError("gzip", request=REQUEST), ProviderResponseInvalid),
        (httpx.ProxyError("proxy said no", request=REQUEST), ProviderTransportError),
        (httpx.TooManyRedirects("loop", request=REQUEST), ProviderTransportError),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else value.__name__,
)
def test_httpx_exceptions_are_translated_and_never_leak(
    raised: Exception, expected: type[ProviderError]
) -> None:
    with pytest.raises(ProviderError) as caught, map_httpx_errors("openai", str(REQUEST.url)):
        raise raised
    assert type(caught.value) is expected
    assert caught.value.provider == "openai"
    assert caught.value.__cause__ is raised


def test_other_exceptions_pass_through_untouched() -> None:
    with pytest.raises(KeyError), map_httpx_errors("openai", "u"):
        raise KeyError("x")


@pytest.mark.parametrize(
    ("status", "error_type", "code", "message", "expected"),
    [
        (
            401,
            "invalid_request_error",
            "invalid_api_key",
            "Incorrect API key",
            AuthenticationFailed,
        ),
        (403, "permission_error", None, "no access", AuthenticationFailed),
        (404, "invalid_request_error", "model_not_found", "no such model", ModelNotFound),
        (400, "not_found_error", None, "model: x", ModelNotFound),
        (
            400,
            "invalid_request_error",
            "context_length_exceeded",
            "too long",
            ContextWindowExceeded,
        ),
        (400, "invalid_request_error", None, "prompt is too long: 9 > 8", ContextWindowExceeded),
        (400, "exceed_context_size_error", None, "exceeds ctx", ContextWindowExceeded),
        (413, "request_too_large", None, "Request exceeds the maximum size", ContextWindowExceeded),
        (429, "rate_limit_error", None, "slow down", RateLimited),
        (429, "insufficient_quota", "insufficient_quota", "quota", QuotaExceeded),
        (400, "invalid_request_error", None, "Your credit balance is too low", QuotaExceeded),
        (500, "api_error", None, "Internal server error", ProviderOverloaded),
        (529, "overloaded_error", None, "Overloaded", ProviderOverloaded),
        (None, "overloaded_error", None, "Overloaded", ProviderOverloaded),
        (None, None, "server_error", "Provider disconnected", ProviderOverloaded),
        (400, "invalid_request_error", None, "tools.0: bad schema", ProviderStatusError),
    ],
)
def test_error_answers_are_classified_whatever_the_dialect(
    status: int | None,
    error_type: str | None,
    code: str | None,
    message: str,
    expected: type[ProviderStatusError],
) -> None:
    error = classify_status_error(
        provider="p",
        status=status,
        message=message,
        error_type=error_type,
        error_code=code,
        retry_after_s=None,
        key_hint=KeyHint("P_KEY", key_present=True),
    )
    assert type(error) is expected


def test_authentication_advice_says_what_to_set_or_check() -> None:
    def advice(key_env: str | None, present: bool) -> str:
        return KeyHint(key_env, present).advice("openai")

    assert advice("OPENAI_API_KEY", True).startswith("Check OPENAI_API_KEY")
    assert advice("OPENAI_API_KEY", False).startswith("Set OPENAI_API_KEY")
    assert "api_key_env" in advice(None, False)


def test_keys_are_redacted_from_provider_messages() -> None:
    message = "Incorrect API key provided: sk-proj-abcdef123456. Also Bearer abc.def and s3cr3t."
    assert redact_secrets(message, ["s3cr3t", None]) == (
        "Incorrect API key provided: [redacted]. Also [redacted] and [redacted]."
    )


def test_translated_httpx_errors_show_url_userinfo_as_stars() -> None:
    url = "http://user:s3cr3t@proxy.example/v1/chat/completions"
    raised = httpx.InvalidURL(f"Invalid port in {url}")

    with pytest.raises(ProviderError) as caught, map_httpx_errors("openai", url):
        raise raised

    assert str(caught.value) == (
        "openai: http://***@proxy.example/v1/chat/completions is not a usable http(s) URL "
        "(Invalid port in http://***@proxy.example/v1/chat/completions); check its base_url"
    )
