"""Whether a model's provider answers, with a call that spends no tokens.

OpenAI-compatible servers: `GET {base_url}/models` (the key as `Authorization:
Bearer`), then look for the model's id in the list (`qwen3` also matches Ollama's
`qwen3:latest`). Anthropic: `GET {base_url}/v1/models/{model}` (`x-api-key`,
`anthropic-version`), which also resolves aliases (`claude-sonnet-4-5` to its
dated id); on a 404 the list (`GET /v1/models`) tells an unknown model from a
server that cannot list. Userinfo in the base URL is handled as the providers
handle it (`acp_agent.url_credentials`); every URL shown has it as `***`.

The outcomes name the failure: the key refused (401, 403), the server unreachable
(connect error, DNS) or silent (timeout), the model unknown, the server unable to
list models (404, 405, 501: it may still serve the model), or another answer.
"""

from __future__ import annotations

import enum
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

import attrs
import httpx

from acp_agent.models import ANTHROPIC_VERSION, ResolvedModel, redact_secrets
from acp_agent.url_credentials import UrlTarget, redact_url_credentials, url_target
from acp_agent.values import Value

__all__ = ("ProbeOutcome", "ProviderAnswer", "probe_provider")

#: Statuses that say "no such endpoint here", not "no such model".
_CANNOT_LIST: Final = frozenset({404, 405, 501})
#: How much of an error body is quoted.
_MESSAGE_CHARS: Final = 200
#: Anthropic's list page size (its maximum).
_ANTHROPIC_PAGE: Final = 1000


class ProbeOutcome(enum.Enum):
    """What the provider's answer says about the model."""

    #: The provider knows the model.
    LISTED = "listed"
    #: The provider listed its models; this one is not among them.
    NOT_LISTED = "not listed"
    #: The provider answered, but cannot list models (the model was not checked).
    CANNOT_LIST = "cannot list"
    #: The key was refused (401, 403).
    REFUSED_KEY = "refused key"
    #: Rate limited right now (429): the key works.
    RATE_LIMITED = "rate limited"
    #: No connection (refused, DNS, TLS).
    UNREACHABLE = "unreachable"
    #: Connected, or tried to, but no answer in time.
    TIMED_OUT = "timed out"
    #: The base URL is not a usable http(s) URL.
    BAD_URL = "bad url"
    #: Any other failure (a 5xx, a broken answer).
    FAILED = "failed"


@attrs.frozen
class ProviderAnswer(Value):
    """The outcome of one probe, with what to show about it."""

    outcome: ProbeOutcome
    #: The URL asked, userinfo as `***`.
    url: str
    #: The HTTP status, when there was an answer.
    status: int | None = None
    #: One line: the provider's message, or the connection error (redacted).
    detail: str = ""
    #: For NOT_LISTED: (some of) the ids the provider lists.
    listed: tuple[str, ...] = ()
    #: For LISTED: the provider's own id for the model, when it differs (an alias).
    resolved: str | None = None
    elapsed_ms: int = 0


async def probe_provider(resolved: ResolvedModel, timeout_s: float) -> ProviderAnswer:
    """Ask `resolved`'s provider about its model; never raises for a provider's failure."""
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        if resolved.provider.kind == "anthropic":
            return await _probe_anthropic(client, resolved)
        return await _probe_openai(client, resolved)


async def _probe_openai(client: httpx.AsyncClient, resolved: ResolvedModel) -> ProviderAnswer:
    settings = resolved.provider
    target = url_target(
        settings.base_url.rstrip("/") + "/models",
        authorization=None if resolved.api_key is None else (settings.api_key_env or "the API key"),
        owner=settings.name,
    )
    headers = {"accept": "application/json"}
    if resolved.api_key is not None:
        headers["authorization"] = f"Bearer {resolved.api_key}"
    listed = await _get_list(client, target, headers, resolved)
    if isinstance(listed, ProviderAnswer):
        return listed
    ids, response, elapsed_ms = listed
    model = resolved.model
    for candidate in (model, f"{model}:latest"):
        if candidate in ids:
            found = None if candidate == model else candidate
            return ProviderAnswer(
                ProbeOutcome.LISTED,
                target.shown,
                response.status_code,
                resolved=found,
                elapsed_ms=elapsed_ms,
            )
    return ProviderAnswer(
        ProbeOutcome.NOT_LISTED,
        target.shown,
        response.status_code,
        listed=tuple(ids),
        elapsed_ms=elapsed_ms,
    )


async def _probe_anthropic(client: httpx.AsyncClient, resolved: ResolvedModel) -> ProviderAnswer:
    settings = resolved.provider
    base = settings.base_url.rstrip("/")
    headers = {"accept": "application/json", "anthropic-version": ANTHROPIC_VERSION}
    if resolved.api_key is not None:
        headers["x-api-key"] = resolved.api_key
    one = url_target(
        f"{base}/v1/models/{quote(resolved.model, safe='')}",
        authorization=None,
        owner=settings.name,
    )
    answer = await _get(client, one, headers, resolved, not_found_ok=True)
    if isinstance(answer, ProviderAnswer):
        return answer
    response, elapsed_ms = answer
    if response.status_code not in _CANNOT_LIST:
        model_id = _field(response, "id")
        return ProviderAnswer(
            ProbeOutcome.LISTED,
            one.shown,
            response.status_code,
            resolved=model_id if model_id not in (None, resolved.model) else None,
            elapsed_ms=elapsed_ms,
        )
    # No such model, or no such endpoint: the list tells which.
    listing = url_target(
        f"{base}/v1/models?limit={_ANTHROPIC_PAGE}", authorization=None, owner=settings.name
    )
    listed = await _get_list(client, listing, headers, resolved)
    if isinstance(listed, ProviderAnswer):
        return listed
    ids, response, elapsed_ms = listed
    if resolved.model in ids:  # a server that lists, but has no per-model lookup
        return ProviderAnswer(
            ProbeOutcome.LISTED, listing.shown, response.status_code, elapsed_ms=elapsed_ms
        )
    return ProviderAnswer(
        ProbeOutcome.NOT_LISTED,
        one.shown,
        404,
        listed=tuple(ids),
        elapsed_ms=elapsed_ms,
    )


async def _get_list(
    client: httpx.AsyncClient,
    target: UrlTarget,
    headers: Mapping[str, str],
    resolved: ResolvedModel,
) -> tuple[list[str], httpx.Response, int] | ProviderAnswer:
    """The model ids a models list answered, with the answer and its time in ms; or the
    outcome that ends the probe (a failure, or an answer that is not a list)."""
    answer = await _get(client, target, headers, resolved)
    if isinstance(answer, ProviderAnswer):
        return answer
    response, elapsed_ms = answer
    ids = _ids(response)
    if ids is None:
        return ProviderAnswer(
            ProbeOutcome.CANNOT_LIST,
            target.shown,
            response.status_code,
            "the answer is not a models list",
            elapsed_ms=elapsed_ms,
        )
    return ids, response, elapsed_ms


async def _get(
    client: httpx.AsyncClient,
    target: UrlTarget,
    headers: Mapping[str, str],
    resolved: ResolvedModel,
    *,
    not_found_ok: bool = False,
) -> tuple[httpx.Response, int] | ProviderAnswer:
    """The successful answer and its time in ms, or the outcome that ends the probe.

    With `not_found_ok`, a "cannot list" status is handed back for the caller to read.
    """
    shown = target.shown
    started = time.monotonic()
    try:
        response = await client.get(target.url, headers={**target.headers, **headers})
    except httpx.TimeoutException as exc:
        return ProviderAnswer(
            ProbeOutcome.TIMED_OUT, shown, detail=f"{type(exc).__name__}", elapsed_ms=_ms(started)
        )
    except httpx.ConnectError as exc:
        return ProviderAnswer(
            ProbeOutcome.UNREACHABLE,
            shown,
            detail=_clean(str(exc), resolved),
            elapsed_ms=_ms(started),
        )
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        return ProviderAnswer(ProbeOutcome.BAD_URL, shown, detail=_clean(str(exc), resolved))
    except httpx.HTTPError as exc:
        detail = f"{type(exc).__name__}: {_clean(str(exc), resolved)}"
        return ProviderAnswer(ProbeOutcome.FAILED, shown, detail=detail, elapsed_ms=_ms(started))
    elapsed_ms = _ms(started)
    status = response.status_code
    if response.is_success or (not_found_ok and status in _CANNOT_LIST):
        return response, elapsed_ms
    detail = _message(response, resolved)
    if status in (401, 403):
        outcome = ProbeOutcome.REFUSED_KEY
    elif status == 429:
        outcome = ProbeOutcome.RATE_LIMITED
    elif status in _CANNOT_LIST:
        outcome = ProbeOutcome.CANNOT_LIST
    else:
        outcome = ProbeOutcome.FAILED
    return ProviderAnswer(outcome, shown, status, detail, elapsed_ms=elapsed_ms)


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _decoded(response: httpx.Response) -> Any:
    try:
        return json.loads(response.content)
    except (ValueError, RecursionError):
        return None


def _ids(response: httpx.Response) -> list[str] | None:
    """The model ids of a list answer (`{"data": [{"id": ...}]}`), or None if it is not one."""
    body = _decoded(response)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    return [
        entry["id"]
        for entry in data
        if isinstance(entry, dict) and isinstance(entry.get("id"), str)
    ]


def _field(response: httpx.Response, name: str) -> str | None:
    body = _decoded(response)
    value = body.get(name) if isinstance(body, dict) else None
    return value if isinstance(value, str) else None


def _message(response: httpx.Response, resolved: ResolvedModel) -> str:
    """The provider's error message (either dialect), or the start of its body; redacted."""
    body = _decoded(response)
    message: Any = None
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        message = message if isinstance(message, str) else body.get("message")
    if not isinstance(message, str):
        message = response.content[:_MESSAGE_CHARS].decode("utf-8", errors="replace")
    return _clean(" ".join(message.split())[:_MESSAGE_CHARS], resolved)


def _clean(text: str, resolved: ResolvedModel) -> str:
    """`text` without the key and without URL credentials."""
    secrets: Sequence[str | None] = (resolved.api_key,)
    return redact_secrets(redact_url_credentials(text), secrets)
