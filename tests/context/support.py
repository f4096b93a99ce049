"""Helpers for context tests: a clock, ids, a real branch, wire formats, a minimal loop.

`drive_turn` plays the agent loop's part (`acp_agent.capabilities`, in
the order it records facts, without its executor and permissions, so every
id is deterministic): it refreshes state and rules, starts a turn, asks the
engine for each request, streams it from
a real provider over HTTP to the fake server, and records what the loop
records (`ModelRequestStarted` with the guide version, the reply's text and
tool calls, `ModelRequestFinished`, the tool results).
"""

from __future__ import annotations

import datetime
import itertools
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

import attrs
import httpx

from acp_agent.capabilities.context import (
    ContextEngine,
    ContextSettings,
    Environment,
    GuideRegistry,
    default_guide_registry,
)
from acp_agent.capabilities.context._state_sources import (
    DateSource,
    PlatformSource,
    StateSource,
    WorkingDirectorySource,
)
from acp_agent.content import ContentPart, TextContent
from acp_agent.core import (
    Branch,
    CallId,
    EventDraft,
    ModelRequestFinished,
    ModelRequestStarted,
    ModelTextDelta,
    Payload,
    Runtime,
    ToolCallRequested,
    ToolResultRecorded,
    TurnId,
    Usage,
    open_runtime,
)
from acp_agent.models import (
    NO_RETRY,
    AnthropicProvider,
    ModelProvider,
    OpenAIProvider,
    ReplyBuilder,
    Text,
    ToolCall,
    ToolSpec,
)
from acp_agent.store import MemoryStore
from tests.support.fake_provider import (
    Exchange,
    anthropic_event,
    anthropic_stream,
    anthropic_text_block,
    json_error,
    openai_chunk,
    openai_stream,
)

__all__ = (
    "ENVIRONMENT",
    "READ_FILE",
    "WIRES",
    "AnthropicWire",
    "Clock",
    "OpenAIWire",
    "TurnRecord",
    "Wire",
    "at",
    "drive_turn",
    "make_engine",
    "open_main_branch",
    "sequential_ids",
    "sources",
)

PRODUCER = "tests.context"
ENVIRONMENT = Environment("Linux 6.8 (x86_64)", "/bin/bash", {"PATH": "/usr/bin:/bin"})
READ_FILE = ToolSpec(
    "read_file",
    "Read a file of the workspace.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


class Clock:
    """A wall clock the test moves: an aware datetime."""

    def __init__(self, now: datetime.datetime) -> None:
        self.now = now

    def __call__(self) -> datetime.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += datetime.timedelta(**delta)


def at(text: str) -> datetime.datetime:
    """`2026-11-29T23:58` in UTC+01:00 (the person's zone)."""
    zone = datetime.timezone(datetime.timedelta(hours=1))
    return datetime.datetime.fromisoformat(text).replace(tzinfo=zone)


def sequential_ids() -> Callable[[str], str]:
    """`cmp_1`, `req_1`, `turn_1`, ...: one counter per prefix."""
    counters: dict[str, itertools.count[int]] = {}

    def new_id(prefix: str) -> str:
        counter = counters.setdefault(prefix, itertools.count(1))
        return f"{prefix}_{next(counter)}"

    return new_id


def sources(clock: Clock, cwd: str = "/work/project") -> list[StateSource]:
    """Date, cwd, OS and shell: no git, so tests without a repository stay quiet."""
    return [DateSource(clock), WorkingDirectorySource(cwd), PlatformSource(ENVIRONMENT)]


@asynccontextmanager
async def open_main_branch(
    store: MemoryStore | None = None, *, cwd: str = "/work/project"
) -> AsyncIterator[tuple[Runtime, Branch]]:
    """A runtime over a memory store, with a new session's main branch."""
    async with open_runtime(store or MemoryStore(), clock=lambda: 1_764_000_000.0) as runtime:
        session = await runtime.create_session(cwd)
        yield runtime, session.main


def make_engine(
    branch: Branch,
    clock: Clock,
    *,
    workspace: Path | None = None,
    config_dir: Path | None = None,
    guide: GuideRegistry | None = None,
    settings: ContextSettings | None = None,
    state_sources: Sequence[StateSource] | None = None,
    new_id: Callable[[str], str] | None = None,
) -> ContextEngine:
    return ContextEngine(
        branch,
        guide=guide if guide is not None else default_guide_registry(),
        state_sources=state_sources if state_sources is not None else sources(clock),
        workspace=workspace,
        config_dir=config_dir,
        settings=settings,
        new_id=new_id or sequential_ids(),
    )


# --- wire formats ---------------------------------------------------------------------


class Wire(Protocol):
    """A provider's streaming format, as the fake server plays it."""

    name: str

    def provider(self, client: httpx.AsyncClient, base_url: str) -> ModelProvider: ...

    def text(self, text: str, *, input_tokens: int = 100, output_tokens: int = 10) -> Exchange: ...

    def tool_call(self, call: ToolCall, *, input_tokens: int = 100) -> Exchange: ...

    def context_exceeded(self) -> Exchange: ...


class OpenAIWire:
    name = "openai"

    def provider(self, client: httpx.AsyncClient, base_url: str) -> ModelProvider:
        return OpenAIProvider(client, base_url=base_url + "/v1", retry=NO_RETRY)

    def text(self, text: str, *, input_tokens: int = 100, output_tokens: int = 10) -> Exchange:
        usage = {"prompt_tokens": input_tokens, "completion_tokens": output_tokens}
        body = openai_stream(
            openai_chunk({"role": "assistant", "content": ""}),
            openai_chunk({"content": text}),
            openai_chunk({}, "stop"),
            openai_chunk(usage=usage),
        )
        return Exchange(chunks=[body])

    def tool_call(self, call: ToolCall, *, input_tokens: int = 100) -> Exchange:
        delta = {
            "tool_calls": [
                {
                    "index": 0,
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
            ]
        }
        usage = {"prompt_tokens": input_tokens, "completion_tokens": 20}
        body = openai_stream(
            openai_chunk({"role": "assistant", "content": None}),
            openai_chunk(delta),
            openai_chunk({}, "tool_calls"),
            openai_chunk(usage=usage),
        )
        return Exchange(chunks=[body])

    def context_exceeded(self) -> Exchange:
        error = {
            "message": "This model's maximum context length is 1000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
        return json_error(400, {"error": error})


def _anthropic_start(input_tokens: int) -> bytes:
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    return anthropic_event("message_start", message=message)


def _anthropic_end(stop_reason: str, output_tokens: int) -> bytes:
    return anthropic_event(
        "message_delta",
        delta={"stop_reason": stop_reason, "stop_sequence": None},
        usage={"output_tokens": output_tokens},
    ) + anthropic_event("message_stop")


class AnthropicWire:
    name = "anthropic"

    def provider(self, client: httpx.AsyncClient, base_url: str) -> ModelProvider:
        return AnthropicProvider(client, base_url=base_url, retry=NO_RETRY)

    def text(self, text: str, *, input_tokens: int = 100, output_tokens: int = 10) -> Exchange:
        body = anthropic_stream(
            _anthropic_start(input_tokens),
            anthropic_text_block(0, text),
            _anthropic_end("end_turn", output_tokens),
        )
        return Exchange(chunks=[body])

    def tool_call(self, call: ToolCall, *, input_tokens: int = 100) -> Exchange:
        start = {"type": "tool_use", "id": call.call_id, "name": call.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": call.arguments}
        body = anthropic_stream(
            _anthropic_start(input_tokens),
            anthropic_event("content_block_start", index=0, content_block=start),
            anthropic_event("content_block_delta", index=0, delta=delta),
            anthropic_event("content_block_stop", index=0),
            _anthropic_end("tool_use", 20),
        )
        return Exchange(chunks=[body])

    def context_exceeded(self) -> Exchange:
        error = {"type": "invalid_request_error", "message": "prompt is too long: 1200 tokens"}
        return json_error(400, {"type": "error", "error": error})


WIRES: dict[str, Wire] = {"openai": OpenAIWire(), "anthropic": AnthropicWire()}


# --- a minimal loop -------------------------------------------------------------------


@attrs.frozen
class TurnRecord:
    """What `drive_turn` did: the turn id and the request ids it recorded."""

    turn_id: TurnId
    request_ids: tuple[str, ...]


async def drive_turn(
    branch: Branch,
    engine: ContextEngine,
    provider: ModelProvider,
    text: str | None,
    *,
    new_id: Callable[[str], str],
    model: str = "test-model",
    tools: Sequence[ToolSpec] = (READ_FILE,),
    tool_output: Mapping[str, str] | None = None,
    content: list[ContentPart] | None = None,
) -> TurnRecord:
    """Run one turn like the agent loop: prepare, stream, record, run tools, repeat."""
    turn_id = TurnId(new_id("turn"))
    blocks = content if content is not None else [TextContent(text or "")]
    await engine.start_turn(turn_id)  # as the loop does: state first, then the person's words
    await branch.begin_turn(turn_id, blocks)
    request_ids: list[str] = []
    while True:
        prepared = await engine.prepare(
            turn_id=turn_id, model=model, provider=provider, tools=tools
        )
        request_id = new_id("req")
        request_ids.append(request_id)
        await branch.record_fact(
            ModelRequestStarted(request_id, turn_id, model, prepared.guide_version),
            producer=PRODUCER,
        )
        builder = ReplyBuilder()
        async with provider.stream(prepared.request) as events:
            async for event in events:
                builder.add(event)
        reply = builder.reply()
        facts: list[Payload] = []
        for part in reply.message.parts:
            if isinstance(part, Text):
                facts.append(ModelTextDelta(request_id, part.text))
            elif isinstance(part, ToolCall):
                arguments = json.loads(part.arguments)
                facts.append(
                    ToolCallRequested(request_id, CallId(part.call_id), part.name, arguments)
                )
        usage = reply.usage
        facts.append(
            ModelRequestFinished(
                request_id,
                str(reply.stop_reason),
                Usage(usage.input_tokens, usage.output_tokens) if usage else Usage(),
            )
        )
        await branch.append([EventDraft(fact, PRODUCER) for fact in facts])
        if usage is not None:
            engine.note_usage(usage.input_tokens, usage.output_tokens)
        if not reply.tool_calls:
            break
        outputs = tool_output or {}
        results = [
            ToolResultRecorded(
                CallId(call.call_id),
                request_id,
                [TextContent(outputs.get(call.name, f"{call.name} ran"))],
                False,
            )
            for call in reply.tool_calls
        ]
        await branch.append([EventDraft(result, PRODUCER) for result in results])
    await branch.end_turn(turn_id, "end_turn")
    return TurnRecord(turn_id, tuple(request_ids))
