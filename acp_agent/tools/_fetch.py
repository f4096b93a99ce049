"""The `fetch` tool: a web page (or any text resource) as text, over httpx.

HTTP(S) only; redirects followed; at most `MAX_DOWNLOAD_BYTES` are
downloaded. HTML is reduced to readable text (`_html`); other text types
(plain, Markdown, JSON, XML, ...) come as they are; binary types are
refused. The text the model gets is capped at `max_chars`, the truncation
stated. Needs network permission (`Effect.NETWORK`, target the URL).

`raw_output`: ``{"url", "final_url", "status", "content_type", "chars",
"truncated"}``; failures ``{"error", "message", "url"}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import attrs

import acp_agent
from acp_agent.toolkit import (
    Effect,
    PermissionNeed,
    TextContent,
    ToolContext,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolPresentation,
    ToolResult,
)
from acp_agent.tools._args import optional_int, require_str
from acp_agent.tools._common import short, text_result
from acp_agent.values import Value

if TYPE_CHECKING:
    import httpx

__all__ = ("DEFAULT_MAX_CHARS", "DEFINITION", "MAX_DOWNLOAD_BYTES", "FetchTool")

DEFAULT_MAX_CHARS: Final = 50_000
_MAX_CHARS_LIMIT: Final = 200_000
MAX_DOWNLOAD_BYTES: Final = 5 * 1024 * 1024
_TIMEOUT_S: Final = 30.0
_TEXT_TYPES: Final = (
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
    "application/xhtml+xml",
    "application/rss+xml",
    "application/atom+xml",
)

DEFINITION: Final = ToolDefinition(
    name="fetch",
    description="""\
Fetch a URL (http or https) and return its content as text: HTML pages reduced to \
readable text with links kept, text formats (Markdown, JSON, XML, ...) as they are. \
Binary content is refused. At most `max_chars` characters (default 50,000).""",
    input_schema={
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The http(s) URL."},
            "max_chars": {"type": "integer", "minimum": 100, "maximum": _MAX_CHARS_LIMIT},
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    kind=ToolKind.FETCH,
)


def _url(arguments: Mapping[str, Any]) -> str:
    url = require_str(arguments, "url").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolInputError("`url` must be an absolute http:// or https:// URL")
    return url


def _is_text(content_type: str) -> bool:
    return (
        content_type.startswith("text/")
        or content_type in _TEXT_TYPES
        or (content_type.endswith(("+json", "+xml")))
    )


@attrs.frozen
class FetchTool(Value):
    """Fetches URLs as text; `transport` lets tests answer without a network."""

    transport: httpx.AsyncBaseTransport | None = None

    @property
    def definition(self) -> ToolDefinition:
        return DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        url = arguments.get("url")
        title = f"Fetch {short(url, 60)}" if isinstance(url, str) and url else "Fetch"
        return ToolPresentation(title, ToolKind.FETCH)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        optional_int(arguments, "max_chars", minimum=100, maximum=_MAX_CHARS_LIMIT)
        return PermissionNeed(Effect.NETWORK, _url(arguments))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        # Here, not at the top: httpx (with its CLI's click and rich) costs a session's
        # start ~100 ms, and most sessions never fetch.
        import httpx

        url = _url(arguments)
        max_chars = optional_int(
            arguments,
            "max_chars",
            default=DEFAULT_MAX_CHARS,
            minimum=100,
            maximum=_MAX_CHARS_LIMIT,
        )
        assert max_chars is not None
        headers = {"User-Agent": f"acp-agent/{acp_agent.__version__}", "Accept": "*/*"}
        try:
            async with (
                httpx.AsyncClient(
                    transport=self.transport,
                    follow_redirects=True,
                    timeout=_TIMEOUT_S,
                    headers=headers,
                ) as client,
                client.stream("GET", url) as response,
            ):
                body = bytearray()
                download_capped = False
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) >= MAX_DOWNLOAD_BYTES:
                        del body[MAX_DOWNLOAD_BYTES:]
                        download_capped = True
                        break
                encoding = response.encoding or "utf-8"
                final_url = str(response.url)
                status = response.status_code
                content_type = response.headers.get("content-type", "").split(";")[0].strip()
        except httpx.HTTPError as error:
            message = f"Could not fetch {url}: {type(error).__name__}: {error}"
            return text_result(
                message,
                is_error=True,
                raw_output={"error": "fetch_failed", "message": message, "url": url},
            )
        content_type = content_type.lower()
        if content_type and not _is_text(content_type):
            message = f"{final_url} is {content_type}, not text; fetch only reads text."
            return text_result(
                message,
                is_error=True,
                raw_output={"error": "not_text", "message": message, "url": url},
            )
        text = bytes(body).decode(encoding, "replace")
        if content_type in ("text/html", "application/xhtml+xml") or (
            not content_type and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
        ):
            from acp_agent.tools._html import html_to_text  # html.parser: only for HTML pages

            text = html_to_text(text, final_url)
        truncated = download_capped or len(text) > max_chars
        shown = text[:max_chars]
        notes = []
        if len(text) > max_chars:
            notes.append(f"cut at {max_chars} of {len(text)} characters")
        if download_capped:
            notes.append(f"only the first {MAX_DOWNLOAD_BYTES} bytes were downloaded")
        header = f"{final_url} — HTTP {status}" + (f", {content_type}" if content_type else "")
        model_text = f"{header}\n\n{shown}" + (f"\n\n[{'; '.join(notes)}]" if notes else "")
        return ToolResult(
            content=(TextContent(model_text),),
            model_text=model_text,
            is_error=status >= 400,
            raw_output={
                "url": url,
                "final_url": final_url,
                "status": status,
                "content_type": content_type,
                "chars": len(shown),
                "truncated": truncated,
            },
        )
