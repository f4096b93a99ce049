"""Services live in the scope that owns their state: Process, Session or Branch.

A `ServiceRegistry` says which services each scope kind assembles, in
order. A `Scope` builds them, then is published ready; only then does the
background work its services asked for (`start_soon`) begin. A name resolves
to the instance of the caller's scope chain: two branches asking for
`TIMELINE` get their own, both get the same session's services.

A scope owns a task group hosted in its parent's. Closing it cancels its
work, waits for it, then runs the cleanups registered at assembly in
reverse order, shielded. The close runs in the host task, so a caller of
`aclose()` that stops waiting cancels nothing.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar, cast

import anyio
import attrs
from anyio.abc import TaskGroup, TaskStatus

from acp_agent.core._errors import AlreadyStarted, CoreMisuse, ScopeClosed, ServiceNotFound
from acp_agent.values import Value

__all__ = (
    "Assembler",
    "Cleanup",
    "Scope",
    "ScopeKind",
    "ScopeState",
    "ServiceFactory",
    "ServiceKey",
    "ServiceRegistry",
    "TaskFunc",
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: A task body, as anyio's task groups take it.
TaskFunc = Callable[[], Coroutine[Any, Any, Any]]

#: Undoes something assembly did; awaited at close, newest first.
Cleanup = Callable[[], Awaitable[None]]


class ScopeKind(enum.Enum):
    """The owner of a service's state."""

    #: One per process: configuration, model hosts, the store.
    PROCESS = "process"
    #: One per open session: its identity, configuration and lease.
    SESSION = "session"
    #: One per open branch: its timeline, dispatcher, context, tool execution.
    BRANCH = "branch"


class ScopeState(enum.Enum):
    """Where a scope is in its life."""

    #: Services are being built and started; background work is held back.
    ASSEMBLING = "assembling"
    #: Published ready: background work runs.
    READY = "ready"
    #: Close began (asked, or work failed): work is cancelled, cleanups run.
    CLOSING = "closing"
    #: Work has ended and every cleanup has run.
    CLOSED = "closed"


@attrs.frozen
class ServiceKey(Value, Generic[T]):
    """The typed name of a service and the scope kind that owns it."""

    name: str
    kind: ScopeKind


#: Provides a scope's own services before the registry's factories run.
Assembler = Callable[["Scope"], Awaitable[None]]

#: Builds a service for a scope; may resolve dependencies, register cleanups and
#: start the service (`await scope.start(...)`) before returning it.
ServiceFactory = Callable[["Scope"], Awaitable[T]]


class ServiceRegistry:
    """Which services each scope kind assembles, in registration order."""

    def __init__(self) -> None:
        self._factories: dict[ScopeKind, dict[str, ServiceFactory[Any]]] = {
            kind: {} for kind in ScopeKind
        }

    def register(self, key: ServiceKey[T], factory: ServiceFactory[T]) -> None:
        """Assemble `key` with `factory` in every scope of `key.kind` opened from now on."""
        factories = self._factories[key.kind]
        if key.name in factories:
            raise AlreadyStarted(f"service {key.name!r} is already registered")
        factories[key.name] = factory

    def factories(self, kind: ScopeKind) -> list[tuple[str, ServiceFactory[Any]]]:
        """The factories a scope of `kind` runs, in registration order."""
        return list(self._factories[kind].items())


class Scope:
    """A unit of ownership: services, their background work and their cleanups."""

    def __init__(
        self, kind: ScopeKind, label: str, *, parent: Scope | None, registry: ServiceRegistry
    ) -> None:
        self.kind = kind
        self.label = label
        self.parent = parent
        self.registry = registry
        #: Why the scope's work failed, if it did after being published ready.
        self.failure: Exception | None = None
        self._state = ScopeState.ASSEMBLING
        self._services: dict[str, object] = {}
        self._cleanups: list[Cleanup] = []
        self._deferred: list[tuple[TaskFunc, object]] = []
        self._task_group: TaskGroup | None = None
        self._close_requested = anyio.Event()
        self._closed = anyio.Event()

    def __repr__(self) -> str:
        return f"<Scope {self.kind.value}:{self.label} {self._state.value}>"

    @property
    def state(self) -> ScopeState:
        return self._state

    # --- services ---------------------------------------------------------------------

    def get(self, key: ServiceKey[T]) -> T:
        """The instance of `key` in this scope's chain (this scope, then its parents)."""
        scope: Scope | None = self
        while scope is not None and scope.kind is not key.kind:
            scope = scope.parent
        if scope is None or key.name not in scope._services:
            raise ServiceNotFound(
                f"no {key.kind.value} service {key.name!r} for {self.kind.value}:{self.label}"
            )
        return cast(T, scope._services[key.name])

    def find(self, key: ServiceKey[T]) -> T | None:
        """Like `get`, for an optional service: None when nothing registered `key`."""
        try:
            return self.get(key)
        except ServiceNotFound:
            return None

    def provide(self, key: ServiceKey[T], instance: T) -> None:
        """Make `instance` the scope's `key`; only during assembly."""
        self._require_assembling(f"provide {key.name!r}")
        if key.kind is not self.kind:
            raise CoreMisuse(
                f"{key.name!r} belongs to {key.kind.value} scopes, not {self.kind.value}"
            )
        if key.name in self._services:
            raise AlreadyStarted(f"{self!r} already provides {key.name!r}")
        self._services[key.name] = instance

    def add_cleanup(self, cleanup: Cleanup) -> None:
        """Run `cleanup` at close, after the scope's work ended, newest first."""
        self._require_assembling("add a cleanup")
        self._cleanups.append(cleanup)

    def _require_assembling(self, what: str) -> None:
        if self._state is not ScopeState.ASSEMBLING:
            raise AlreadyStarted(f"cannot {what}: {self!r} is past assembly")

    # --- work -------------------------------------------------------------------------

    def start_soon(self, func: TaskFunc, /, *, name: object = None) -> None:
        """Run `func` as the scope's background work, once the scope is ready."""
        if self._state is ScopeState.ASSEMBLING:
            self._deferred.append((func, name))
        elif self._state is ScopeState.CLOSED or self._task_group is None:
            raise ScopeClosed(f"{self!r} takes no more work")
        else:
            self._task_group.start_soon(func, name=name)

    async def start(
        self, func: Callable[..., Coroutine[Any, Any, Any]], /, *, name: object = None
    ) -> Any:
        """Start `func(task_status=...)` in the scope and wait until it reports started."""
        if self._task_group is None or self._state is ScopeState.CLOSED:
            raise ScopeClosed(f"{self!r} takes no more work")
        return await self._task_group.start(func, name=name)

    async def open_child(
        self, kind: ScopeKind, label: str, *, assemble: Assembler | None = None
    ) -> Scope:
        """Open a child scope hosted in this one: assembled, started and published ready.

        `assemble` provides the child's own services before the registry's factories
        run. If assembly fails, the cleanups registered so far run and the error
        propagates here.
        """
        child = Scope(kind, label, parent=self, registry=self.registry)
        await child._open(self.start, assemble)
        return child

    @classmethod
    async def open_root(
        cls, task_group: TaskGroup, registry: ServiceRegistry, *, assemble: Assembler | None = None
    ) -> Scope:
        """Open the process scope, hosted in `task_group`."""
        root = cls(ScopeKind.PROCESS, "process", parent=None, registry=registry)
        await root._open(task_group.start, assemble)
        return root

    async def _open(self, start: Callable[..., Awaitable[Any]], assemble: Assembler | None) -> None:
        async def host(*, task_status: TaskStatus[None]) -> None:
            await self._host(assemble, task_status)

        await start(host, name=f"scope {self.kind.value}:{self.label}")

    async def _host(self, assemble: Assembler | None, task_status: TaskStatus[None]) -> None:
        """Own the scope's task group from assembly to the last cleanup."""
        assembly_error: Exception | None = None
        try:
            async with anyio.create_task_group() as task_group:
                self._task_group = task_group
                try:
                    if assemble is not None:
                        await assemble(self)
                    for name, factory in self.registry.factories(self.kind):
                        self.provide(ServiceKey(name, self.kind), await factory(self))
                except Exception as exc:
                    # Raised to the opener as is, not wrapped in the group's ExceptionGroup.
                    assembly_error = exc
                    task_group.cancel_scope.cancel()
                else:
                    self._state = ScopeState.READY
                    task_status.started()
                    for func, task_name in self._deferred:
                        task_group.start_soon(func, name=task_name)
                    self._deferred.clear()
                    await self._close_requested.wait()
                    task_group.cancel_scope.cancel()
            if assembly_error is not None:
                raise assembly_error
        except Exception as exc:
            if self._state is ScopeState.ASSEMBLING:
                raise  # the opener learns through start()
            self.failure = exc
            logger.error("%r failed; closing it", self, exc_info=exc)
        finally:
            self._state = ScopeState.CLOSING
            self._deferred.clear()
            with anyio.CancelScope(shield=True):
                for cleanup in reversed(self._cleanups):
                    try:
                        await cleanup()
                    except Exception:
                        logger.exception("cleanup of %r failed", self)
            self._state = ScopeState.CLOSED
            self._closed.set()

    async def aclose(self) -> None:
        """Cancel the scope's work, wait for it and its cleanups; idempotent.

        The close runs in the scope's host task, so leaving early cancels nothing.
        """
        self._close_requested.set()
        if self._task_group is None and self._state is ScopeState.ASSEMBLING:
            return  # never hosted: nothing runs, nothing to clean up
        await self._closed.wait()

    async def wait_closed(self) -> None:
        """Wait until the scope has closed (asked to, or because its work failed)."""
        await self._closed.wait()
