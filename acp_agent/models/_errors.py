"""Why a model provider gave no reply, or no complete one.

The tree::

    ProviderError                    a provider could not give a complete reply
    ├── ProviderTransportError       no usable HTTP exchange (network, sockets, timeouts)
    │   ├── ProviderTimeout          connect, read, write or pool timeout
    │   ├── ProviderConnectError     could not reach the server (refused, DNS, TLS, bad URL)
    │   └── ProviderConnectionLost   the connection closed before the reply began
    ├── ProviderStatusError          the provider answered with an error (status or error event)
    │   ├── AuthenticationFailed     401/403: the API key is missing, wrong or not allowed
    │   ├── ModelNotFound            404, model_not_found: no such model here
    │   ├── ContextWindowExceeded    the prompt does not fit the model's context window
    │   ├── RateLimited              429: too many requests; `retry_after_s` says when to retry
    │   ├── QuotaExceeded            out of credit or quota: retrying will not help
    │   └── ProviderOverloaded       5xx, 529, overloaded_error: the provider's side is failing
    ├── ProviderResponseInvalid      the reply was not in the provider's format
    ├── StreamBroken                 the reply started, then broke off: what arrived is partial
    └── ProviderNotConfigured        no usable provider or model; says how to configure one
        └── ConfigFileInvalid        config.toml could not be read or is not in the format

Errors raised before the first event of a reply are retried when it may help
(`acp_agent.models._retry`); once an event was yielded a failure is always
`StreamBroken`, with the original error as its `__cause__`. No `httpx`
exception leaves this package: `_http.map_httpx_errors()` translates them.

Messages never contain API keys: provider messages that echo one are redacted.
"""

from __future__ import annotations

__all__ = (
    "AuthenticationFailed",
    "ConfigFileInvalid",
    "ContextWindowExceeded",
    "ModelNotFound",
    "ProviderConnectError",
    "ProviderConnectionLost",
    "ProviderError",
    "ProviderNotConfigured",
    "ProviderOverloaded",
    "ProviderResponseInvalid",
    "ProviderStatusError",
    "ProviderTimeout",
    "ProviderTransportError",
    "QuotaExceeded",
    "RateLimited",
    "StreamBroken",
)


class ProviderError(Exception):
    """A model provider could not give a complete reply. `provider` names it, when known."""

    def __init__(self, message: str, *, provider: str | None = None):
        super().__init__(message)
        self.provider = provider


class ProviderTransportError(ProviderError):
    """No usable HTTP exchange happened: the network, a socket or a timeout failed."""


class ProviderTimeout(ProviderTransportError):
    """Connecting, sending or waiting for the next bytes took too long."""


class ProviderConnectError(ProviderTransportError):
    """The server could not be reached: refused, unknown host, TLS failure, bad URL."""


class ProviderConnectionLost(ProviderTransportError):
    """The connection closed before the reply began (a reset, or an empty stream)."""


class ProviderStatusError(ProviderError):
    """The provider answered with an error: an HTTP status, or an error event in the stream.

    **Attributes:**

    * `status`: the HTTP status, or None for an error event inside a 200 stream.
    * `provider_message`: what the provider said, with anything like a key redacted.
    * `error_type`, `error_code`: the provider's classification, when it gave one
      (`overloaded_error`, `context_length_exceeded`).
    * `retry_after_s`: how long the provider asked us to wait, when it did.
    """

    def __init__(
        self,
        *,
        provider: str,
        status: int | None,
        provider_message: str,
        error_type: str | None = None,
        error_code: str | None = None,
        retry_after_s: float | None = None,
        hint: str = "",
    ):
        self.status = status
        self.provider_message = provider_message
        self.error_type = error_type
        self.error_code = error_code
        self.retry_after_s = retry_after_s
        what = f"answered {status}" if status is not None else "sent an error"
        kind = f" ({error_code or error_type})" if (error_code or error_type) else ""
        message = f"{provider} {what}{kind}: {provider_message or '(no message)'}"
        super().__init__(f"{message}. {hint}" if hint else message, provider=provider)


class AuthenticationFailed(ProviderStatusError):
    """The provider refused the API key (401, 403): missing, wrong, or without access."""


class ModelNotFound(ProviderStatusError):
    """The provider has no model by that name, or this key may not use it."""


class ContextWindowExceeded(ProviderStatusError):
    """The prompt is longer than the model's context window: compact or drop history."""


class RateLimited(ProviderStatusError):
    """Too many requests or tokens per minute; `retry_after_s` says when to try again."""


class QuotaExceeded(ProviderStatusError):
    """The account is out of credit or quota. Retrying will not help; the user must act."""


class ProviderOverloaded(ProviderStatusError):
    """The provider's side failed or is overloaded (5xx, 529); a later retry may succeed."""


class ProviderResponseInvalid(ProviderError):
    """The provider's reply was not in its documented format (not SSE, bad JSON)."""


class StreamBroken(ProviderError):
    """The reply started, then broke off; the events already yielded are a partial reply.

    The caller keeps what it received and marks it incomplete; the reply is
    never replayed. `events_received` counts the events yielded before the
    break, and `__cause__` is the error that broke it.
    """

    def __init__(self, *, provider: str, events_received: int, reason: str):
        self.events_received = events_received
        self.reason = reason
        super().__init__(
            f"the {provider} reply broke off after {events_received} "
            f"event{'' if events_received == 1 else 's'} ({reason}); "
            "what arrived is incomplete",
            provider=provider,
        )


class ProviderNotConfigured(ProviderError):
    """No usable provider or model is configured; the message says how to configure one."""


class ConfigFileInvalid(ProviderNotConfigured):
    """The models configuration file could not be read or is not in the documented format."""
