"""Credentials in URLs (`scheme://user:password@host/…`): never shown, and used on purpose.

A provider's base URL (`OPENAI_BASE_URL=http://user:secret@proxy/v1`) or an
MCP server's URL may carry userinfo to get through a proxy. Wherever a URL is
shown (a message the person reads, a stored event, a log line, a status
text) it goes through `redact_url_credentials`, which replaces the userinfo
with `***`: `http://***@proxy/v1`. The reader still sees that the URL has
credentials, never what they are. The function takes any text, so it also
cleans a library's exception message that quotes a URL; `acp_agent.logs`
applies it to every formatted record, the last line of defence for
libraries that log URLs themselves.

What userinfo means for authentication is decided here, once, for every
HTTP client of the agent (`url_target`). Left alone, httpx turns userinfo
into Basic auth that silently REPLACES any `Authorization` header, such as
the `Bearer <key>` of an OpenAI-compatible provider. Instead:

- the credential configured for the purpose (a provider's API key sent as
  `Authorization`, an MCP server's own `Authorization` header) always wins
  the `Authorization` header; the userinfo is then ignored, with one
  warning per URL per process naming the redacted URL;
- when nothing else fills `Authorization` (no key, or Anthropic, whose key
  goes in `x-api-key`), the userinfo becomes `Authorization: Basic …`, as
  the URL's author meant;
- either way the URL handed to the HTTP client has no userinfo, so httpx
  never applies its own rule and never logs or raises the password.

Only userinfo is handled: a secret in a query string (`?key=…`) is not
recognised. Userinfo must be percent-encoded where RFC 3986 requires it; an
unencoded `/`, `?` or `#` in a password ends the authority early, for httpx
as for this module.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Mapping
from typing import Final
from urllib.parse import unquote

import attrs

from acp_agent.values import Value

__all__ = ("REDACTED_USERINFO", "UrlTarget", "redact_url_credentials", "url_target")

logger = logging.getLogger(__name__)

#: What replaces the userinfo of a URL that is shown.
REDACTED_USERINFO: Final = "***"

#: A scheme, then the authority up to its last `@` (userinfo may hold an unencoded `@`).
_USERINFO = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://)([^\s/?#]*)@")

_warned: set[str] = set()
_warned_lock = threading.Lock()


def redact_url_credentials(text: str) -> str:
    """`text` with the userinfo of every URL in it replaced by `***`; idempotent."""
    if "@" not in text:
        return text
    return _USERINFO.sub(rf"\g<1>{REDACTED_USERINFO}@", text)


@attrs.frozen
class UrlTarget(Value):
    """A URL made ready for an HTTP client: see the module docstring."""

    #: Where to send: the URL without userinfo.
    url: str
    #: How to show it: the userinfo (if any) as `***`.
    shown: str
    #: The `Authorization` header the userinfo adds; empty when it adds none.
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)


def url_target(url: str, *, authorization: str | None, owner: str) -> UrlTarget:
    """`url` split into where to send, what to show and the header its userinfo adds.

    `authorization` names what already fills the `Authorization` header (for
    the warning: "OPENAI_API_KEY"), or is None when nothing does. `owner`
    names who uses the URL in that warning ("openai", "MCP server 'docs'").
    """
    match = _USERINFO.match(url)
    shown = redact_url_credentials(url)
    if match is None:
        return UrlTarget(url, shown)
    bare = match.group(1) + url[match.end() :]
    if not match.group(2):  # `http://@host`: nothing to authenticate with
        return UrlTarget(bare, shown)
    if authorization is not None:
        _warn_once(
            f"{owner} {shown}",
            f"{owner}: the userinfo of {shown} is ignored: {authorization} fills the "
            "Authorization header instead; remove the userinfo from the URL to silence this",
        )
        return UrlTarget(bare, shown)
    username, _, password = match.group(2).partition(":")
    pair = f"{unquote(username)}:{unquote(password)}".encode()
    header = "Basic " + base64.b64encode(pair).decode("ascii")
    return UrlTarget(bare, shown, {"authorization": header})


def _warn_once(key: str, message: str) -> None:
    # Providers are built for every request and MCP servers reconnect: once is enough.
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    logger.warning("%s", message)
