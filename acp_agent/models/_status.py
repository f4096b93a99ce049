"""Which `ProviderStatusError` an error answer is, whatever the provider's dialect.

Providers differ in how they say the same thing: OpenAI uses codes
(`context_length_exceeded`, `insufficient_quota`), Anthropic types
(`overloaded_error`) and prose ("prompt is too long"), compatible servers a
mix. Each provider extracts status, message, type and code from its own error
body; `classify_status_error` picks the class from them, in one place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from acp_agent.models._errors import (
    AuthenticationFailed,
    ContextWindowExceeded,
    ModelNotFound,
    ProviderOverloaded,
    ProviderStatusError,
    QuotaExceeded,
    RateLimited,
)

__all__ = ("KeyHint", "classify_status_error", "redact_secrets")

_CONTEXT_PHRASES = (
    "prompt is too long",
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "exceeds the available context",
    "exceed_context_size",
)
_QUOTA_PHRASES = ("insufficient_quota", "credit balance", "exceeded your current quota")
#: Types and codes that say the provider's side failed (Anthropic, OpenAI, OpenRouter).
_SERVER_SIDE = ("overloaded_error", "api_error", "server_error")
_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_*.\-]{5,}[A-Za-z0-9_*\-]|Bearer\s+\S+)")


class KeyHint:
    """Where the API key comes from, to tell the user what to check (never the key)."""

    def __init__(self, key_env: str | None, key_present: bool):
        self.key_env = key_env
        self.key_present = key_present

    def advice(self, provider: str) -> str:
        if self.key_env is None:
            return (
                f"{provider} is configured without an API key; "
                "set api_key_env for it in config.toml if it needs one."
            )
        if not self.key_present:
            return f"Set {self.key_env} to an API key for {provider}."
        return f"Check {self.key_env}: it must hold a valid API key with access to this model."


def redact_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """`text` without the given secrets and without anything shaped like an API key."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return _KEY_LIKE.sub("[redacted]", text)


def classify_status_error(
    *,
    provider: str,
    status: int | None,
    message: str,
    error_type: str | None,
    error_code: str | None,
    retry_after_s: float | None,
    key_hint: KeyHint,
) -> ProviderStatusError:
    """The error for an error answer; `message` must already be redacted."""
    kind, hint = _kind_and_hint(
        provider=provider,
        status=status,
        text=message.lower(),
        error_type=(error_type or "").lower(),
        error_code=(error_code or "").lower(),
        retry_after_s=retry_after_s,
        key_hint=key_hint,
    )
    return kind(
        provider=provider,
        status=status,
        provider_message=message,
        error_type=error_type,
        error_code=error_code,
        retry_after_s=retry_after_s,
        hint=hint,
    )


def _kind_and_hint(
    *,
    provider: str,
    status: int | None,
    text: str,
    error_type: str,
    error_code: str,
    retry_after_s: float | None,
    key_hint: KeyHint,
) -> tuple[type[ProviderStatusError], str]:
    if error_code == "insufficient_quota" or any(phrase in text for phrase in _QUOTA_PHRASES):
        return QuotaExceeded, "The account is out of credit or over its quota; check its billing."
    if status in (401, 403) or error_type in ("authentication_error", "permission_error"):
        return AuthenticationFailed, key_hint.advice(provider)
    if (
        status == 413
        or error_code == "context_length_exceeded"
        or error_type == "exceed_context_size_error"
        or any(phrase in text for phrase in _CONTEXT_PHRASES)
    ):
        return (
            ContextWindowExceeded,
            "The conversation no longer fits the model's context window.",
        )
    if status == 404 or error_code == "model_not_found" or error_type == "not_found_error":
        return ModelNotFound, "Check the model name, and that this provider serves it."
    if status == 429 or error_type == "rate_limit_error" or error_code == "rate_limit_exceeded":
        wait = f"retry after {retry_after_s:g} s" if retry_after_s is not None else "retry later"
        return RateLimited, f"Rate limited: {wait}."
    if (
        (status is not None and status >= 500)
        or error_type in _SERVER_SIDE
        or error_code in _SERVER_SIDE
    ):
        return ProviderOverloaded, "The provider is failing or overloaded; try again shortly."
    return ProviderStatusError, ""
