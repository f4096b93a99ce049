"""A tool's result made fit to be recorded: valid text, JSON raw output.

`ToolResultRecorded.content` and `ToolCallProgressed.content` hold a result's
content parts as they are (the core's codec stores them), so a replay
(`session/load`) shows a call exactly, with no tool loaded. Tool and MCP
output is outside text: `with_valid_text` replaces every lone surrogate in a
result with U+FFFD before it is kept (`acp_agent.lone_surrogates`), and
`json_safe` keeps a raw output JSON cannot hold from breaking the batch.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import attrs

from acp_agent.content import valid_part
from acp_agent.lone_surrogates import replace_in_json, replace_lone_surrogates
from acp_agent.toolkit import ToolResult
from jsonbounds import TOO_DEEP, nesting_exceeds

__all__ = ("json_safe", "with_valid_text")

logger = logging.getLogger(__name__)


def json_safe(value: Any) -> Any:
    """`value` if JSON can hold it, else a short note (a tool's raw output must not break a
    batch, nor, nested too deep, every later update and replay that shows it)."""
    if nesting_exceeds(value):
        logger.warning("a tool's raw output is %s; recording a note instead", TOO_DEEP)
        return f"(the raw output is {TOO_DEEP}; not kept)"
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        logger.warning("a tool's raw output is not JSON; recording its repr")
        return repr(value)[:10_000]
    return value


def with_valid_text(result: ToolResult) -> ToolResult:
    """`result` with each lone surrogate in its text replaced by U+FFFD (itself if none)."""
    content = valid_part(result.content)
    model_text = replace_lone_surrogates(result.model_text)
    raw_output = replace_in_json(result.raw_output)
    if (
        content is result.content
        and model_text is result.model_text
        and raw_output is result.raw_output
    ):
        return result
    return attrs.evolve(result, content=content, model_text=model_text, raw_output=raw_output)
