"""What an MCP server is to us before it runs: a declaration with an origin.

Three transports, one record each: `StdioServerConfig` (a command we start,
talking JSON-RPC over its stdin/stdout), `HttpServerConfig` (streamable
HTTP) and `SseServerConfig` (the older HTTP+SSE transport). Every record
names its origin, which decides trust: the editor's `mcpServers` and the
user's config file are the person's own choice; a project's file is not
(see `acp_agent.mcp._settings`).
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable
from typing import Any, Final, Literal, TypeAlias

import attrs

from acp_agent.url_credentials import redact_url_credentials
from acp_agent.values import Value

__all__ = (
    "DEFAULT_STARTUP_TIMEOUT_S",
    "DEFAULT_TOOL_TIMEOUT_S",
    "HttpServerConfig",
    "McpOrigin",
    "McpServerConfig",
    "SseServerConfig",
    "StdioServerConfig",
    "Transport",
    "canonical_declaration",
    "declaration_hash",
)

#: How long a server may take to start, answer the handshake and list its tools.
DEFAULT_STARTUP_TIMEOUT_S: Final = 30.0
#: How long one tool call may take before it is abandoned: long enough for a build or a
#: crawl, short enough that a hung server cannot hold a turn (or a script) for ever.
DEFAULT_TOOL_TIMEOUT_S: Final = 600.0

Transport: TypeAlias = Literal["stdio", "http", "sse"]


class McpOrigin(enum.StrEnum):
    """Who declared a server; decides whether it may start without asking."""

    #: The editor's `mcpServers` in `session/new`, `session/load` or `session/resume`.
    EDITOR = "editor"
    #: `[mcp_servers.<name>]` in the user's config file.
    USER = "user"
    #: `[mcp_servers.<name>]` in the workspace's `.acp-agent/config.toml`; needs enabling.
    PROJECT = "project"


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    """Accept a mapping or pairs; keep the order given (later duplicates win when used)."""
    items = value.items() if hasattr(value, "items") else value
    return tuple((str(key), str(item)) for key, item in items)


@attrs.frozen(kw_only=True)
class _ServerConfig(Value):
    #: The server's name: unique among a session's servers, the middle of its tool names.
    name: str
    origin: McpOrigin = McpOrigin.USER
    #: Start, handshake and tool listing must finish within this, or the server is failed.
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    #: A call that takes longer is abandoned (the server is told) with an error result.
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S


@attrs.frozen(kw_only=True)
class StdioServerConfig(_ServerConfig):
    """A server we start as a subprocess (in its own process group) and talk to over stdio."""

    command: str
    args: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    #: Added to a small safe base environment (PATH, HOME, USER, SHELL, TERM, LOGNAME).
    env: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_pairs)
    #: The working directory; None means the session's.
    cwd: str | None = None
    #: Start it in the command sandbox (the session's roots writable, secrets hidden).
    sandbox: bool = False
    #: In the sandbox, whether it may use the network (most servers call an API).
    sandbox_network: bool = True

    @property
    def transport(self) -> Transport:
        return "stdio"


@attrs.frozen(kw_only=True)
class HttpServerConfig(_ServerConfig):
    """A server reached over streamable HTTP (MCP's current remote transport)."""

    #: May carry userinfo (`https://user:token@host/mcp`): shown as `***`, even in the repr.
    url: str = attrs.field(repr=redact_url_credentials)
    headers: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_pairs)

    @property
    def transport(self) -> Transport:
        return "http"


@attrs.frozen(kw_only=True)
class SseServerConfig(_ServerConfig):
    """A server reached over HTTP with server-sent events (deprecated by MCP, still common)."""

    #: May carry userinfo, like `HttpServerConfig.url`.
    url: str = attrs.field(repr=redact_url_credentials)
    headers: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_pairs)

    @property
    def transport(self) -> Transport:
        return "sse"


McpServerConfig: TypeAlias = StdioServerConfig | HttpServerConfig | SseServerConfig


#: Fields left out of a declaration while they hold their default: added after servers
#: were enabled by hash, so those declarations keep the hash they were enabled with.
_OMITTED_AT_DEFAULT: Final = {"sandbox": False, "sandbox_network": True}


def canonical_declaration(config: McpServerConfig) -> dict[str, Any]:
    """The declaration as plain data: every field except the origin, defaults filled in
    (the sandbox settings only when they are not the defaults)."""
    data = attrs.asdict(config, recurse=False)
    data.pop("origin")
    for key, default in _OMITTED_AT_DEFAULT.items():
        if key in data and data[key] == default:
            del data[key]
    data["transport"] = config.transport
    for key in ("args",):
        if key in data:
            data[key] = list(data[key])
    for key in ("env", "headers"):
        if key in data:
            data[key] = [list(pair) for pair in data[key]]
    return data


def declaration_hash(config: McpServerConfig) -> str:
    """`sha256:<hex>` of the canonical declaration (sorted-key JSON, defaults filled in).

    What a user enables is this exact declaration: a changed command, argument,
    environment variable, URL, header or timeout is a different hash.
    """
    text = json.dumps(
        canonical_declaration(config), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
