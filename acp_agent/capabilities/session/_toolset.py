"""The tools a session offers the model, in generations, and which generation a request saw.

A `ToolSet` holds the current `ToolGeneration`: the tools, by name, offered
to every model request made while it is current. Loading or reloading tools
(an MCP server restarts, a configuration changes) makes a new generation;
`reload` first retires the old one (no new call of it starts), cancels the
calls of it still running, waits for them to settle, and only then hands
over. `supersede` hands over at once and cancels nothing: for changes that
leave calls already proposed valid (MCP tools appearing, an MCP server's
list changing), the old generation keeps running calls for its requests.
So a call is always run by the generation its request was made with, and
"today's tool of the same name" never runs for yesterday's request.

`ToolBindings` remembers, per model request id, the generation that request
offered. The tool executor looks a call's handler up there; a request it has
no binding for (made before a restart), or whose generation has retired,
gets a clear error result instead of a run.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import anyio

from acp_agent.toolkit import Tool, ToolDefinition

__all__ = ("GenerationState", "ToolBindings", "ToolGeneration", "ToolSet", "UnboundCall")

logger = logging.getLogger(__name__)


class GenerationState(enum.Enum):
    """Where a generation of tools is in its life."""

    #: Current: offered to new requests; its calls run.
    CURRENT = "current"
    #: No longer offered, but its calls still run for the requests bound to it: tools
    #: were added or changed (an MCP server became ready, its list changed), which
    #: withdraws nothing from calls already proposed.
    SUPERSEDED = "superseded"
    #: Being replaced: no new call starts; running calls are cancelled and awaited.
    RETIRING = "retiring"
    #: Replaced, and none of its calls runs any more.
    RETIRED = "retired"


#: The states whose calls may start.
_RUNNABLE = frozenset({GenerationState.CURRENT, GenerationState.SUPERSEDED})


class UnboundCall(LookupError):
    """A call has no handler to run it; the message is what the model reads."""


class ToolGeneration:
    """One set of tools, offered together, and the calls of it that are running."""

    def __init__(self, number: int, tools: Iterable[Tool]) -> None:
        self.number = number
        by_name: dict[str, Tool] = {}
        for tool in tools:
            name = tool.definition.name
            if name in by_name:
                raise ValueError(f"two tools are named {name!r}")
            by_name[name] = tool
        self._tools = by_name
        self._state = GenerationState.CURRENT
        self._running: set[anyio.CancelScope] = set()
        self._idle = anyio.Event()
        self._idle.set()

    def __repr__(self) -> str:
        return f"<ToolGeneration {self.number} {self._state.value} {sorted(self._tools)}>"

    @property
    def state(self) -> GenerationState:
        return self._state

    @property
    def tools(self) -> Mapping[str, Tool]:
        return MappingProxyType(self._tools)

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        """What the model is told, in the order the tools were given."""
        return tuple(tool.definition for tool in self._tools.values())

    def tool(self, name: str) -> Tool:
        """The tool to run for a call named `name`; `UnboundCall` if there is none to run."""
        if self._state not in _RUNNABLE:
            raise UnboundCall(
                f"Not run: the tools were reloaded after this call was proposed, and {name!r} "
                "of the earlier set is no longer available. Call it again if it is still needed."
            )
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            raise UnboundCall(f"Not run: there is no tool named {name!r} (available: {known}).")
        return tool

    def running(self) -> _Running:
        """Track a call of this generation from its start until its result is recorded::

            with generation.running() as scope:
                with scope:              # retiring the generation cancels this
                    result = await tool.run(...)
                ...                      # record the result; retiring waits for this too

        Raises `UnboundCall` once the generation is retiring.
        """
        if self._state not in _RUNNABLE:
            raise UnboundCall(
                "Not run: the tools were reloaded before this call could start. "
                "Call it again if it is still needed."
            )
        return _Running(self)

    def _started(self, scope: anyio.CancelScope) -> None:
        self._running.add(scope)
        if self._idle.is_set():
            self._idle = anyio.Event()

    def _ended(self, scope: anyio.CancelScope) -> None:
        self._running.discard(scope)
        if not self._running:
            self._idle.set()

    async def retire(self) -> None:
        """Stop the generation: cancel its running calls and wait until they are settled."""
        if self._state in _RUNNABLE:
            self._state = GenerationState.RETIRING
            for scope in list(self._running):
                scope.cancel()
        await self._idle.wait()
        self._state = GenerationState.RETIRED


class _Running:
    """A call's time in its generation, and the cancel scope retiring uses to stop it."""

    def __init__(self, generation: ToolGeneration) -> None:
        self._generation = generation
        self.scope = anyio.CancelScope()

    def __enter__(self) -> anyio.CancelScope:
        self._generation._started(self.scope)
        return self.scope

    def __exit__(self, *exc_info: object) -> None:
        self._generation._ended(self.scope)


class ToolSet:
    """A session's tools: the current generation, and how to replace it."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._current = ToolGeneration(1, tools)
        self._reloading = anyio.Lock()

    @property
    def current(self) -> ToolGeneration:
        """The generation new requests are offered."""
        return self._current

    async def supersede(self, tools: Iterable[Tool]) -> ToolGeneration:
        """Offer `tools` to new requests from now on, cancelling nothing: the requests
        already bound to the current generation keep running its calls (it is
        superseded, not retired). Returns the new generation."""
        async with self._reloading:
            old = self._current
            new = ToolGeneration(old.number + 1, tools)
            if old.state is GenerationState.CURRENT:
                old._state = GenerationState.SUPERSEDED
            self._current = new
            logger.info("tools changed: generation %d supersedes %d", new.number, old.number)
            return new

    async def reload(self, tools: Iterable[Tool]) -> ToolGeneration:
        """Replace the tools: retire the current generation (cancel and await its calls),
        then make `tools` the current one. Returns the new generation."""
        async with self._reloading:
            old = self._current
            new = ToolGeneration(old.number + 1, tools)
            with anyio.CancelScope(shield=True):
                await old.retire()
            self._current = new
            logger.info("tools reloaded: generation %d replaces %d", new.number, old.number)
            return new


class ToolBindings:
    """Which generation of tools each model request of a branch was offered."""

    def __init__(self) -> None:
        self._by_request: dict[str, ToolGeneration] = {}

    def bind(self, request_id: str, generation: ToolGeneration) -> None:
        self._by_request[request_id] = generation

    def unbind(self, request_id: str) -> None:
        self._by_request.pop(request_id, None)

    def tool(self, request_id: str, name: str) -> Tool:
        """The tool bound to run `name` for `request_id`; `UnboundCall` says why there is none."""
        generation = self._by_request.get(request_id)
        if generation is None:
            raise UnboundCall(
                f"Not run: no tools are bound to the request that proposed this call of {name!r} "
                "(it was made before the agent restarted). Call it again if it is still needed."
            )
        return generation.tool(name)

    def generation(self, request_id: str) -> ToolGeneration | None:
        return self._by_request.get(request_id)
