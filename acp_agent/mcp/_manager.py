"""A session's MCP servers: connected in the background, watched, reconnected, closed.

`McpServerManager` takes the session's server configs and, once running,
connects every server concurrently, each within its own startup timeout.
Starting it returns at once: nothing waits for a server, so a server that
never answers costs the session nothing but its own `failed` status.

What it offers:

- **Statuses** (`statuses()`), one per server: `connecting` → `ready` (its
  tools are offered) or `failed` (with the error); a ready server whose
  connection ends goes `disconnected` (with the error and the next retry),
  then `connecting` again; `disabled` servers never start.
- **Tool sets** (`tool_set`): every change to the offered tools (a server
  ready, its `tools/list_changed`, a server lost) is a new `McpToolSet`
  with the next generation number and new `McpTool` objects. Tools of
  older generations stay bound to the connection they were listed from, so
  a call in flight finishes there; if that connection ended, the call fails
  with a result saying so, and nothing runs on a newer connection by
  accident.
- **Events** (`subscribe(listener)`): `ToolSetChanged` and
  `ServerStatusChanged` facts, delivered synchronously, in order, as they
  happen; a listener must not block (hand them to a stream). None are
  sent once closing has begun.

Faults: a server that crashes fails its in-flight calls with a clear
result, goes `disconnected` and is reconnected after `ReconnectPolicy`
delays; after the last one it is `failed`. A server that never connected
is `failed` at once (retrying a wrong command or URL only delays the news).

Closing (`aclose()`, or leaving `run()` by cancellation) lets each
connection end gracefully within `close_timeout_s`: stdio servers get their
stdin closed and then their process group signalled; HTTP sessions are
deleted.

Usage::

    manager = McpServerManager(configured.servers, disabled=configured.disabled, cwd=cwd)
    await task_group.start(manager.run)      # returns at once
    manager.subscribe(on_event)
    ...
    await manager.aclose()

or `async with McpServerManager(...) as manager:` where a task group of its
own is fine.

One module past 600 lines on purpose: a server's lifecycle (connect,
retry, list tools, refresh, stop) is one state machine per server, and the
manager is its only owner; settings, lines and tool wrappers are their own
modules.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self, TypeAlias

import anyio
import attrs
import mcp.types as mcp_types
from anyio.abc import TaskGroup, TaskStatus
from mcp.shared.exceptions import MCPError

from acp_agent.mcp._config import McpOrigin, McpServerConfig, StdioServerConfig, Transport
from acp_agent.mcp._connection import (
    Connection,
    ConnectionFailed,
    McpTool,
    describe_error,
    open_connection,
)
from acp_agent.mcp._names import assign_tool_names
from acp_agent.mcp._settings import DisabledServer
from acp_agent.sandbox import Sandbox, SandboxUnavailable
from acp_agent.toolkit import ToolDefinition
from acp_agent.url_credentials import redact_url_credentials
from acp_agent.values import Value

__all__ = (
    "McpEvent",
    "McpListener",
    "McpServerManager",
    "McpToolSet",
    "ReconnectPolicy",
    "ServerSandbox",
    "ServerState",
    "ServerStatus",
    "ServerStatusChanged",
    "ToolSetChanged",
)

logger = logging.getLogger(__name__)

#: The sandbox a server declared with `sandbox = true` runs in (`SandboxUnavailable`
#: where it cannot).
ServerSandbox: TypeAlias = Callable[[StdioServerConfig], Awaitable[Sandbox]]

#: How long closing waits for connections to end gracefully before cutting them.
DEFAULT_CLOSE_TIMEOUT_S: Final = 5.0
#: After a stdio server's output ends, how long to wait to learn its exit status.
_EXIT_WAIT_S: Final = 1.0


class ServerState(enum.Enum):
    """Where one server stands."""

    #: Starting, in the handshake or listing tools (first time or again after a loss).
    CONNECTING = "connecting"
    #: Connected; its tools are in the current tool set.
    READY = "ready"
    #: Gave up: it could not start, did not start in time, or kept failing; `error` says why.
    FAILED = "failed"
    #: Was ready, the connection ended; a reconnect is scheduled (`error` says why, and when).
    DISCONNECTED = "disconnected"
    #: Declared but not started (a project server not enabled, or shadowed); `error` says why.
    DISABLED = "disabled"


@attrs.frozen
class ServerStatus(Value):
    """One server, as `/mcp` shows it."""

    name: str
    origin: McpOrigin
    transport: Transport
    state: ServerState
    error: str | None = None
    #: The model-facing names of its tools in the current tool set.
    tools: tuple[str, ...] = ()
    #: The server's own name and version, once connected.
    server_info: str | None = None
    #: For a disabled project server: the user-config entry that would enable it.
    enable_with: str | None = None


@attrs.frozen
class ServerStatusChanged(Value):
    """A server's state or error changed (tool names alone change with `ToolSetChanged`)."""

    status: ServerStatus
    previous: ServerState


@attrs.frozen(eq=False)
class McpToolSet:
    """The MCP tools offered now; each change is a new generation."""

    generation: int
    tools: tuple[McpTool, ...] = ()

    def by_name(self) -> dict[str, McpTool]:
        return {tool.definition.name: tool for tool in self.tools}


@attrs.frozen
class ToolSetChanged(Value):
    """A new generation of the MCP tool set; offer it for model requests from now on."""

    tool_set: McpToolSet


McpEvent: TypeAlias = ServerStatusChanged | ToolSetChanged
McpListener: TypeAlias = Callable[[McpEvent], None]


@attrs.frozen
class ReconnectPolicy(Value):
    """When a lost server is tried again: one attempt per delay, then `failed`."""

    delays_s: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0)
    #: A connection that stayed up this long earns the full series of attempts again.
    reset_after_s: float = 60.0


async def _wait_any(*events: anyio.Event) -> None:
    async with anyio.create_task_group() as group:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        for event in events:
            group.start_soon(wait, event)


class McpServerManager:
    """Connects a session's MCP servers in the background and offers their tools."""

    def __init__(
        self,
        servers: Sequence[McpServerConfig],
        *,
        disabled: Sequence[DisabledServer] = (),
        cwd: Path | None = None,
        reconnect: ReconnectPolicy = ReconnectPolicy(),
        close_timeout_s: float = DEFAULT_CLOSE_TIMEOUT_S,
        sandbox: ServerSandbox | None = None,
    ) -> None:
        names = [config.name for config in servers]
        if len(set(names)) != len(names):
            raise ValueError("server names must be unique (see with_editor_servers)")
        self._cwd = cwd
        #: Where a server declared with `sandbox = true` runs (None: nowhere; it fails).
        self.sandbox = sandbox
        self._reconnect = reconnect
        self._close_timeout_s = close_timeout_s
        self._runners = [_ServerRunner(self, config) for config in servers]
        self._disabled = {
            entry.config.name: ServerStatus(
                name=entry.config.name,
                origin=entry.config.origin,
                transport=entry.config.transport,
                state=ServerState.DISABLED,
                error=entry.reason,
                enable_with=entry.enable_with,
            )
            for entry in disabled
        }
        self._listeners: list[McpListener] = []
        self._tool_set = McpToolSet(0)
        self._changed = anyio.Event()
        self._close_requested = anyio.Event()
        self._closed = anyio.Event()
        self._started = False
        self._own_group: TaskGroup | None = None

    # --- what callers read ------------------------------------------------------------

    @property
    def tool_set(self) -> McpToolSet:
        """The tools offered now."""
        return self._tool_set

    def statuses(self) -> tuple[ServerStatus, ...]:
        """Every server's status: the started ones in order, then the disabled ones."""
        started = tuple(runner.status for runner in self._runners)
        shown = {status.name for status in started}
        return started + tuple(s for s in self._disabled.values() if s.name not in shown)

    def status(self, name: str) -> ServerStatus:
        for status in self.statuses():
            if status.name == name:
                return status
        raise KeyError(name)

    def subscribe(self, listener: McpListener) -> Callable[[], None]:
        """Call `listener` with every event from now on; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    async def wait_started(self) -> None:
        """Wait until every server's first connection attempt is over (ready or failed).

        Reconnects after a loss are not waited for. Bound it with `anyio.move_on_after`.
        """
        while True:
            changed = self._changed
            if self._closed.is_set() or all(runner.first_attempt_over for runner in self._runners):
                return
            await changed.wait()

    async def wait_settled(self) -> None:
        """Wait until no server is connecting or waiting to reconnect.

        For callers that would rather wait (a one-shot run, tests); sessions
        never need to. Bound it with `anyio.move_on_after`.
        """
        unsettled = {ServerState.CONNECTING, ServerState.DISCONNECTED}
        while True:
            changed = self._changed
            if self._closed.is_set() or not any(
                runner.status.state in unsettled for runner in self._runners
            ):
                return
            await changed.wait()

    # --- lifecycle --------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect every server in the background; reports started at once, returns when closed.

        Cancelling it closes the connections gracefully first (bounded by
        `close_timeout_s`), as `aclose()` does.
        """
        if self._started:
            raise RuntimeError("McpServerManager.run() was already called")
        self._started = True
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._host_runners, name="mcp servers")
                task_status.started()
                try:
                    await self._closed.wait()
                finally:
                    # Cancelled from outside: the shielded host below still ends
                    # every connection properly before this returns.
                    self._close_requested.set()
        finally:
            self._closed.set()

    async def _host_runners(self) -> None:
        with anyio.CancelScope(shield=True):
            try:
                async with anyio.create_task_group() as runners:
                    for runner in self._runners:
                        runners.start_soon(runner.run, name=f"mcp server {runner.config.name}")
                    await self._close_requested.wait()
                    runners.cancel_scope.deadline = anyio.current_time() + self._close_timeout_s
            finally:
                self._closed.set()
                self._notify_changed()

    async def aclose(self) -> None:
        """End every connection and wait for it; idempotent; leaving early cancels nothing."""
        self._close_requested.set()
        if not self._started:
            self._closed.set()
            return
        await self._closed.wait()

    async def __aenter__(self) -> Self:
        group = anyio.create_task_group()
        await group.__aenter__()
        self._own_group = group
        try:
            await group.start(self.run)
        except BaseException as exc:
            group.cancel_scope.cancel()
            await group.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        assert self._own_group is not None
        return await self._own_group.__aexit__(exc_type, exc_val, exc_tb)

    # --- what runners report ----------------------------------------------------------

    @property
    def closing(self) -> bool:
        return self._close_requested.is_set()

    @property
    def cwd(self) -> Path | None:
        return self._cwd

    @property
    def reconnect_policy(self) -> ReconnectPolicy:
        return self._reconnect

    @property
    def close_requested(self) -> anyio.Event:
        return self._close_requested

    def status_unchanged(self) -> None:
        """Wake waiters for something other than a status change (a runner's flags)."""
        self._notify_changed()

    def _notify_changed(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def _emit(self, event: McpEvent) -> None:
        if self._close_requested.is_set():
            return  # closing: the snapshots still change, nobody needs telling
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                logger.exception("MCP event listener %r failed on %r", listener, event)

    def status_changed(self, status: ServerStatus, previous: ServerState) -> None:
        if status.state is not previous or status.error is not None:
            logger.info(
                "MCP server %s: %s%s",
                status.name,
                status.state.value,
                f" ({status.error})" if status.error else "",
            )
        self._emit(ServerStatusChanged(status, previous))
        self._notify_changed()

    def tools_changed(self) -> None:
        """Rebuild the tool set from every runner's current listing: the next generation."""
        listed = [
            (runner, connection, tool)
            for runner in self._runners
            if (connection := runner.connection) is not None
            for tool in runner.listing
        ]
        names = assign_tool_names((runner.config.name, tool.name) for runner, _, tool in listed)
        generation = self._tool_set.generation + 1
        tools = tuple(
            _mcp_tool(
                names[(runner.config.name, tool.name)], runner.config, tool, connection, generation
            )
            for runner, connection, tool in listed
        )
        self._tool_set = McpToolSet(generation, tools)
        for runner in self._runners:
            runner.tool_names = tuple(
                tool.definition.name for tool in tools if tool.server == runner.config.name
            )
        logger.info("MCP tool set generation %d: %d tools", generation, len(tools))
        self._emit(ToolSetChanged(self._tool_set))
        self._notify_changed()


def _mcp_tool(
    name: str,
    config: McpServerConfig,
    tool: mcp_types.Tool,
    connection: Connection,
    generation: int,
) -> McpTool:
    schema: dict[str, Any] = dict(tool.input_schema)
    schema.setdefault("type", "object")
    title = (tool.annotations.title if tool.annotations else None) or tool.title or tool.name
    description = tool.description or f"Tool {tool.name!r} of MCP server {config.name!r}."
    return McpTool(
        definition=ToolDefinition(name=name, description=description, input_schema=schema),
        server=config.name,
        tool=tool.name,
        origin=config.origin,
        generation=generation,
        title=title,
        connection=connection,
    )


def _contains(
    exc: BaseException, kind: type[BaseException] | tuple[type[BaseException], ...]
) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_contains(inner, kind) for inner in exc.exceptions)
    return isinstance(exc, kind)


def _listing_key(tools: Sequence[mcp_types.Tool]) -> str:
    return json.dumps(
        [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools],
        sort_keys=True,
    )


@attrs.define
class _AttemptEnd:
    """How one connection attempt ended."""

    was_ready: bool
    ready_for_s: float
    error: str


class _ServerRunner:
    """Owns one server: connects it, follows its tool list, reconnects it, ends it."""

    def __init__(self, manager: McpServerManager, config: McpServerConfig) -> None:
        self.manager = manager
        self.config = config
        self.connection: Connection | None = None
        self.listing: tuple[mcp_types.Tool, ...] = ()
        self.tool_names: tuple[str, ...] = ()
        #: The first connection attempt ended (ready or failed).
        self.first_attempt_over = False
        self._state = ServerState.CONNECTING
        self._error: str | None = None
        self._server_info: str | None = None

    @property
    def status(self) -> ServerStatus:
        return ServerStatus(
            name=self.config.name,
            origin=self.config.origin,
            transport=self.config.transport,
            state=self._state,
            error=self._error,
            tools=self.tool_names,
            server_info=self._server_info,
        )

    def _set(self, state: ServerState, error: str | None = None) -> None:
        # Every status text (`/mcp`, notifications, logs) comes from here: no URL credentials.
        error = redact_url_credentials(error) if error is not None else None
        if (state, error) == (self._state, self._error):
            return
        previous = self._state
        self._state, self._error = state, error
        self.manager.status_changed(self.status, previous)

    # --- the server's life ------------------------------------------------------------

    async def run(self) -> None:
        policy = self.manager.reconnect_policy
        retries = 0
        ever_ready = False
        while not self.manager.closing:
            end = await self._attempt(initial=not ever_ready)
            if self.manager.closing:
                return
            if not end.was_ready and not ever_ready:
                self.first_attempt_over = True
                self._set(ServerState.FAILED, end.error)
                self.manager.status_unchanged()
                return
            if end.was_ready:
                ever_ready = True
                if end.ready_for_s >= policy.reset_after_s:
                    retries = 0
            if retries >= len(policy.delays_s):
                self._set(
                    ServerState.FAILED,
                    f"gave up after {retries} reconnect attempt(s): {end.error}",
                )
                return
            delay = policy.delays_s[retries]
            retries += 1
            self._set(
                ServerState.DISCONNECTED,
                f"reconnecting in {delay:g} s (attempt {retries} of {len(policy.delays_s)}): "
                f"{end.error}",
            )
            with anyio.move_on_after(delay):
                await self.manager.close_requested.wait()

    async def _attempt(self, *, initial: bool) -> _AttemptEnd:
        """One connection, from starting it to its end; never raises."""
        self._set(ServerState.CONNECTING)
        ready = anyio.Event()
        timed_out = False
        timeout_error = (
            f"did not start (start, handshake and tool list) within "
            f"{self.config.startup_timeout_s:g} s"
        )

        async def watch_startup(attempt: anyio.CancelScope) -> None:
            nonlocal timed_out
            with anyio.move_on_after(self.config.startup_timeout_s):
                await _wait_any(ready, self.manager.close_requested)
                if not ready.is_set():
                    attempt.cancel()  # closing before the server was up
                return
            timed_out = True
            if initial:
                # Failed now, not after the process is gone (stopping it takes a moment).
                self.first_attempt_over = True
                self._set(ServerState.FAILED, timeout_error)
            attempt.cancel()

        ready_at: float | None = None
        error = "the connection ended"
        with anyio.CancelScope() as attempt:
            try:
                async with anyio.create_task_group() as watchdog:
                    watchdog.start_soon(watch_startup, attempt)
                    sandbox = await self._sandbox()
                    async with open_connection(
                        self.config, cwd=self.manager.cwd, sandbox=sandbox
                    ) as connection:
                        try:
                            async with anyio.create_task_group() as work:
                                # Subscribed before listing: no change falls in between.
                                await work.start(self._subscribe_tool_list, connection)
                                self._adopt(connection, await connection.list_tools())
                                ready_at = anyio.current_time()
                                ready.set()
                                work.start_soon(self._follow_tool_list, connection)
                                await _wait_any(connection.ended, self.manager.close_requested)
                                work.cancel_scope.cancel()
                            if self.manager.closing and not connection.ended.is_set():
                                connection.mark_ended("the session is closing", by_us=True)
                            else:
                                if connection.process is not None:
                                    await connection.process.wait_exit_description(_EXIT_WAIT_S)
                                connection.mark_ended(connection.loss_reason())
                            error = connection.loss_reason()
                        finally:
                            self._drop(connection)
                    watchdog.cancel_scope.cancel()
            except Exception as exc:
                if not _contains(exc, (ConnectionFailed, MCPError)):
                    logger.exception("MCP server %s: unexpected failure", self.config.name)
                error = describe_error(exc)
        if timed_out:
            error = timeout_error
        ready_for = anyio.current_time() - ready_at if ready_at is not None else 0.0
        return _AttemptEnd(was_ready=ready_at is not None, ready_for_s=ready_for, error=error)

    async def _sandbox(self) -> Sandbox | None:
        """The sandbox a server declared with `sandbox = true` runs in; `ConnectionFailed`
        saying why where it cannot (it never runs unconfined instead)."""
        config = self.config
        if not isinstance(config, StdioServerConfig) or not config.sandbox:
            return None
        if self.manager.sandbox is None:
            raise ConnectionFailed("sandbox = true, and this agent has no command sandbox")
        try:
            return await self.manager.sandbox(config)
        except SandboxUnavailable as exc:
            fix = f" ({exc.support.fix})" if exc.support.fix else ""
            raise ConnectionFailed(f"sandbox = true, but {exc}{fix}") from None

    def _adopt(self, connection: Connection, listing: Sequence[mcp_types.Tool]) -> None:
        self.connection = connection
        self.listing = tuple(listing)
        self._server_info = connection.server_info
        self.first_attempt_over = True
        self.manager.tools_changed()
        self._set(ServerState.READY)

    def _drop(self, connection: Connection) -> None:
        if self.connection is connection:
            self.connection = None
            self.listing = ()
            self.manager.tools_changed()

    async def _follow_tool_list(self, connection: Connection) -> None:
        """Re-list tools after each tools/list_changed; unchanged listings change nothing."""
        while True:
            await connection.wait_list_changed()
            try:
                listing = await connection.list_tools()
            except Exception as exc:
                logger.warning(
                    "MCP server %s: re-listing tools failed: %s",
                    self.config.name,
                    describe_error(exc),
                )
                continue
            if _listing_key(listing) != _listing_key(self.listing):
                self.listing = tuple(listing)
                self.manager.tools_changed()

    async def _subscribe_tool_list(
        self, connection: Connection, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """On 2026-era connections list changes come through a subscription; ask for one.

        Reports started once the server acknowledged it (or there is none to have).
        """
        started = False
        capabilities = connection.client.server_capabilities
        try:
            if capabilities.tools is not None and capabilities.tools.list_changed:
                async with connection.client.listen(tools_list_changed=True) as subscription:
                    task_status.started()
                    started = True
                    async for _event in subscription:
                        connection.note_list_changed()
        except Exception as exc:
            # Handshake-era servers send notifications/tools/list_changed instead.
            logger.debug(
                "MCP server %s: no list subscription: %s", self.config.name, describe_error(exc)
            )
        if not started:
            task_status.started()
