"""Importing in the background what the first session and prompt will need.

Answering `initialize` loads only the adapter and the wire types: an editor waits
for that answer at every start. Right after it, a daemon thread imports the
runtime, the store, the capabilities, the tools and the adapter's session modules
(and HTTP with the providers when a real model may answer), while the client reads
the answer and the person opens a thread; the first `session/new` and the first
prompt then find them loaded. It gives way to requests: while a handler runs it
starts no new import (with the GIL, anything it did then would slow the handler),
so a request that arrives meanwhile waits at most for the module being imported,
which is usually one it needs itself. Then, giving way the same, it runs the stdio
agent's steps: opening the default model (`ConfiguredModels.prepare`: the HTTP
client, and its CA certificates when the model is served over https, which the first
prompt built), and building the converter's functions for the wire types of a
session's first answers and prompt (`FIRST_WIRE_TYPES`): cattrs compiles one per
class on its first use, which the first prompt paid for; and the stored events'
readers, which a session's first load made as it met each kind.

Nothing runs beside a script's first requests: a thread that opened the model beside
the session's assembly (it never gave way) made a script's first chunk 35 ms later
than opening it on the loop after the assembly (the same work, sharing the GIL; a
person's first prompt, a second later, finds it opened either way).

It starts once the first `session/new` is answered, or a moment after `initialize`
if none comes (`_agent.WARMUP_AFTER_S`): that answer needs none of its imports, and
would share the GIL with them. While that session is assembled it gives way too: the
assembly imports most of the same modules, and a script's first prompt waits for it.

Two threads importing at once cannot deadlock, because no module-level import
cycle joins two packages (`tests/test_import_graph.py` holds that). A failed import
is logged and changes nothing: the request that needs the module imports it itself.

`ACP_AGENT_WARMUP=0` switches it off, to see what a request imports by itself.
"""

from __future__ import annotations

import enum
import importlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

__all__ = (
    "FIRST_WIRE_TYPES",
    "PROVIDER_MODULES",
    "SESSION_MODULES",
    "TOOL_MODULES",
    "Warmup",
    "WarmupState",
    "prepare_event_readers",
    "prepare_wire_types",
    "warmup_enabled",
)

logger = logging.getLogger(__name__)

#: What the first `session/new` and the first prompt import, in the order they do: the
#: answer's own needs first (a `session/new` right after `initialize` finds them loaded or
#: loading, not competing with modules it does not need), then the session's assembly
#: behind the answer, then the prompt's.
SESSION_MODULES: Final = (
    "protocol._types_sessions",
    "acp_agent.store",
    "acp_agent.agent",
    "acp_agent.adapters.acp._options",
    # The faces above are light (a new session is written without the runtime): the
    # store, the runtime and the handles are named by their modules.
    "acp_agent.store._sqlite",
    "acp_agent.core._runtime",
    "acp_agent.capabilities._assembly",
    "acp_agent.tools",
    "acp_agent.mcp",
    # The code intelligence service and its tools, not its pygls client (_connection):
    # that loads when a server first starts.
    "acp_agent.lsp",
    "acp_agent.lsp._tools",
    "acp_agent.agent._agent",
    "acp_agent.agent._commands",
    "acp_agent.adapters.acp._mcp_servers",
    "acp_agent.adapters.acp._session",
    "acp_agent.adapters.acp._updates",
    "acp_agent.adapters.acp._replay_kept",
    "acp_agent.adapters.acp._prompt_turn",
    "acp_agent.adapters.acp._prompt_content",
    # The prompt's wire types (content, updates, tool calls), then those of what the
    # agent asks its client (permission, files, terminals).
    "protocol._types_prompts",
    "protocol._types_others",
)

#: What the first request to a model over HTTP imports (httpx is most of it).
PROVIDER_MODULES: Final = (
    "acp_agent.models._http",
    "acp_agent.models._config",
    "acp_agent.models._openai",
    "acp_agent.models._anthropic",
)

#: How soon a paused warm-up first looks again whether the handlers are done, and the
#: longest it waits between looks.
_BUSY_POLL_S: Final = 0.005
_MAX_BUSY_POLL_S: Final = 0.2

#: What a tool imports only when first used (the ignore rules of a walk, HTML pages):
#: after the rest, so it never delays what a session or a model request needs.
TOOL_MODULES: Final = (
    "pathspec",
    "acp_agent.tools._html",
)

#: The wire types a session's first answers and first prompt read ("structure") or
#: write ("unstructure"): the update kinds, the prompt, its answer and a question.
FIRST_WIRE_TYPES: Final = (
    ("structure", "NewSessionRequest"),
    ("unstructure", "NewSessionResponse"),
    ("structure", "PromptRequest"),
    ("unstructure", "PromptResponse"),
    ("unstructure", "SessionNotification"),
    *(
        ("unstructure", update)
        for update in (
            "UserMessageChunk",
            "AgentMessageChunk",
            "AgentThoughtChunk",
            "ToolCall",
            "ToolCallProgress",
            "Plan",
            "AvailableCommandsUpdate",
            "CurrentModeUpdate",
            "ConfigOptionUpdate",
            "SessionInfoUpdate",
            "UsageUpdate",
            # What a tool call and a message hold (union members: each class is its own).
            "Content",
            "Diff",
            "Terminal",
            "TextContent",
            "ResourceLink",
            "EmbeddedResource",
        )
    ),
    ("unstructure", "RequestPermissionRequest"),
    ("structure", "RequestPermissionResponse"),
)


def prepare_wire_types(converter: Any) -> Callable[[], None]:
    """A warm-up step: build `converter`'s functions for `FIRST_WIRE_TYPES`."""

    def prepare() -> None:
        from protocol import types

        for direction, name in FIRST_WIRE_TYPES:
            wire_type = getattr(types, name)
            if direction == "structure":
                converter.get_structure_hook(wire_type)
            else:
                converter.get_unstructure_hook(wire_type)

    return prepare


def prepare_event_readers() -> Iterator[object]:
    """A warm-up step in parts: make the readers of the stored events' kinds, which a
    session's first load would make as it met each (`acp_agent.agent.prepare_readers`),
    giving way between kinds."""
    from acp_agent.agent import prepare_readers

    return prepare_readers()


#: The environment switch; `0` turns the warm-up off.
WARMUP_VARIABLE: Final = "ACP_AGENT_WARMUP"


def warmup_enabled(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment leaves the warm-up on (anything but `0`)."""
    return env.get(WARMUP_VARIABLE, "1").strip() != "0"


class WarmupState(enum.Enum):
    """Where the warm-up is (the debug requests report it)."""

    WAITING = "waiting"
    RUNNING = "running"
    DONE = "done"


class Warmup:
    """Imports `modules`, then runs each of `then`, once, in a daemon thread, when
    `start()` is first called; each only while `busy()` is false. A step that returns
    an iterator is run in parts: each of its items only while `busy()` is false."""

    def __init__(
        self,
        modules: Sequence[str],
        *,
        busy: Callable[[], bool] = lambda: False,
        then: Sequence[Callable[[], object]] = (),
    ) -> None:
        self.modules = tuple(modules)
        self._then = tuple(then)
        self._busy = busy
        self._started = False
        self._done = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()

    @property
    def state(self) -> WarmupState:
        if self._done.is_set():
            return WarmupState.DONE
        return WarmupState.RUNNING if self._started else WarmupState.WAITING

    def start(self) -> None:
        """Start importing (from the `initialize` answer's `after_response`); idempotent."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._run, name="acp-agent warm-up", daemon=True).start()

    def stop(self) -> None:
        """Import and run nothing more (at shutdown: the process is ending, and a module
        the warm-up imported then took the GIL from closing); what is under way ends."""
        self._stopping.set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until every module was imported and every step ran (or failed); False
        on timeout."""
        return self._done.wait(timeout_s)

    def _run(self) -> None:
        try:
            for name in self.modules:
                if not self._wait_until_idle():
                    return
                try:
                    importlib.import_module(name)
                except Exception:
                    logger.exception("warm-up: %s could not be imported", name)
            for step in self._then:
                if not self._wait_until_idle():
                    return
                try:
                    parts = step()
                    # A step in parts (an iterator): it gives way between them too.
                    if isinstance(parts, Iterator):
                        for _ in parts:
                            if not self._wait_until_idle():
                                return
                except Exception:
                    logger.exception("warm-up: %s failed", getattr(step, "__qualname__", step))
        finally:
            self._done.set()
            logger.debug("warm-up done: %d modules", len(self.modules))

    def _wait_until_idle(self) -> bool:
        """Wait while a handler runs; False once stopped."""
        # A prompt's handler runs for the whole turn: looking again less and less
        # often keeps a paused warm-up from taking the GIL off a stream.
        pause = _BUSY_POLL_S
        while self._busy() and not self._stopping.is_set():
            self._stopping.wait(pause)
            pause = min(pause * 2, _MAX_BUSY_POLL_S)
        return not self._stopping.is_set()
