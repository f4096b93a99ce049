"""The set of built-in tools: names, kinds, schemas, and presentations that never fail."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from acp_agent.toolkit import Tool, ToolInputError, ToolKind
from acp_agent.tools import builtin_tools

TOOLS = builtin_tools()
ROOTS = (Path("/work/ws"),)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def test_every_tool_kind_is_covered_with_unique_provider_safe_names() -> None:
    names = [tool.definition.name for tool in TOOLS]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) for name in names)
    kinds = {tool.definition.kind for tool in TOOLS}
    assert kinds == {
        ToolKind.READ, ToolKind.EDIT, ToolKind.DELETE, ToolKind.MOVE, ToolKind.SEARCH,
        ToolKind.EXECUTE, ToolKind.THINK, ToolKind.FETCH,
    }  # fmt: skip
    assert all(isinstance(tool, Tool) for tool in TOOLS)


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.definition.name)
def test_each_schema_is_valid_json_schema_for_an_object(tool: Tool) -> None:
    schema = tool.definition.input_schema
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert tool.definition.description


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.definition.name)
@settings(deadline=None)  # resolving paths touches the file system; a busy machine is slow
@given(
    arguments=st.dictionaries(
        st.sampled_from(["path", "command", "pattern", "url", "entries", "offset", "source"]),
        json_values,
    )
)
def test_present_never_fails_and_permission_fails_only_with_input_errors(
    tool: Tool, arguments: dict[str, Any]
) -> None:
    presentation = tool.present(arguments, ROOTS)
    assert presentation.kind is tool.definition.kind
    assert presentation.title
    with contextlib.suppress(ToolInputError):
        tool.permission(arguments, ROOTS)
