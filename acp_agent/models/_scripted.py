"""A deterministic model provider that plays replies from a script (tests, demos, benchmarks).

A script is a JSON object with a list of replies; each reply is a list of
steps played in order::

    {
      "replies": [
        [{"thought": "A greeting."}, {"text": "Hello"}, {"sleep_ms": 200}, {"text": ", world."}],
        [{"text": "Let me look."},
         {"tool_call": {"name": "read", "arguments": {"path": "README.md"}}},
         {"tool_call": {"name": "shell", "arguments": {"command": "ls"}, "id": "call_ls"}}],
        [{"text": "Done."}]
      ]
    }

Reply i answers model request i of a session, counting from 0: a prompt's
first request, and one more for each round of tool results the agent sends
back within its turn. When the list runs out, the last reply repeats. A
session loaded after a restart continues where its recorded requests left off.
A request says which it is (`ModelRequest.origin`: its line of work, and how
many requests that line made before), so the provider keeps no count.

A step is an object with one key (an `error` step may add `"message"`):

- ``"text"``: a piece of the visible answer (an `agent_message_chunk` on ACP);
- ``"thought"``: a piece of reasoning (an `agent_thought_chunk`);
- ``"sleep_ms"``: a pause before the next step, in milliseconds: a slow
  model, and the place where a cancellation lands;
- ``"tool_call"``: ``{"name": ..., "arguments": {...}, "id": ...}`` proposes a
  tool call; `arguments` defaults to ``{}`` (a string is sent as raw argument
  text, to test arguments that are not JSON) and `id` to ``call_<request>_<n>``.
  Several in one reply are a parallel batch; a reply with tool calls stops with
  `tool_use`, and the agent's next request (with their results) takes the next
  reply;
- ``"usage"``: ``{"input_tokens": n, "output_tokens": n, "cache_read_tokens": n,
  "cache_write_tokens": n}`` (each optional, default 0) is the usage the reply
  reports; without one a reply reports a deterministic estimate (about four
  characters per token of the request and of the reply);
- ``"stop"``: the reply's stop reason, one of `end_turn`, `tool_use`,
  `max_tokens`, `refusal`; it must be the last step (default: `tool_use` when
  the reply has tool calls, else `end_turn`);
- ``"error"``: the provider fails here, with the error named (see `ERRORS`):
  `rate_limited`, `overloaded`, `context_window`, `authentication`, `quota`,
  `model_not_found`, `timeout`, `connect`, `invalid_response` or
  `stream_broken`. It must be the last step. Like a real provider, a failure
  after the reply has started is `StreamBroken` (the steps before it are a
  partial reply); `stream_broken` itself needs a step before it.

A request for a summary of the conversation (the context engine compacting
history: its last message is a ``<compaction-request>``) is answered with
`SUMMARY` and takes no reply, so compaction never shifts which reply answers
which request.

Branches (lines of work the model starts with its `branch` tool) play
replies of their own, so a script can drive main and its children
deterministically. An optional top-level ``"branches"`` is a list of objects
``{"replies": [...], "title": "..."}`` (`title` optional): the branch whose
title matches plays that entry; any other plays the entry at its place in
the order branches are created in the session (the first child created
plays ``branches[0]``, and so on; past the end, the last entry). A branch's
requests count from 0 on their own. Without ``"branches"``, a branch plays
``"replies"`` as the main line does::

    {
      "replies": [[{"tool_call": {"name": "branch", "arguments": {"task": "Read the tests"}}}],
                  [{"text": "Started it."}]],
      "branches": [{"title": "tests", "replies": [[{"text": "The tests pass."}]]}]
    }

Unknown keys are errors, so a script written for a later version fails
loudly at start-up instead of playing half. An optional top-level
``"context_window"`` (tokens, default `DEFAULT_CONTEXT_WINDOW`) is what the
agent reports as the window size.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping
from pathlib import Path
from typing import Any, Final, TypeAlias

import anyio
import attrs

from acp_agent.models._errors import (
    AuthenticationFailed,
    ContextWindowExceeded,
    ModelNotFound,
    ProviderConnectError,
    ProviderError,
    ProviderOverloaded,
    ProviderResponseInvalid,
    ProviderTimeout,
    QuotaExceeded,
    RateLimited,
    StreamBroken,
)
from acp_agent.models._events import (
    ModelEvent,
    ReasoningDelta,
    ResponseEnded,
    StopReason,
    ToolCallArgumentsDelta,
    ToolCallEnded,
    ToolCallStarted,
    UsageReported,
)
from acp_agent.models._events import TextDelta as ModelTextDelta
from acp_agent.models._provider import ModelStream
from acp_agent.models._request import ModelRequest, RequestOrigin, Text, ToolCall, ToolResult
from acp_agent.models._source import SCRIPTED_PROVIDER
from acp_agent.values import Value

__all__ = (
    "DEFAULT_CONTEXT_WINDOW",
    "ERRORS",
    "SCRIPTED_PROVIDER",
    "SUMMARY",
    "BranchScript",
    "Fail",
    "Script",
    "ScriptError",
    "ScriptedProvider",
    "Sleep",
    "Step",
    "Stop",
    "TextDelta",
    "ThoughtDelta",
    "ToolCallStep",
    "UsageStep",
    "load_script",
    "parse_script",
)

#: The context window a script reports unless it names one.
DEFAULT_CONTEXT_WINDOW: Final = 200_000
#: What a scripted model answers when asked to summarise the conversation.
SUMMARY: Final = "A scripted conversation; nothing to summarise."
#: How a summary request's last message starts (see `acp_agent.capabilities.context`).
_SUMMARY_REQUEST: Final = "<compaction-request"
#: About this many characters make a token in the usage estimate.
_CHARS_PER_TOKEN: Final = 4


@attrs.frozen
class TextDelta(Value):
    """A piece of the visible answer."""

    text: str


@attrs.frozen
class ThoughtDelta(Value):
    """A piece of the model's reasoning."""

    text: str


@attrs.frozen
class Sleep(Value):
    """A pause between steps."""

    ms: int


@attrs.frozen
class ToolCallStep(Value):
    """A proposed tool call; `arguments` is the JSON text sent, `call_id` None for a default."""

    name: str
    arguments: str
    call_id: str | None = None


@attrs.frozen
class UsageStep(Value):
    """The usage the reply reports."""

    usage: UsageReported


@attrs.frozen
class Stop(Value):
    """How the reply ends."""

    reason: StopReason


@attrs.frozen
class Fail(Value):
    """The provider fails with the error named `kind` (a key of `ERRORS`)."""

    kind: str
    message: str | None = None


#: One step of a scripted reply.
Step: TypeAlias = TextDelta | ThoughtDelta | Sleep | ToolCallStep | UsageStep | Stop | Fail


def _status(cls: type[Any], status: int | None, code: str) -> Callable[[str], ProviderError]:
    def make(message: str) -> ProviderError:
        error: ProviderError = cls(
            provider=SCRIPTED_PROVIDER, status=status, provider_message=message, error_code=code
        )
        return error

    return make


def _plain(cls: type[ProviderError]) -> Callable[[str], ProviderError]:
    return lambda message: cls(f"{SCRIPTED_PROVIDER}: {message}", provider=SCRIPTED_PROVIDER)


#: The errors a script can raise, by name, and the `ProviderError` each becomes.
ERRORS: Final[Mapping[str, Callable[[str], ProviderError]]] = {
    "rate_limited": _status(RateLimited, 429, "rate_limited"),
    "overloaded": _status(ProviderOverloaded, 529, "overloaded"),
    "context_window": _status(ContextWindowExceeded, 400, "context_length_exceeded"),
    "authentication": _status(AuthenticationFailed, 401, "invalid_api_key"),
    "quota": _status(QuotaExceeded, 429, "insufficient_quota"),
    "model_not_found": _status(ModelNotFound, 404, "model_not_found"),
    "timeout": _plain(ProviderTimeout),
    "connect": _plain(ProviderConnectError),
    "invalid_response": _plain(ProviderResponseInvalid),
    "stream_broken": _plain(ProviderError),  # raised as StreamBroken, see _play
}
_STOPS: Final = {reason.value: reason for reason in StopReason}
_STEP_KEYS: Final = ("text", "thought", "sleep_ms", "tool_call", "usage", "stop", "error")
_SCRIPT_KEYS: Final = frozenset({"replies", "context_window", "branches"})
_BRANCH_KEYS: Final = frozenset({"replies", "title"})
_TOOL_CALL_KEYS: Final = frozenset({"name", "arguments", "id"})
_USAGE_KEYS: Final = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


class ScriptError(ValueError):
    """The script file is missing, not JSON, or not in the format above."""


@attrs.frozen
class BranchScript(Value):
    """The replies one branch plays (see the module docstring)."""

    replies: tuple[tuple[Step, ...], ...]
    title: str | None = None


@attrs.frozen
class Script(Value):
    """The replies to play, in request order, and the context window to report."""

    replies: tuple[tuple[Step, ...], ...] = attrs.field()
    context_window: int = DEFAULT_CONTEXT_WINDOW
    #: What the script is called (its file's stem): the model is `scripted/<name>`.
    name: str = "script"
    #: What branches play, by title or by their order of creation.
    branches: tuple[BranchScript, ...] = ()

    def for_line(self, origin: RequestOrigin | None) -> Script:
        """The script the line of work a request comes from plays: this one for main
        (or a request that does not say), a branch's entry for a branch."""
        if origin is None or origin.branch is None or not self.branches:
            return self
        chosen = next((b for b in self.branches if b.title and b.title == origin.title), None)
        if chosen is None:
            chosen = self.branches[min(origin.branch, len(self.branches) - 1)]
        return attrs.evolve(self, replies=chosen.replies, branches=())

    @replies.validator
    def _at_least_one(self, _: Any, value: tuple[tuple[Step, ...], ...]) -> None:
        if not value:
            raise ScriptError("a script needs at least one reply")

    @property
    def model_id(self) -> str:
        """The model name sessions use to play this script."""
        return f"{SCRIPTED_PROVIDER}/{self.name}"

    def reply_for(self, request_index: int) -> tuple[Step, ...]:
        """The reply to request `request_index` of a session; the last one repeats."""
        return self.replies[min(request_index, len(self.replies) - 1)]


def load_script(path: Path) -> Script:
    """Read and check the script at `path`; it is named after the file's stem."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ScriptError(f"cannot read script {path}: {exc}") from exc
    try:
        return parse_script(data, name=path.stem or "script")
    except ScriptError as exc:
        raise ScriptError(f"{path}: {exc}") from None


def parse_script(data: Any, *, name: str = "script") -> Script:
    """Check a decoded script and turn it into a `Script`."""
    if not isinstance(data, dict) or "replies" not in data or set(data) - _SCRIPT_KEYS:
        raise ScriptError(
            'a script is an object with "replies" (and optional "context_window", "branches")'
        )
    replies = data["replies"]
    if not isinstance(replies, list) or not replies:
        raise ScriptError('"replies" must be a non-empty list')
    window = data.get("context_window", DEFAULT_CONTEXT_WINDOW)
    if not _is_count(window) or window == 0:
        raise ScriptError('"context_window" must be a positive integer')
    parsed = tuple(_parse_reply(reply, f"replies[{i}]") for i, reply in enumerate(replies))
    branches = data.get("branches", [])
    if not isinstance(branches, list):
        raise ScriptError('"branches" must be a list of {"replies": [...], "title": ...}')
    return Script(parsed, window, name, tuple(_parse_branch(b, i) for i, b in enumerate(branches)))


def _parse_branch(branch: Any, index: int) -> BranchScript:
    where = f"branches[{index}]"
    if not isinstance(branch, dict) or "replies" not in branch or set(branch) - _BRANCH_KEYS:
        raise ScriptError(f'{where} must be an object with "replies" and an optional "title"')
    replies, title = branch["replies"], branch.get("title")
    if not isinstance(replies, list) or not replies:
        raise ScriptError(f"{where}.replies must be a non-empty list")
    if title is not None and (not isinstance(title, str) or not title):
        raise ScriptError(f"{where}.title must be a non-empty string")
    parsed = tuple(_parse_reply(r, f"{where}.replies[{i}]") for i, r in enumerate(replies))
    return BranchScript(parsed, title)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _parse_reply(reply: Any, where: str) -> tuple[Step, ...]:
    if not isinstance(reply, list):
        raise ScriptError(f"{where} must be a list of steps")
    steps = tuple(_parse_step(step, f"{where}[{i}]") for i, step in enumerate(reply))
    for i, step in enumerate(steps[:-1]):
        if isinstance(step, Stop | Fail):
            key = "stop" if isinstance(step, Stop) else "error"
            raise ScriptError(f'{where}[{i}]: a "{key}" step must be the last of its reply')
    broken = steps and isinstance(steps[-1], Fail) and steps[-1].kind == "stream_broken"
    if broken and not any(isinstance(s, TextDelta | ThoughtDelta | ToolCallStep) for s in steps):
        raise ScriptError(f'{where}: "stream_broken" needs a text, thought or tool call before')
    return steps


def _parse_step(step: Any, where: str) -> Step:
    if not isinstance(step, dict) or not step:
        raise ScriptError(f"{where} must be an object with one key: {_keys_text()}")
    keys = set(step)
    if keys == {"error", "message"}:
        return _parse_error(step["error"], step["message"], where)
    if len(step) != 1:
        raise ScriptError(f"{where} must be an object with one key: {_keys_text()}")
    ((key, value),) = step.items()
    if key in ("text", "thought"):
        if not isinstance(value, str):
            raise ScriptError(f"{where}.{key} must be a string")
        return TextDelta(value) if key == "text" else ThoughtDelta(value)
    if key == "sleep_ms":
        if not _is_count(value):
            raise ScriptError(f"{where}.sleep_ms must be a non-negative integer")
        return Sleep(value)
    if key == "tool_call":
        return _parse_tool_call(value, f"{where}.tool_call")
    if key == "usage":
        if not isinstance(value, dict) or set(value) - set(_USAGE_KEYS):
            raise ScriptError(f"{where}.usage must be an object with keys {', '.join(_USAGE_KEYS)}")
        if not all(_is_count(count) for count in value.values()):
            raise ScriptError(f"{where}.usage counts must be non-negative integers")
        return UsageStep(UsageReported(**{"input_tokens": 0, "output_tokens": 0, **value}))
    if key == "stop":
        if value not in _STOPS:
            raise ScriptError(f"{where}.stop must be one of {', '.join(_STOPS)}")
        return Stop(_STOPS[value])
    if key == "error":
        return _parse_error(value, None, where)
    raise ScriptError(f"{where}: unknown step {key!r} (expected {_keys_text()})")


def _keys_text() -> str:
    return ", ".join(f'"{key}"' for key in _STEP_KEYS)


def _parse_tool_call(value: Any, where: str) -> ToolCallStep:
    if not isinstance(value, dict) or "name" not in value or set(value) - _TOOL_CALL_KEYS:
        raise ScriptError(f'{where} must be an object with "name" and optional "arguments", "id"')
    name, arguments, call_id = value["name"], value.get("arguments", {}), value.get("id")
    if not isinstance(name, str) or not name:
        raise ScriptError(f"{where}.name must be a non-empty string")
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    elif not isinstance(arguments, str):
        raise ScriptError(f"{where}.arguments must be an object (or raw text)")
    if call_id is not None and (not isinstance(call_id, str) or not call_id):
        raise ScriptError(f"{where}.id must be a non-empty string")
    return ToolCallStep(name, arguments, call_id)


def _parse_error(kind: Any, message: Any, where: str) -> Fail:
    if kind not in ERRORS:
        raise ScriptError(f"{where}.error must be one of {', '.join(ERRORS)}")
    if message is not None and not isinstance(message, str):
        raise ScriptError(f"{where}.message must be a string")
    return Fail(kind, message)


class ScriptedProvider:
    """Plays a `Script` as a `ModelProvider`: request i of a line of work gets reply i.

    Which line asks and how many requests it made before, a request says itself
    (`ModelRequest.origin`), so one provider plays every line of every session,
    and a loaded session goes on where it stopped. A request that does not say
    is taken as main's next one, counted here from 0.
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        self._unsaid = 0

    @property
    def name(self) -> str:
        return SCRIPTED_PROVIDER

    def stream(self, request: ModelRequest) -> ModelStream:
        if _asks_for_summary(request):
            return ModelStream(self._summarise(request))
        origin = request.origin
        if origin is None:
            index = self._unsaid
            self._unsaid += 1
        else:
            index = origin.earlier_requests
        steps = self.script.for_line(origin).reply_for(index)
        return ModelStream(self._play(index, steps, request))

    async def _summarise(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        yield ModelTextDelta(SUMMARY)
        yield UsageReported(_estimate(_request_chars(request)), _estimate(len(SUMMARY)))
        yield ResponseEnded(StopReason.END_TURN, "end_turn")

    async def _play(
        self, index: int, steps: tuple[Step, ...], request: ModelRequest
    ) -> AsyncGenerator[ModelEvent, None]:
        sent = 0
        output_chars = 0
        calls = 0
        usage: UsageReported | None = None
        stop: StopReason | None = None
        for step in steps:
            if isinstance(step, Sleep):
                await anyio.sleep(step.ms / 1000)
            elif isinstance(step, TextDelta | ThoughtDelta):
                sent += 1
                output_chars += len(step.text)
                yield (
                    ModelTextDelta(step.text)
                    if isinstance(step, TextDelta)
                    else ReasoningDelta(step.text)
                )
            elif isinstance(step, ToolCallStep):
                call_id = step.call_id or f"call_{index}_{calls}"
                output_chars += len(step.name) + len(step.arguments)
                yield ToolCallStarted(calls, call_id, step.name)
                yield ToolCallArgumentsDelta(calls, step.arguments)
                yield ToolCallEnded(calls, call_id, step.name, step.arguments)
                sent += 3
                calls += 1
            elif isinstance(step, UsageStep):
                usage = step.usage
            elif isinstance(step, Stop):
                stop = step.reason
            else:
                raise _failure(step, sent)
        yield usage or UsageReported(
            input_tokens=_estimate(_request_chars(request)),
            output_tokens=_estimate(output_chars),
        )
        if stop is None:
            stop = StopReason.TOOL_USE if calls else StopReason.END_TURN
        yield ResponseEnded(stop, provider_stop_reason=stop.value)


def _failure(step: Fail, events_received: int) -> ProviderError:
    error = ERRORS[step.kind](step.message or f"scripted {step.kind.replace('_', ' ')}")
    if events_received == 0 and step.kind != "stream_broken":
        return error
    broken = StreamBroken(
        provider=SCRIPTED_PROVIDER,
        events_received=events_received,
        reason=step.message or step.kind.replace("_", " "),
    )
    broken.__cause__ = error
    return broken


def _asks_for_summary(request: ModelRequest) -> bool:
    if not request.messages or request.messages[-1].role != "user":
        return False
    texts = [part for part in request.messages[-1].parts if isinstance(part, Text)]
    return bool(texts) and texts[-1].text.lstrip().startswith(_SUMMARY_REQUEST)


def _estimate(chars: int) -> int:
    return (chars + _CHARS_PER_TOKEN - 1) // _CHARS_PER_TOKEN


def _request_chars(request: ModelRequest) -> int:
    chars = len(request.guide)
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, Text):
                chars += len(part.text)
            elif isinstance(part, ToolCall):
                chars += len(part.name) + len(part.arguments)
            elif isinstance(part, ToolResult):
                chars += len(part.content)
    return chars
