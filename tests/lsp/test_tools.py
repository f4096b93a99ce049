"""The code tools on a small two-module project, answered by the real basedpyright."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from anyio.abc import TaskGroup

from acp_agent.lsp import BASEDPYRIGHT, RUFF, CodeIntelligence, default_servers
from acp_agent.lsp._tools import code_tools
from acp_agent.toolkit import NO_CLIENT, ContentPart, Location, ToolContext, ToolResult

pytestmark = pytest.mark.skipif(
    BASEDPYRIGHT not in default_servers(), reason="needs the `types` extra (basedpyright)"
)

UTIL = 'def greet(name: str) -> str:\n    """Say hello."""\n    return f"hi {name}"\n'
MAIN = 'from pkg.util import greet\n\nprint(greet("a"))\nprint(greet("b"))\n'


class _Progress:
    async def content(self, parts: Sequence[ContentPart]) -> None:
        pass

    async def terminal_output(self, terminal_id: str, data: str) -> None:
        pass


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "util.py").write_text(UTIL)
    (tmp_path / "main.py").write_text(MAIN)
    return tmp_path


@pytest.fixture
async def tools(project: Path, owner: TaskGroup) -> AsyncIterator[dict[str, Any]]:
    intel = CodeIntelligence(lambda: [project], start_soon=owner.start_soon, settle_s=20.0)
    try:
        yield {tool.definition.name: tool for tool in code_tools(intel)}
    finally:
        await intel.aclose()


async def run(tools: Mapping[str, Any], root: Path, name: str, **arguments: Any) -> ToolResult:
    context = ToolContext(
        session_id="s",
        branch_id="b",
        call_id="c",
        roots=(root,),
        client=NO_CLIENT,
        progress=_Progress(),
    )
    result: ToolResult = await tools[name].run(arguments, context)
    return result


async def test_definition_finds_the_function_in_the_other_module(
    project: Path, tools: dict[str, Any]
) -> None:
    result = await run(tools, project, "definition", path="main.py", line=3, symbol="greet")

    assert result.model_text == "pkg/util.py:1:5: def greet(name: str) -> str:"
    assert result.locations == (Location(str(project / "pkg" / "util.py"), 1),)


async def test_references_find_every_use_and_the_definition(
    project: Path, tools: dict[str, Any]
) -> None:
    result = await run(tools, project, "references", path="pkg/util.py", line=1, symbol="greet")

    places = sorted(line.split(": ")[0] for line in result.model_text.splitlines())
    assert places == ["main.py:1:22", "main.py:3:7", "main.py:4:7", "pkg/util.py:1:5"]
    assert len(result.locations or ()) == 4


async def test_hover_gives_the_signature_and_the_docstring(
    project: Path, tools: dict[str, Any]
) -> None:
    result = await run(tools, project, "hover", path="main.py", line=4, column=7)

    assert "def greet(name: str) -> str" in result.model_text
    assert "Say hello." in result.model_text


async def test_symbols_of_a_file_and_of_the_workspace(project: Path, tools: dict[str, Any]) -> None:
    in_file = await run(tools, project, "symbols", path="pkg/util.py")
    in_workspace = await run(tools, project, "symbols", query="greet")

    assert in_file.model_text.splitlines()[0] == "pkg/util.py:1:5: function greet"
    assert "pkg/util.py:1:5: function greet" in in_workspace.model_text


async def test_diagnostics_of_a_file_from_every_server(
    project: Path, tools: dict[str, Any]
) -> None:
    (project / "main.py").write_text("from pkg.util import greet\n\ngreet(1)\nprint(nope)\n")

    result = await run(tools, project, "diagnostics", path="main.py")

    assert "main.py:3:7: error [basedpyright reportArgumentType]" in result.model_text
    assert "main.py:4:7: error [ruff F821] Undefined name `nope`" in result.model_text


async def test_a_name_not_on_the_line_is_an_input_error(
    project: Path, tools: dict[str, Any]
) -> None:
    from acp_agent.toolkit import ToolInputError

    with pytest.raises(ToolInputError, match="`grete` is not on line 3"):
        await run(tools, project, "definition", path="main.py", line=3, symbol="grete")


async def test_without_a_navigating_server_only_diagnostics_is_offered(
    project: Path, owner: TaskGroup
) -> None:
    intel = CodeIntelligence(lambda: [project], start_soon=owner.start_soon, servers=[RUFF])

    assert [tool.definition.name for tool in code_tools(intel)] == ["diagnostics"]


async def test_diagnostics_of_the_whole_workspace(project: Path, tools: dict[str, Any]) -> None:
    (project / "main.py").write_text("from pkg.util import greet\n\nprint(nope)\n")
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()
    (project / "build" / "generated.py").write_text("print(ignored_by_git)\n")

    result = await run(tools, project, "diagnostics")

    assert "main.py:3:7: error [ruff F821] Undefined name `nope`" in result.model_text
    assert "ignored_by_git" not in result.model_text
    assert result.model_text.splitlines()[-1].startswith("3 file(s) checked;")
