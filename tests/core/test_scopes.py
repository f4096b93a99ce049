"""Scopes: names resolve per scope, work waits for readiness, cleanups run in reverse."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from acp_agent.core import (
    BRANCH,
    DISPATCHER,
    RUNTIME,
    SESSION,
    STORE,
    TIMELINE,
    AlreadyStarted,
    CoreMisuse,
    Scope,
    ScopeKind,
    ScopeState,
    ServiceKey,
    ServiceNotFound,
    ServiceRegistry,
    open_runtime,
)
from acp_agent.store import MemoryStore

pytestmark = pytest.mark.anyio

COUNTER = ServiceKey[list[str]]("counter", ScopeKind.SESSION)
NOTEBOOK = ServiceKey[list[str]]("notebook", ScopeKind.BRANCH)


async def test_a_name_resolves_to_the_instance_of_the_callers_scope() -> None:
    registry = ServiceRegistry()

    async def notebook(scope: Scope) -> list[str]:
        return [scope.get(BRANCH).id]

    async def counter(scope: Scope) -> list[str]:
        return []

    registry.register(NOTEBOOK, notebook)
    registry.register(COUNTER, counter)
    store = MemoryStore()
    async with open_runtime(store, registry=registry) as runtime:
        session = await runtime.create_session("/work/a")
        other = await session.create_branch(session.main)
        main_scope, other_scope = session.main.scope, other.scope
        # Two branches asking for the same names get their own instances...
        assert main_scope.get(TIMELINE) is session.main.timeline
        assert other_scope.get(TIMELINE) is other.timeline
        assert main_scope.get(TIMELINE) is not other_scope.get(TIMELINE)
        assert main_scope.get(NOTEBOOK) == [session.main.id]
        assert other_scope.get(NOTEBOOK) == [other.id]
        assert other_scope.get(DISPATCHER) is other.dispatcher
        # ...and share what their session and process own.
        assert main_scope.get(COUNTER) is other_scope.get(COUNTER)
        assert main_scope.get(SESSION) is other_scope.get(SESSION) is session
        assert other_scope.get(STORE) is store
        assert other_scope.get(RUNTIME) is runtime
        # A session has no branch to resolve a branch service in.
        with pytest.raises(ServiceNotFound, match="notebook"):
            session.scope.get(NOTEBOOK)


async def test_registering_a_name_twice_is_refused() -> None:
    registry = ServiceRegistry()

    async def factory(scope: Scope) -> list[str]:
        return []

    registry.register(COUNTER, factory)
    with pytest.raises(AlreadyStarted):
        registry.register(COUNTER, factory)


async def open_session_scope(root: Scope, assemble: Any = None, label: str = "s") -> Scope:
    return await root.open_child(ScopeKind.SESSION, label, assemble=assemble)


async def test_cleanups_registered_at_assembly_run_in_reverse_order_at_close() -> None:
    order: list[str] = []

    async def assemble(scope: Scope) -> None:
        for name in ("store handle", "model host", "tool executor"):
            scope.add_cleanup(lambda name=name: record(name))

    async def record(name: str) -> None:
        await anyio.lowlevel.checkpoint()
        order.append(name)

    async with anyio.create_task_group() as tg:
        root = await Scope.open_root(tg, ServiceRegistry())
        scope = await open_session_scope(root, assemble)
        await scope.aclose()
        await scope.aclose()  # idempotent
        assert scope.state is ScopeState.CLOSED
        await root.aclose()
    assert order == ["tool executor", "model host", "store handle"]


async def test_background_work_starts_only_once_the_scope_is_ready() -> None:
    seen: list[ScopeState] = []
    scope_seen: list[Scope] = []

    async def work() -> None:
        seen.append(scope_seen[0].state)

    async def assemble(scope: Scope) -> None:
        scope_seen.append(scope)
        scope.start_soon(work)
        for _ in range(10):  # assembly takes a while; the work must not run yet
            await anyio.lowlevel.checkpoint()
        assert seen == []

    async with anyio.create_task_group() as tg:
        root = await Scope.open_root(tg, ServiceRegistry())
        scope = await open_session_scope(root, assemble)
        await anyio.lowlevel.checkpoint()
        await scope.aclose()
        await root.aclose()
    assert seen == [ScopeState.READY]


async def test_a_failed_assembly_runs_the_cleanups_so_far_and_raises_to_the_opener() -> None:
    cleaned: list[str] = []

    async def assemble(scope: Scope) -> None:
        async def cleanup() -> None:
            cleaned.append("half-built service")

        scope.add_cleanup(cleanup)
        raise LookupError("model not configured")

    async with anyio.create_task_group() as tg:
        root = await Scope.open_root(tg, ServiceRegistry())
        with pytest.raises(LookupError, match="model not configured"):
            await open_session_scope(root, assemble)
        assert root.state is ScopeState.READY  # the parent is untouched
        await root.aclose()
    assert cleaned == ["half-built service"]


async def test_failing_work_closes_only_its_own_scope() -> None:
    async def crash() -> None:
        raise RuntimeError("a service crashed")

    async def assemble(scope: Scope) -> None:
        scope.start_soon(crash)

    async with anyio.create_task_group() as tg:
        root = await Scope.open_root(tg, ServiceRegistry())
        sibling = await open_session_scope(root, label="sibling")
        failing = await open_session_scope(root, assemble, label="failing")
        await failing.wait_closed()
        assert isinstance(failing.failure, BaseExceptionGroup | RuntimeError)
        assert sibling.state is ScopeState.READY
        await root.aclose()


async def test_services_and_cleanups_can_only_be_added_during_assembly() -> None:
    async with anyio.create_task_group() as tg:
        root = await Scope.open_root(tg, ServiceRegistry())
        scope = await open_session_scope(root)
        with pytest.raises(AlreadyStarted):
            scope.provide(COUNTER, [])
        with pytest.raises(AlreadyStarted):
            scope.add_cleanup(anyio.lowlevel.checkpoint)
        await root.aclose()


async def test_a_service_must_be_provided_in_a_scope_of_its_kind() -> None:
    async def assemble(scope: Scope) -> None:
        scope.provide(NOTEBOOK, [])

    async with anyio.create_task_group() as tg:
        root = await Scope.open_root(tg, ServiceRegistry())
        with pytest.raises(CoreMisuse, match="branch scopes"):
            await open_session_scope(root, assemble)
        await root.aclose()
