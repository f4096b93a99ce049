"""One live connection to one MCP server, and the tools bound to it.

A connection is one client session (the SDK's `Client`) over one transport:
a subprocess on stdio, streamable HTTP, or SSE. It notices its own end (the
transport's read side reaching end of stream, or the transport failing) and
never outlives it: a call on an ended connection fails at once with a
result saying why. A reconnect is a new connection with new tools; tools of
the old one keep failing clearly rather than quietly running on the new one.

An HTTP or SSE server's URL may carry userinfo: the server's own
`Authorization` header wins over it (the userinfo is then ignored, with one
warning), otherwise it is sent as Basic auth; the SDK gets the URL without
it, and error texts show it as `***` (`acp_agent.url_credentials`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import anyio
import attrs
import httpx2
import mcp.types as mcp_types
from mcp import Client
from mcp.client import Transport
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from acp_agent import __version__
from acp_agent.mcp._config import (
    HttpServerConfig,
    McpOrigin,
    McpServerConfig,
    SseServerConfig,
    StdioServerConfig,
)
from acp_agent.mcp._results import error_result, to_tool_result
from acp_agent.mcp._stdio import ServerProcess, stdio_transport
from acp_agent.sandbox import Sandbox
from acp_agent.toolkit import (
    Effect,
    PermissionNeed,
    ProgressSink,
    TextContent,
    ToolContext,
    ToolDefinition,
    ToolKind,
    ToolPresentation,
    ToolPreview,
    ToolResult,
)
from acp_agent.url_credentials import redact_url_credentials, url_target

__all__ = ("Connection", "ConnectionFailed", "McpTool", "describe_error", "open_connection")

logger = logging.getLogger(__name__)

#: A permission question shows at most this much of a call's arguments (rawInput has all).
_SHOWN_ARGUMENT_CHARS: Final = 4000

#: How we introduce ourselves to servers.
CLIENT_INFO: Final = mcp_types.Implementation(name="acp-agent", version=__version__)

#: HTTP: connect, write and pool within 30 s; a response stream may be silent for 5 minutes.
_HTTP_TIMEOUT: Final = httpx2.Timeout(30.0, read=300.0)
#: How long a failed call waits for the runner to record why its connection ended.
_REASON_WAIT_S: Final = 1.0
#: Listing pages followed before the listing is taken as complete.
_MAX_LIST_PAGES: Final = 100


def describe_error(exc: BaseException) -> str:
    """One line for an error, looking inside exception groups for the real causes.

    URLs in it (httpx quotes the URL of a failed request) show userinfo as `***`.
    """
    return redact_url_credentials(_describe(exc))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        leaves = [_describe(inner) for inner in exc.exceptions]
        return "; ".join(dict.fromkeys(leaves))
    if isinstance(exc, ConnectionFailed):
        return str(exc)
    if isinstance(exc, MCPError):
        return f"{exc.error.message} (MCP error {exc.error.code})"
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


class _WatchedReadStream:
    """The transport's read side; reaching its end sets `ended` (the server went away)."""

    def __init__(self, inner: Any, ended: anyio.Event) -> None:
        self._inner = inner
        self._ended = ended

    def __getattr__(self, name: str) -> Any:
        # `last_context` and anything else the SDK duck-types for.
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._ended.set()
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


@asynccontextmanager
async def _transport(
    config: McpServerConfig,
    cwd: Path | None,
    process: ServerProcess | None,
    ended: anyio.Event,
    sandbox: Sandbox | None = None,
) -> AsyncIterator[Any]:
    """The SDK transport for `config`, its read side watched for the server's end."""
    if isinstance(config, StdioServerConfig):
        assert process is not None
        async with stdio_transport(
            config.command,
            list(config.args),
            dict(config.env),
            config.cwd if config.cwd is not None else cwd,
            process,
            sandbox,
        ) as (read, write):
            yield _WatchedReadStream(read, ended), write
    elif isinstance(config, HttpServerConfig):
        url, headers = _http_target(config)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=_HTTP_TIMEOUT) as http,
            # Leaving it sends DELETE for the server's session: HTTP sessions are closed too.
            streamable_http_client(url, http_client=http) as (read, write),
        ):
            yield _WatchedReadStream(read, ended), write
    else:
        url, headers = _http_target(config)
        async with sse_client(url, headers=headers) as (read, write):
            yield _WatchedReadStream(read, ended), write


def _http_target(config: HttpServerConfig | SseServerConfig) -> tuple[str, dict[str, str]]:
    """The URL without userinfo, and the headers to send (see the module docstring)."""
    headers = dict(config.headers)
    has_authorization = any(name.lower() == "authorization" for name in headers)
    target = url_target(
        config.url,
        authorization="its Authorization header" if has_authorization else None,
        owner=f"MCP server {config.name!r}",
    )
    return target.url, {**target.headers, **headers}


@attrs.define(eq=False)
class Connection:
    """A server's live client session; tools listed from it run on it and nowhere else."""

    config: McpServerConfig
    client: Client
    #: Set when the transport ended (the server exited or went away), or we closed it.
    ended: anyio.Event
    #: A stdio server's process (exit status, stderr); None over HTTP.
    process: ServerProcess | None
    _list_changed: anyio.Event = attrs.field(factory=anyio.Event)
    _reason_recorded: anyio.Event = attrs.field(factory=anyio.Event)
    #: Why the connection ended, once recorded.
    end_reason: str | None = None
    #: True when we ended it (the session is closing), not the server.
    closed_by_us: bool = False

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def server_info(self) -> str | None:
        """The server's own name and version, as it reported them."""
        info = self.client.server_info
        if info is None:
            return None
        return f"{info.name} {info.version}".strip()

    def loss_reason(self) -> str:
        """Why the connection ended: the recorded reason, else what we can tell now."""
        if self.end_reason is not None:
            return self.end_reason
        exit_description = self.process.exit_description() if self.process else None
        return _with_stderr(exit_description or "the connection closed", self.process)

    async def recorded_loss_reason(self) -> str:
        """The reason the runner records once it has seen the end (waits a moment for it)."""
        with anyio.move_on_after(_REASON_WAIT_S):
            await self._reason_recorded.wait()
        return self.loss_reason()

    def note_list_changed(self) -> None:
        """The server said its tool list changed (a notification or a subscription event)."""
        self._list_changed.set()

    async def wait_list_changed(self) -> None:
        """Wait for the next list change; changes while nobody waited count once."""
        await self._list_changed.wait()
        self._list_changed = anyio.Event()

    def mark_ended(self, reason: str, *, by_us: bool = False) -> None:
        if self.end_reason is None:
            self.end_reason = reason
            self.closed_by_us = by_us
        self.ended.set()
        self._reason_recorded.set()

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists, all pages, first listing of a name wins."""
        tools: dict[str, mcp_types.Tool] = {}
        cursor: str | None = None
        for _ in range(_MAX_LIST_PAGES):
            page = await self.client.list_tools(cursor=cursor, cache_mode="bypass")
            for tool in page.tools:
                tools.setdefault(tool.name, tool)
            cursor = page.next_cursor
            if cursor is None:
                break
        return list(tools.values())

    async def call_tool(
        self, tool: str, arguments: Mapping[str, Any], progress: ProgressSink | None
    ) -> ToolResult:
        """Run `tool`; every failure is an error result that says what happened."""
        if self.ended.is_set():
            return error_result(
                f"MCP server {self.name!r} is no longer connected ({self.loss_reason()}); "
                f"{tool!r} was listed by that earlier connection and was not run. "
                "Its tools are offered again once it reconnects."
            )

        sink = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if sink is None:
                return
            amount = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
            text = f"{amount} {message}" if message else amount
            try:
                await sink.content((TextContent(f"Progress: {text}"),))
            except Exception:
                logger.debug("progress of %s/%s not delivered", self.name, tool, exc_info=True)

        try:
            result = await self.client.call_tool(
                tool,
                dict(arguments),
                read_timeout_seconds=self.config.tool_timeout_s,
                progress_callback=on_progress,
            )
        except MCPError as exc:
            if exc.error.code == mcp_types.CONNECTION_CLOSED or self.ended.is_set():
                return await self._stopped_during(tool)
            if exc.error.code == mcp_types.REQUEST_TIMEOUT:
                return error_result(
                    f"MCP server {self.name!r} did not finish {tool!r} within "
                    f"{self.config.tool_timeout_s:g} s; the call was abandoned and the server "
                    "asked to cancel it. Whether it took effect is unknown."
                )
            return error_result(
                f"MCP server {self.name!r} refused {tool!r}: {exc.error.message} "
                f"(MCP error {exc.error.code})"
            )
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            if self.ended.is_set():
                return await self._stopped_during(tool)
            logger.warning("MCP %s/%s failed", self.name, tool, exc_info=True)
            return error_result(
                f"MCP server {self.name!r}: calling {tool!r} failed: {describe_error(exc)}"
            )
        return to_tool_result(result)

    async def _stopped_during(self, tool: str) -> ToolResult:
        reason = await self.recorded_loss_reason()
        if self.closed_by_us:
            return error_result(
                f"The session closed its connection to MCP server {self.name!r} while "
                f"{tool!r} was running; whether the call took effect is unknown."
            )
        return error_result(
            f"MCP server {self.name!r} stopped while {tool!r} was running "
            f"({reason}). Whether the call took effect is unknown: check before "
            "retrying. The server is being reconnected; its tools are offered again once it "
            "is ready."
        )


def _with_stderr(reason: str, process: ServerProcess | None) -> str:
    tail = process.stderr_tail() if process is not None else ""
    return f"{reason}; its stderr ended with:\n{tail}" if tail else reason


@asynccontextmanager
async def open_connection(
    config: McpServerConfig,
    *,
    cwd: Path | None,
    transport: Transport | None = None,
    sandbox: Sandbox | None = None,
) -> AsyncIterator[Connection]:
    """Connect to `config`'s server and finish the handshake; leaving disconnects.

    Leaving ends a stdio server (stdin closed, then its process group signalled)
    and closes an HTTP session (DELETE). `transport` replaces the one the config
    names (tests pass in-memory ones). A stdio server runs in `sandbox` when given.
    """
    ended = anyio.Event()
    process = ServerProcess(config.name) if isinstance(config, StdioServerConfig) else None
    connection: Connection | None = None

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            if connection is not None:  # before that, the first listing is still to come
                connection.note_list_changed()
        elif isinstance(message, Exception):
            logger.info("MCP server %s: transport: %s", config.name, describe_error(message))

    body_error: BaseException | None = None
    try:
        client = Client(
            transport
            if transport is not None
            else _transport(config, cwd, process, ended, sandbox),
            cache=None,
            message_handler=on_message,
            client_info=CLIENT_INFO,
        )
        async with client:
            connection = Connection(config, client, ended, process)
            try:
                yield connection
            except BaseException as exc:
                body_error = exc
                raise
            finally:
                # The runner records why when it leaves on purpose; otherwise the server went.
                connection.mark_ended(connection.loss_reason())
    except Exception as exc:
        if exc is body_error:
            raise
        # Failing to start, a broken handshake, or a transport that failed under us.
        reason = describe_error(exc)
        exit_description = process.exit_description() if process is not None else None
        if exit_description is not None:
            reason = f"{exit_description} ({reason})"
        raise ConnectionFailed(_with_stderr(reason, process)) from exc


class ConnectionFailed(Exception):
    """A connection could not be made, or broke; the message says why (with stderr)."""


@attrs.frozen(eq=False)
class McpTool:
    """An MCP server's tool, offered to the model as `mcp__<server>__<tool>`.

    Bound to the connection it was listed from and to a tool-set generation:
    after a reconnect or a list change the manager offers new `McpTool`s,
    while calls already bound to this one finish (or fail clearly) here.
    """

    definition: ToolDefinition
    #: The server's name and the tool's own name on it.
    server: str
    tool: str
    origin: McpOrigin
    #: The tool-set generation this tool was offered in.
    generation: int
    title: str
    connection: Connection = attrs.field(repr=False)

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        return ToolPresentation(title=f"{self.title} ({self.server} MCP)", kind=ToolKind.OTHER)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        # Whatever the server claims about a tool (annotations such as readOnlyHint)
        # is a hint from outside: it never lowers what the call needs.
        return PermissionNeed(
            effect=Effect.OTHER,
            target=self.definition.name,
            note=f"Tool {self.tool!r} of MCP server {self.server!r} ({self.origin.value})",
        )

    async def preview(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolPreview | ToolResult:
        """The arguments the server will get: for an MCP tool they are the call, so the
        person sees them in the question, not only in `rawInput`."""
        from acp_agent.toolkit import fenced

        if not arguments:
            return ToolPreview((TextContent("With no arguments."),))
        text = json.dumps(arguments, indent=2, ensure_ascii=False)
        if len(text) > _SHOWN_ARGUMENT_CHARS:
            rest = len(text) - _SHOWN_ARGUMENT_CHARS
            text = f"{text[:_SHOWN_ARGUMENT_CHARS]}\n… ({rest} more characters)"
        return ToolPreview((TextContent(f"With these arguments:\n{fenced(text, 'json')}"),))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return await self.connection.call_tool(self.tool, arguments, context.progress)
