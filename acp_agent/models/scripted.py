"""A deterministic model that plays replies from a script file (tests, demos, benchmarks).

A script is a JSON object with a list of replies; each reply is a list of
steps played in order::

    {
      "replies": [
        [{"thought": "A greeting."}, {"text": "Hello"}, {"sleep_ms": 200}, {"text": ", world."}],
        [{"text": "The second prompt, and every later one, gets this."}]
      ]
    }

Reply i answers prompt i of a session (counting from 0); when the list runs
out, the last reply repeats. A step is an object with exactly one key:

- ``"text"``: a piece of the visible answer (an `agent_message_chunk` on ACP);
- ``"thought"``: a piece of reasoning (an `agent_thought_chunk`);
- ``"sleep_ms"``: a pause before the next step, in milliseconds: a slow
  model, and the place where a cancellation lands.

Unknown keys are errors, so a script written for a later version (tool
calls, stop reasons) fails loudly at start-up instead of playing half.
Without a script every prompt gets `DEFAULT_REPLY`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any, Final, TypeAlias

import anyio
import attrs

__all__ = (
    "DEFAULT_REPLY",
    "ModelOutput",
    "Script",
    "ScriptError",
    "ScriptedModel",
    "Sleep",
    "Step",
    "TextDelta",
    "ThoughtDelta",
    "load_script",
    "parse_script",
)

DEFAULT_REPLY: Final = (
    "No model provider is configured yet, so acp-agent cannot answer. "
    "Start it with --script FILE (or ACP_AGENT_SCRIPT) to play scripted replies."
)


@attrs.frozen
class TextDelta:
    """A piece of the visible answer."""

    text: str


@attrs.frozen
class ThoughtDelta:
    """A piece of the model's reasoning."""

    text: str


@attrs.frozen
class Sleep:
    """A pause between steps."""

    ms: int


#: What the model streams out.
ModelOutput: TypeAlias = TextDelta | ThoughtDelta
#: One step of a scripted reply.
Step: TypeAlias = TextDelta | ThoughtDelta | Sleep


class ScriptError(ValueError):
    """The script file is missing, not JSON, or not in the format above."""


@attrs.frozen
class Script:
    """The replies to play, in prompt order."""

    replies: tuple[tuple[Step, ...], ...] = attrs.field()

    @replies.validator
    def _at_least_one(self, _: Any, value: tuple[tuple[Step, ...], ...]) -> None:
        if not value:
            raise ScriptError("a script needs at least one reply")

    def reply_for(self, prompt_index: int) -> tuple[Step, ...]:
        """The reply to prompt `prompt_index` of a session; the last one repeats."""
        return self.replies[min(prompt_index, len(self.replies) - 1)]


def load_script(path: Path) -> Script:
    """Read and check the script at `path`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ScriptError(f"cannot read script {path}: {exc}") from exc
    try:
        return parse_script(data)
    except ScriptError as exc:
        raise ScriptError(f"{path}: {exc}") from None


def parse_script(data: Any) -> Script:
    """Check a decoded script and turn it into a `Script`."""
    if not isinstance(data, dict) or set(data) != {"replies"}:
        raise ScriptError('a script is an object with one key, "replies"')
    replies = data["replies"]
    if not isinstance(replies, list) or not replies:
        raise ScriptError('"replies" must be a non-empty list')
    return Script(tuple(_parse_reply(reply, f"replies[{i}]") for i, reply in enumerate(replies)))


def _parse_reply(reply: Any, where: str) -> tuple[Step, ...]:
    if not isinstance(reply, list):
        raise ScriptError(f"{where} must be a list of steps")
    return tuple(_parse_step(step, f"{where}[{i}]") for i, step in enumerate(reply))


def _parse_step(step: Any, where: str) -> Step:
    if not isinstance(step, dict) or len(step) != 1:
        raise ScriptError(
            f'{where} must be an object with one key: "text", "thought" or "sleep_ms"'
        )
    ((key, value),) = step.items()
    if key in ("text", "thought"):
        if not isinstance(value, str):
            raise ScriptError(f"{where}.{key} must be a string")
        return TextDelta(value) if key == "text" else ThoughtDelta(value)
    if key == "sleep_ms":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ScriptError(f"{where}.sleep_ms must be a non-negative integer")
        return Sleep(value)
    raise ScriptError(f'{where}: unknown step {key!r} (expected "text", "thought" or "sleep_ms")')


class ScriptedModel:
    """Plays a `Script`, or the default reply when there is none."""

    def __init__(self, script: Script | None = None):
        self._script = script

    async def stream_reply(self, prompt_index: int) -> AsyncGenerator[ModelOutput, None]:
        """Stream the reply to prompt `prompt_index` of a session, sleeping where told."""
        steps: Sequence[Step] = (
            self._script.reply_for(prompt_index)
            if self._script is not None
            else (TextDelta(DEFAULT_REPLY),)
        )
        for step in steps:
            if isinstance(step, Sleep):
                await anyio.sleep(step.ms / 1000)
            else:
                yield step
