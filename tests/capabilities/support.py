"""Helpers for capability tests: a runtime with the capabilities, test tools, test prompters.

`in_process_agent()` is the runtime in this process, with no ACP and no
subprocess (the agent as a process is `tests.support.running_agent`).

The tools here exist only for tests (the product's are in `acp_agent.tools`):
`CountingTool` appends a line to a file each time it runs (its side effect
is counted), `BlockingTool` runs until cancelled, `ReaderTool` only reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs

from acp_agent.capabilities import (
    MODEL_LOOP,
    SESSION_CONTROLS,
    TOOLSET,
    CapabilitySettings,
    register_capabilities,
)
from acp_agent.capabilities._assembly import TOOL_EXECUTOR
from acp_agent.capabilities.context import Environment
from acp_agent.capabilities.controls import SessionControls
from acp_agent.capabilities.execution import ToolExecutor
from acp_agent.capabilities.loop import LoopSettings, ModelLoop
from acp_agent.capabilities.permissions import (
    PermissionAnswer,
    PermissionChoice,
    PermissionQuestion,
)
from acp_agent.capabilities.session import ToolSet
from acp_agent.core import (
    Event,
    Runtime,
    ServiceRegistry,
    Session,
    Store,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    new_id,
    open_runtime,
)
from acp_agent.models import ConfiguredModels, load_models_config, parse_script
from acp_agent.store import MemoryStore
from acp_agent.toolkit import (
    Effect,
    PermissionNeed,
    TextContent,
    Tool,
    ToolContext,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolPresentation,
    ToolResult,
)

__all__ = (
    "ENVIRONMENT",
    "Agent",
    "AnsweringPrompter",
    "BlockingTool",
    "CountingTool",
    "ReaderTool",
    "in_process_agent",
    "payloads_of",
)

ENVIRONMENT = Environment("TestOS 1.0", "/bin/sh", {})


@attrs.define
class CountingTool:
    """`count`: appends a line to `counter` each run (a side effect that must happen once)."""

    counter: Path
    effect: Effect = Effect.EXECUTE
    name: str = "count"

    @property
    def definition(self) -> ToolDefinition:
        schema = {"type": "object", "properties": {"label": {"type": "string"}}}
        return ToolDefinition(self.name, "Count a run.", schema, ToolKind.EXECUTE)

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        return ToolPresentation(f"Count {arguments.get('label', '')}".strip(), ToolKind.EXECUTE)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        label = arguments.get("label", "")
        if not isinstance(label, str):
            raise ToolInputError("label must be a string")
        return PermissionNeed(self.effect, f"count {label}".strip())

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        with self.counter.open("a") as file:
            file.write(f"{arguments.get('label', '')}\n")
        runs = len(self.counter.read_text().splitlines())
        await context.progress.content([TextContent(f"run {runs}")])
        return ToolResult((TextContent(f"counted {runs}"),), f"counted {runs}", raw_output=runs)

    @property
    def runs(self) -> int:
        return len(self.counter.read_text().splitlines()) if self.counter.exists() else 0


@attrs.define
class BlockingTool:
    """`block`: records that it started, then runs until cancelled."""

    started: anyio.Event = attrs.field(factory=anyio.Event)
    name: str = "block"

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(self.name, "Run forever.", {"type": "object"}, ToolKind.EXECUTE)

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        return ToolPresentation("Block", ToolKind.EXECUTE)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        return PermissionNeed(Effect.EXECUTE, "block")

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        self.started.set()
        await context.progress.terminal_output("t1", "working\n")
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


@attrs.define
class ReaderTool:
    """`look`: reads nothing, changes nothing; fails when asked to."""

    name: str = "look"

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(self.name, "Look.", {"type": "object"}, ToolKind.READ)

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        return ToolPresentation("Look", ToolKind.READ)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        outside = tuple(str(p) for p in arguments.get("outside", []))
        return PermissionNeed(Effect.READ_ONLY, "look", outside_workspace=outside)

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        if arguments.get("fail"):
            raise RuntimeError("the lens cracked")
        return ToolResult((TextContent("seen"),), "seen")


class AnsweringPrompter:
    """Answers each question with the next of `answers` (None: cancelled); records them."""

    def __init__(self, *answers: PermissionChoice | None, block: bool = False) -> None:
        self.answers = list(answers)
        self.questions: list[PermissionQuestion] = []
        self.block = block
        self.asked = anyio.Event()

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        self.questions.append(question)
        self.asked.set()
        if self.block:
            await anyio.sleep_forever()
        return PermissionAnswer(self.answers.pop(0) if self.answers else None)


def payloads_of(events: Sequence[Event], *kinds: type) -> list[Any]:
    """The payloads of `events` of the given classes (all when none given)."""
    return [e.payload for e in events if not kinds or isinstance(e.payload, kinds)]


@attrs.define
class Agent:
    """A runtime with the capabilities and one open session."""

    runtime: Runtime
    session: Session
    store: Store

    @property
    def controls(self) -> SessionControls:
        return self.session.scope.get(SESSION_CONTROLS)

    @property
    def loop(self) -> ModelLoop:
        return self.session.main.scope.get(MODEL_LOOP)

    @property
    def executor(self) -> ToolExecutor:
        return self.session.main.scope.get(TOOL_EXECUTOR)

    @property
    def toolset(self) -> ToolSet:
        return self.session.scope.get(TOOLSET)

    async def history(self) -> list[Event]:
        return await self.session.main.read()

    async def prompt(self, text: str = "Go") -> TurnId:
        turn_id = TurnId(new_id("turn"))
        await self.loop.start_turn(turn_id, [TextContent(text)])
        return turn_id

    async def wait_for(self, *kinds: type, timeout_s: float = 10.0) -> list[Any]:
        """The payloads of `kinds` once at least one is published."""
        with anyio.fail_after(timeout_s):
            while not (found := payloads_of(await self.history(), *kinds)):  # noqa: ASYNC110
                await anyio.sleep(0.005)
        return found

    async def wait_turn_over(self, turn_id: TurnId, *, timeout_s: float = 10.0) -> Any:
        """The `TurnEnded` or `TurnInterrupted` of `turn_id`, once published."""
        with anyio.fail_after(timeout_s):
            while True:
                for event in await self.history():
                    payload = event.payload
                    if isinstance(payload, TurnEnded | TurnInterrupted) and (
                        payload.turn_id == turn_id
                    ):
                        return payload
                await anyio.sleep(0.005)


@asynccontextmanager
async def in_process_agent(
    script: Mapping[str, Any] | None,
    tmp_path: Path,
    *,
    tools: Callable[[], Sequence[Tool]] = tuple,
    store: Store | None = None,
    session_id: str | None = None,
    loop: LoopSettings | None = None,
    owner: str = "",
) -> AsyncIterator[Agent]:
    """A runtime over `store` (a fresh memory store) playing `script`, with one session
    in `tmp_path` (created, `owner`'s, or `session_id` loaded)."""
    parsed = parse_script(script, name="test") if script is not None else None
    models = ConfiguredModels(load_models_config(None, {}), {}, script=parsed)
    registry = ServiceRegistry()
    register_capabilities(
        registry,
        CapabilitySettings(
            models=models, tools=tools, loop=loop or LoopSettings(), environment=ENVIRONMENT
        ),
    )
    store = store if store is not None else MemoryStore()
    async with open_runtime(store, registry=registry) as runtime:
        if session_id is None:
            session = await runtime.create_session(str(tmp_path), owner=owner)
        else:
            session = await runtime.load_session(session_id)  # type: ignore[arg-type]
        yield Agent(runtime, session, store)
