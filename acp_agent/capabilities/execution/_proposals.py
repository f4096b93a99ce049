"""A reply's tool calls as the loop records them: `ToolCallRequested` proposals.

Each call's arguments are parsed and bounded (text that is not a JSON object,
or one nested too deep, is kept raw with why: the executor answers it "not
run"), it is presented by the tool of the request's generation (title, kind,
locations: a replay shows it exactly without the tool), and its id is made
unique in the branch (providers reuse ids across replies).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from acp_agent.capabilities.execution._executor import INVALID_ARGUMENTS_KEY, INVALID_REASON_KEY
from acp_agent.capabilities.session import ToolGeneration
from acp_agent.core import CallId, ToolCallRequested
from acp_agent.models import ToolCall, ToolSpec
from acp_agent.toolkit import Location, ToolDefinition
from jsonbounds import TOO_DEEP, nesting_exceeds

__all__ = ("CallProposals", "tool_spec")

logger = logging.getLogger(__name__)


def tool_spec(definition: ToolDefinition) -> ToolSpec:
    """What the model is offered of a tool."""
    return ToolSpec(definition.name, definition.description, definition.input_schema)


class CallProposals:
    """Makes a branch's tool-call proposals; remembers the call ids already used."""

    def __init__(self) -> None:
        self._call_ids: set[str] = set()

    def seen(self, call_ids: Iterable[str]) -> None:
        """Ids recorded before (a rebuild): a new call never takes one of them."""
        self._call_ids.update(call_ids)

    def propose(
        self,
        request_id: str,
        call: ToolCall,
        generation: ToolGeneration,
        roots: Sequence[Path],
    ) -> ToolCallRequested:
        """The proposal of one call of request `request_id`'s reply."""
        call_id = self._unique(call.call_id)
        arguments = _arguments(call.arguments)
        title, kind = call.name, "other"
        locations: Sequence[Location] = ()
        tool = generation.tools.get(call.name)
        if tool is not None and INVALID_ARGUMENTS_KEY not in arguments:
            try:
                presentation = tool.present(arguments, roots)
            except Exception:
                logger.exception("tool %s could not present a call", call.name)
            else:
                title, kind = presentation.title, presentation.kind.value
                locations = presentation.locations
        elif tool is not None:
            kind = tool.definition.kind.value
        return ToolCallRequested(
            request_id, CallId(call_id), call.name, arguments, title, kind, locations
        )

    def _unique(self, proposed: str) -> str:
        call_id = proposed or "call"
        if call_id in self._call_ids:
            n = 2
            while f"{call_id}_{n}" in self._call_ids:
                n += 1
            call_id = f"{call_id}_{n}"
        self._call_ids.add(call_id)
        return call_id


def _arguments(text: str) -> dict[str, Any]:
    """A call's arguments as recorded: the JSON object, or the raw text and why it is not one."""
    try:
        arguments = json.loads(text) if text.strip() else {}
    except RecursionError:
        return {INVALID_ARGUMENTS_KEY: text, INVALID_REASON_KEY: f"the arguments are {TOO_DEEP}"}
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return {INVALID_ARGUMENTS_KEY: text}
    if nesting_exceeds(arguments):
        return {INVALID_ARGUMENTS_KEY: text, INVALID_REASON_KEY: f"the arguments are {TOO_DEEP}"}
    return arguments
