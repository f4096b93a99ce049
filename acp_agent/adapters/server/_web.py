"""The web page of `acp-agent server --web`: its files, and the login a browser trades for a cookie.

A browser's WebSocket cannot send an `Authorization` header, so the page
does not use the server's token. At start the server prints a URL holding a
one-time login secret (`/?login=...`); the first request with it gets a
cookie (`HttpOnly`: no script reads it; `SameSite=Strict`: no other site's
page sends it) and is sent on to `/`. The secret works once; a second use is
refused. The page, its script and its style are served only to a browser
holding a cookie, and a WebSocket upgrade that brings no bearer token gets
in only with a cookie and an `Origin` that is the page's own (checked with
`Host` by `WebSocketGate`), so another site's page can do nothing with it.

The page itself (`web/`: `index.html`, `app.js`, `app.css`) is plain HTML,
CSS and JavaScript with no dependency and no build step: it speaks ACP over
the server's WebSocket like any client.
"""

from __future__ import annotations

import hmac
import secrets
from http import HTTPStatus
from importlib import resources
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection
    from websockets.http11 import Request, Response

__all__ = ("COOKIE", "WebLogin")

#: The cookie holding a browser's login.
COOKIE: Final = "acp_agent_web"
#: The page's files, by path, and their types.
_FILES: Final = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
}


class WebLogin:
    """The one-time login secret, the cookies it was traded for, and the page's files."""

    def __init__(self) -> None:
        self._login: str | None = secrets.token_urlsafe(24)
        self._cookies: list[bytes] = []
        self.login_secret = self._login

    def url(self, host: str, port: int) -> str:
        """The one-time URL to print."""
        return f"http://{host}:{port}/?login={self.login_secret}"

    def has_cookie(self, request: Request) -> bool:
        """Whether `request` brings a cookie a login was traded for."""
        for header in request.headers.get_all("Cookie"):
            for pair in header.split(";"):
                name, _, value = pair.strip().partition("=")
                if name == COOKIE and any(
                    hmac.compare_digest(value.encode(), known) for known in self._cookies
                ):
                    return True
        return False

    def respond(self, connection: ServerConnection, request: Request) -> Response:
        """The answer to a plain HTTP request (not an upgrade)."""
        parts = urlsplit(request.path)
        login = parse_qs(parts.query).get("login")
        if parts.path == "/" and login:
            return self._trade(connection, login[0])
        if not self.has_cookie(request):
            return _text(
                connection,
                HTTPStatus.UNAUTHORIZED,
                "Open the one-time link acp-agent server printed when it started.\n",
            )
        known = _FILES.get(parts.path)
        if known is None:
            return _text(connection, HTTPStatus.NOT_FOUND, "Not found.\n")
        name, kind = known
        body = resources.files(__package__).joinpath("web", name).read_bytes()
        response = connection.respond(HTTPStatus.OK, "")
        response.body = body
        _set(response, "Content-Type", kind)
        _set(response, "Content-Length", str(len(body)))
        _guard(response)
        return response

    def _trade(self, connection: ServerConnection, presented: str) -> Response:
        """The login secret, once, for a cookie; sent on to the page."""
        login = self._login
        if login is None or not hmac.compare_digest(presented.encode(), login.encode()):
            return _text(
                connection,
                HTTPStatus.FORBIDDEN,
                "This login link was used already, or is not this server's.\n",
            )
        self._login = None
        cookie = secrets.token_urlsafe(32)
        self._cookies.append(cookie.encode())
        response = _text(connection, HTTPStatus.SEE_OTHER, "Logged in.\n")
        _set(response, "Location", "/")
        response.headers["Set-Cookie"] = f"{COOKIE}={cookie}; HttpOnly; SameSite=Strict; Path=/"
        return response


def _text(connection: ServerConnection, status: HTTPStatus, text: str) -> Response:
    response = connection.respond(status, text)
    _guard(response)
    return response


def _set(response: Response, name: str, value: str) -> None:
    if name in response.headers:
        del response.headers[name]
    response.headers[name] = value


def _guard(response: Response) -> None:
    """Nothing cached, framed, or told where the person came from; scripts only ours."""
    _set(response, "Cache-Control", "no-store")
    _set(response, "X-Frame-Options", "DENY")
    _set(response, "Referrer-Policy", "no-referrer")
    _set(response, "X-Content-Type-Options", "nosniff")
    _set(
        response,
        "Content-Security-Policy",
        "default-src 'self'; connect-src 'self'; frame-ancestors 'none'",
    )
