"""The HTTP side every provider shares: one streamed POST, retried until it yields.

`stream_reply()` sends the request, turns an error status into the
`ProviderStatusError` the provider's `read_error` classifies, decodes the
event stream with `SSEDecoder`, feeds each event to the provider's
`ReplyParser` and yields what it returns. Failures before the first yielded
event are retried as `RetryPolicy` allows; after it they become
`StreamBroken`. httpx's exceptions are translated here, once, by
`map_httpx_errors()`.

Nothing here logs or raises request headers: they carry the API key. The
request goes to `UrlTarget.url` (no userinfo), and messages and log lines
name `UrlTarget.shown` (userinfo as `***`, see `acp_agent.url_credentials`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import ssl
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any, Final, Protocol

import anyio
import httpx

from acp_agent.models._errors import (
    ProviderConnectError,
    ProviderConnectionLost,
    ProviderError,
    ProviderNotConfigured,
    ProviderResponseInvalid,
    ProviderTimeout,
    ProviderTransportError,
    StreamBroken,
)
from acp_agent.models._events import ModelEvent
from acp_agent.models._retry import RetryPolicy
from acp_agent.models._sse import ServerSentEvent, SSEDecoder, SSETruncated
from acp_agent.url_credentials import UrlTarget, redact_url_credentials

__all__ = (
    "DEFAULT_TIMEOUT",
    "DRAIN_LIMIT_S",
    "ERROR_BODY_LIMIT",
    "LazyCAContext",
    "ReplyParser",
    "body_snippet",
    "decode_json",
    "json_int",
    "map_httpx_errors",
    "new_http_client",
    "read_error_body",
    "stream_reply",
)

logger = logging.getLogger(__name__)

#: Connecting must be quick; a reasoning model may stay silent for minutes between bytes.
DEFAULT_TIMEOUT: Final = httpx.Timeout(connect=10.0, read=300.0, write=30.0, pool=10.0)
#: How long to wait for the end of a body after the reply's final event.
DRAIN_LIMIT_S: Final = 1.0
#: How much of an error body is read: enough for any provider's JSON error.
ERROR_BODY_LIMIT: Final = 64 * 1024


def new_http_client(
    timeout: httpx.Timeout = DEFAULT_TIMEOUT, *, verify: ssl.SSLContext | None = None
) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` with timeouts fit for streaming model replies, verifying
    servers with `verify` (a new `LazyCAContext` by default). The environment's proxies
    apply as ever (`HTTPS_PROXY`, `NO_PROXY`, ...)."""
    return httpx.AsyncClient(timeout=timeout, verify=verify or LazyCAContext())


class LazyCAContext(ssl.SSLContext):
    """The client TLS context httpx would make, its CA certificates read on its first
    connection (or by `load_ca`).

    Reading the CA bundle costs 35-60 ms of CPU, mostly holding the GIL, which a model
    served over plain HTTP (Ollama, a local server, a test's fake) never needs. Until
    they are read it trusts no certificate, so nothing connects unverified. They come
    from where httpx reads them: `SSL_CERT_FILE`, else `SSL_CERT_DIR`, else certifi's
    bundle; `SSLKEYLOGFILE` is honoured as by the standard library's default context.
    """

    def __new__(cls) -> LazyCAContext:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self) -> None:
        if sys.version_info >= (3, 13):
            # What the standard library's default context checks from 3.13 on.
            self.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
        # Read once, by the loop's first connection or by the warm-up's thread.
        self._ca_lock = threading.Lock()
        self._ca_loaded = False

    @property
    def ca_loaded(self) -> bool:
        """Whether the CA certificates were read."""
        return self._ca_loaded

    def load_ca(self) -> None:
        """Read the CA certificates now (idempotent); `ssl.SSLError` if they cannot be,
        which httpx reports as a connection error naming the reason."""
        with self._ca_lock:
            if self._ca_loaded:
                return
            cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
            if cafile:
                where = f"SSL_CERT_FILE {cafile}"
            elif capath:
                where = f"SSL_CERT_DIR {capath}"
            else:
                import certifi

                cafile = certifi.where()
                where = cafile
            try:
                self.load_verify_locations(cafile=cafile or None, capath=None if cafile else capath)
            except (OSError, ValueError) as exc:
                message = f"cannot read the CA certificates from {where}: {exc}"
                raise ssl.SSLError(ssl.SSL_ERROR_SSL, message) from exc
            keylog = os.environ.get("SSLKEYLOGFILE")
            if keylog and not sys.flags.ignore_environment:
                self.keylog_filename = keylog
            self._ca_loaded = True

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.load_ca()
        return super().wrap_bio(*args, **kwargs)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.load_ca()
        return super().wrap_socket(*args, **kwargs)


class ReplyParser(Protocol):
    """Turns one provider's stream events into `ModelEvent`s; one per attempt."""

    @property
    def done(self) -> bool:
        """Whether the reply's final event was seen (nothing more needs reading)."""
        ...

    def feed(self, sse: ServerSentEvent) -> Iterable[ModelEvent]:
        """The events for one server-sent event; raises `ProviderError` for error events."""
        ...

    def finish(self) -> Iterable[ModelEvent]:
        """The closing events when the stream ended without the final event, or raise."""
        ...


@contextlib.contextmanager
def map_httpx_errors(provider: str, url: str) -> Iterator[None]:
    """Translate any httpx exception raised inside into the `ProviderError` tree.

    The messages name `url` and quote httpx's own; any userinfo in either is
    shown as `***`.
    """
    url = redact_url_credentials(url)
    try:
        yield
    except httpx.TimeoutException as exc:
        raise ProviderTimeout(
            f"{provider}: timed out ({type(exc).__name__}) talking to {url}", provider=provider
        ) from exc
    except httpx.ConnectError as exc:
        raise ProviderConnectError(
            f"{provider}: cannot connect to {url}: {_detail(exc)}", provider=provider
        ) from exc
    except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError, httpx.CloseError) as exc:
        raise ProviderConnectionLost(
            f"{provider}: the connection to {url} broke: {_detail(exc)}", provider=provider
        ) from exc
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise ProviderNotConfigured(
            f"{provider}: {url} is not a usable http(s) URL ({_detail(exc)}); check its base_url",
            provider=provider,
        ) from exc
    except httpx.DecodingError as exc:
        raise ProviderResponseInvalid(
            f"{provider}: cannot decode the reply from {url}: {_detail(exc)}", provider=provider
        ) from exc
    except httpx.HTTPError as exc:
        raise ProviderTransportError(
            f"{provider}: request to {url} failed: {type(exc).__name__}: {_detail(exc)}",
            provider=provider,
        ) from exc


def _detail(exc: Exception) -> str:
    return redact_url_credentials(str(exc))


async def read_error_body(response: httpx.Response) -> bytes:
    """The first `ERROR_BODY_LIMIT` bytes of an error response."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= ERROR_BODY_LIMIT:
            break
    return bytes(body[:ERROR_BODY_LIMIT])


def decode_json(body: bytes) -> Any:
    """`body` as JSON, or None when it is not JSON (or nests too deep to read)."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def json_int(value: Any) -> int:
    """A count or index from decoded JSON: a positive int, or 0 for anything else."""
    return value if isinstance(value, int) and value > 0 else 0


def body_snippet(body: bytes, limit: int = 300) -> str:
    """A short, one-line rendering of a non-JSON body, for messages."""
    text = " ".join(body.decode("utf-8", errors="replace").split())
    return text if len(text) <= limit else text[:limit] + "…"


async def stream_reply(
    client: httpx.AsyncClient,
    *,
    provider: str,
    target: UrlTarget,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    retry: RetryPolicy,
    read_error: Callable[[httpx.Response, bytes], ProviderError],
    new_parser: Callable[[], ReplyParser],
) -> AsyncGenerator[ModelEvent, None]:
    """Stream the reply to one POST of `body` to `target`; see the module docstring.

    `target.headers` (Basic auth from the URL's userinfo) are sent too; `headers` win.
    """
    content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    headers = {**target.headers, **headers}
    attempts = 0
    while True:
        attempts += 1
        received = 0
        try:
            async with contextlib.aclosing(
                _attempt(client, provider, target, headers, content, read_error, new_parser())
            ) as events:
                async for event in events:
                    received += 1
                    yield event
            return
        except ProviderError as error:
            if received:
                raise StreamBroken(
                    provider=provider, events_received=received, reason=str(error)
                ) from error
            delay = retry.delay_before_retry(error, attempts)
            if delay is None:
                raise
            logger.warning(
                "%s (attempt %d of %d); retrying in %.1f s",
                error,
                attempts,
                retry.max_attempts,
                delay,
            )
        await retry.sleep(delay)


async def _attempt(
    client: httpx.AsyncClient,
    provider: str,
    target: UrlTarget,
    headers: Mapping[str, str],
    content: bytes,
    read_error: Callable[[httpx.Response, bytes], ProviderError],
    parser: ReplyParser,
) -> AsyncGenerator[ModelEvent, None]:
    logger.debug("POST %s (%d bytes)", target.shown, len(content))
    with map_httpx_errors(provider, target.shown):
        async with client.stream("POST", target.url, headers=headers, content=content) as response:
            if not response.is_success:
                raise read_error(response, await read_error_body(response))
            if response.headers.get("content-type", "").startswith("application/json"):
                snippet = body_snippet(await read_error_body(response))
                raise ProviderResponseInvalid(
                    f"{provider} answered with JSON instead of an event stream: {snippet}",
                    provider=provider,
                )
            decoder = SSEDecoder()
            chunks = response.aiter_bytes()
            async for chunk in chunks:
                for event in _parse(parser, decoder.feed(chunk)):
                    yield event
                if parser.done:
                    await _drain(chunks)
                    return
            try:
                tail = decoder.end()
            except SSETruncated as exc:
                raise ProviderConnectionLost(
                    f"{provider}: the stream from {target.shown} ended in the middle of an event",
                    provider=provider,
                ) from exc
            for event in _parse(parser, tail):
                yield event
            if not parser.done:
                for event in parser.finish():
                    yield event


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows the final event (normally just the body's end), briefly.

    A response read to its end leaves the connection reusable, which spares the
    next request a TCP and TLS handshake; a server that keeps talking is cut off.
    The reply is already complete, so a connection that fails now changes nothing.
    """
    with anyio.move_on_after(DRAIN_LIMIT_S), contextlib.suppress(httpx.HTTPError):
        async for _ in chunks:
            pass


def _parse(parser: ReplyParser, sses: Iterable[ServerSentEvent]) -> Iterator[ModelEvent]:
    for sse in sses:
        yield from parser.feed(sse)
        if parser.done:
            return
