"""Tools that ask the session's language servers: definition, references, hover,
symbols and diagnostics.

A position is a 1-based `line` and either the `symbol` named on that line (its
first whole-word occurrence) or a 1-based `column`: the model knows lines from
`read`, rarely columns. Every place found is reported `path:line:column` with the
line's text, and goes into the call's `locations` so the editor can follow along.
The navigation tools are offered only when a server that navigates is installed
(basedpyright); `diagnostics` whenever code intelligence is on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio

from acp_agent.capabilities.context import GuideEntry
from acp_agent.lsp._problems import Problem, describe
from acp_agent.lsp._servers import ServerUnavailable
from acp_agent.lsp._service import CodeIntelligence, missing_notes
from acp_agent.toolkit import (
    Effect,
    Location,
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
from acp_agent.tools import WorkspacePath, path_need, present_path, resolve_path, walk

__all__ = (
    "DefinitionTool",
    "DiagnosticsTool",
    "HoverTool",
    "ReferencesTool",
    "SymbolsTool",
    "code_guide_entry",
    "code_tools",
)

#: The most places one call reports (the rest are counted).
MAX_PLACES: Final = 100
#: How long `diagnostics` waits for the servers' answers about one file.
DIAGNOSTICS_TIMEOUT_S: Final = 10.0
#: The most files `diagnostics` of the whole workspace checks, and how long it may take.
MAX_FILES: Final = 200
WORKSPACE_TIMEOUT_S: Final = 60.0

_PATH = {"type": "string", "description": "The file: relative to the working directory."}
_POSITION = {
    "path": _PATH,
    "line": {"type": "integer", "minimum": 1, "description": "The line, 1-based."},
    "symbol": {
        "type": "string",
        "description": "The name on that line to ask about (its first whole-word match).",
    },
    "column": {
        "type": "integer",
        "minimum": 1,
        "description": "Instead of `symbol`: the column, 1-based.",
    },
}


def _schema(properties: Mapping[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


def _position_definition(
    name: str, description: str, kind: ToolKind = ToolKind.SEARCH
) -> ToolDefinition:
    """A tool asking about one name: the file, the line, and the name or column."""
    return ToolDefinition(
        name=name,
        description=f"{description} Give the file, the line and the name on it.",
        input_schema=_schema(_POSITION, ["path", "line"]),
        kind=kind,
    )


def _unavailable(exc: Exception) -> ToolResult:
    message = f"Code intelligence is not available: {exc or 'the server did not answer'}"
    return ToolResult((TextContent(message),), message, is_error=True)


class _CodeTool:
    """What the code tools share: a path argument, read-only, asked of `intel`."""

    NAME: str
    VERB: str
    DEFINITION: ToolDefinition

    def __init__(self, intel: CodeIntelligence) -> None:
        self.intel = intel

    @property
    def definition(self) -> ToolDefinition:
        return self.DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        if arguments.get("path") is None:
            query = arguments.get("query")
            return ToolPresentation(f"{self.VERB} {query or 'the workspace'}", ToolKind.SEARCH)
        line = arguments.get("line") if isinstance(arguments.get("line"), int) else None
        name, locations = present_path(arguments.get("path"), roots, line=line)
        symbol = arguments.get("symbol")
        what = f"`{symbol}` in {name}" if isinstance(symbol, str) and symbol else name
        return ToolPresentation(f"{self.VERB} {what}", ToolKind.SEARCH, locations)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        if arguments.get("path") is None:
            return PermissionNeed(Effect.READ_ONLY, str(roots[0]) if roots else "")
        return path_need(Effect.READ_ONLY, resolve_path(arguments.get("path"), roots))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        raise NotImplementedError

    async def _source(self, arguments: Mapping[str, Any], context: ToolContext) -> tuple[Path, str]:
        target: WorkspacePath = resolve_path(arguments.get("path"), context.roots)
        if not target.inside:
            raise ToolInputError(f"{target.display} is outside the workspace")
        try:
            text = await anyio.Path(target.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ToolInputError(f"{target.display} cannot be read: {exc}") from exc
        return target.path, text


class _PositionTool(_CodeTool):
    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        path, text = await self._source(arguments, context)
        line, character = _position(arguments, text)
        try:
            server = await self.intel.navigator(path, text)
            return await self._ask(server, path, line, character)
        except (ServerUnavailable, TimeoutError) as exc:
            return _unavailable(exc)

    async def _ask(self, server: Any, path: Path, line: int, character: int) -> ToolResult:
        raise NotImplementedError

    async def _places(self, places: Sequence[Any], empty: str) -> ToolResult:
        if not places:
            return ToolResult((TextContent(empty),), empty)
        lines = await anyio.to_thread.run_sync(_place_lines, self.intel, places[:MAX_PLACES])
        if len(places) > MAX_PLACES:
            lines.append(f"... and {len(places) - MAX_PLACES} more")
        text = "\n".join(lines)
        locations = tuple(Location(p.path, p.line) for p in places[:MAX_PLACES])
        return ToolResult((TextContent(text),), text, locations=locations)


class DefinitionTool(_PositionTool):
    VERB = "Find the definition of"
    DEFINITION = _position_definition(
        "definition",
        "Where a name is defined (a function, class, variable, module), from the language server.",
    )

    async def _ask(self, server: Any, path: Path, line: int, character: int) -> ToolResult:
        return await self._places(
            await server.definition(path, line, character), "No definition found."
        )


class ReferencesTool(_PositionTool):
    VERB = "Find the references to"
    DEFINITION = _position_definition(
        "references",
        "Every place a name is used in the workspace, its definition included, from the "
        "language server.",
    )

    async def _ask(self, server: Any, path: Path, line: int, character: int) -> ToolResult:
        return await self._places(
            await server.references(path, line, character), "No references found."
        )


class HoverTool(_PositionTool):
    VERB = "Describe"
    DEFINITION = _position_definition(
        "hover",
        "What the language server knows of a name: its type or signature and its documentation.",
        ToolKind.READ,
    )

    async def _ask(self, server: Any, path: Path, line: int, character: int) -> ToolResult:
        text = await server.hover(path, line, character) or "Nothing is known about it."
        location = (Location(str(path), line + 1),)
        return ToolResult((TextContent(text),), text, locations=location)


class SymbolsTool(_CodeTool):
    VERB = "List the symbols of"
    DEFINITION = ToolDefinition(
        name="symbols",
        description=(
            "The symbols (classes, functions, variables) a file defines, with their lines; "
            "or, with `query` and no `path`, the symbols of the whole workspace whose "
            "names match it."
        ),
        input_schema=_schema(
            {"path": _PATH, "query": {"type": "string", "description": "A name to look for."}},
            [],
        ),
        kind=ToolKind.SEARCH,
    )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        query = arguments.get("query")
        try:
            if arguments.get("path") is not None:
                path, text = await self._source(arguments, context)
                server = await self.intel.navigator(path, text)
                symbols = await server.document_symbols(path)
            else:
                if not isinstance(query, str) or not query:
                    raise ToolInputError("give `path`, or `query` to search the workspace")
                # The server of the workspace is the one started for any of its files.
                anchors = await anyio.to_thread.run_sync(_files, self.intel, context.roots, 1)
                if not anchors:
                    raise ToolInputError("the workspace has no file a language server reads")
                anchor = anchors[0]
                text = await anyio.Path(anchor).read_text(encoding="utf-8")
                server = await self.intel.navigator(anchor, text)
                symbols = await server.workspace_symbols(query)
        except (ServerUnavailable, TimeoutError) as exc:
            return _unavailable(exc)
        if not symbols:
            return ToolResult((TextContent("No symbols found."),), "No symbols found.")
        lines = [
            f"{self.intel.shown(Path(s.path))}:{s.line}:{s.column}: {s.kind} {s.name}"
            + (f" (in {s.container})" if s.container else "")
            for s in symbols[:MAX_PLACES]
        ]
        if len(symbols) > MAX_PLACES:
            lines.append(f"... and {len(symbols) - MAX_PLACES} more")
        text = "\n".join(lines)
        locations = tuple(Location(s.path, s.line) for s in symbols[:MAX_PLACES])
        return ToolResult((TextContent(text),), text, locations=locations)


class DiagnosticsTool(_CodeTool):
    VERB = "Check"
    DEFINITION = ToolDefinition(
        name="diagnostics",
        description=(
            "The problems the language servers report now (errors, warnings: undefined "
            "names, syntax and type errors, lint), one per line: for a file, or without "
            f"`path` for the whole workspace (its first {MAX_FILES} files the servers read, "
            "as git would list them)."
        ),
        input_schema=_schema({"path": _PATH}, []),
        kind=ToolKind.READ,
    )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        if arguments.get("path") is None:
            return await self._workspace(context)
        path, text = await self._source(arguments, context)
        if not self.intel.handles(path):
            message = f"No language server reads {path.name}."
            return ToolResult((TextContent(message),), message)
        findings = await self.intel.problems_of(path, text, DIAGNOSTICS_TIMEOUT_S)
        problems = findings.problems
        shown = self.intel.shown(path)
        body = describe(problems, shown=shown) if problems else f"No problems in {shown}."
        body = "\n".join([body, *findings.notes()])
        locations = tuple(Location(str(path), p.line) for p in problems[:MAX_PLACES])
        return ToolResult((TextContent(body),), body, locations=locations or None)

    async def _workspace(self, context: ToolContext) -> ToolResult:
        files = await anyio.to_thread.run_sync(_files, self.intel, context.roots, MAX_FILES + 1)
        more = len(files) > MAX_FILES
        files = files[:MAX_FILES]
        deadline = anyio.current_time() + WORKSPACE_TIMEOUT_S
        problems: list[Problem] = []
        lines: list[str] = []
        unfinished: dict[str, None] = {}
        not_running: dict[str, None] = {}
        for path in files:
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                break
            try:
                text = await anyio.Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            findings = await self.intel.problems_of(
                path, text, min(remaining, DIAGNOSTICS_TIMEOUT_S)
            )
            problems += findings.problems
            if findings.problems:  # alike problems of two servers: one line
                lines += describe(findings.problems, shown=self.intel.shown(path)).split("\n")
            unfinished.update(dict.fromkeys(findings.unfinished))
            not_running.update(dict.fromkeys(findings.not_running))
        count = len(lines)
        if count > MAX_PLACES:
            lines[MAX_PLACES:] = [f"... and {count - MAX_PLACES} more"]
        checked = f"{len(files)} file(s) checked" + (f" (the first {MAX_FILES})" if more else "")
        summary = f"{checked}; {count} problem(s)."
        text = "\n".join([*lines, summary]) if lines else f"{checked}; no problems."
        text = "\n".join([text, *missing_notes(list(unfinished), list(not_running))])
        locations = tuple(Location(p.path, p.line) for p in problems[:MAX_PLACES])
        return ToolResult((TextContent(text),), text, locations=locations or None)


def code_guide_entry(intel: CodeIntelligence) -> GuideEntry:
    """How to read what the language servers say, and when the code tools answer."""
    navigation = (
        " `definition`, `references`, `hover` and `symbols` ask the type checker about a "
        "name (give the file, the line from `read`, and the name on that line): use them "
        "to find where something is defined or used before changing it, rather than "
        "searching text."
        if intel.navigates
        else ""
    )
    servers = ", ".join(spec.name for spec in intel.servers)
    return GuideEntry(
        "tools/code",
        "tools",
        order=70,
        text=f"""\
## Code intelligence

Language servers ({servers}) read the Python files your calls change. When a change \
introduces problems (an undefined name, a syntax or type error), the call's result ends \
with "New problems the language server reports after this change:", one per line \
(`path:line:column: severity [server code] message`); problems that were there before \
are not repeated. Fix what you introduced unless it is intended. A server that had not \
finished checking in time is named there: its problems may be missing. `diagnostics` lists \
a file's current problems at any time.{navigation} A server that stops or comes back is \
reported as `<notification source="lsp">`.""",
    )


def code_tools(intel: CodeIntelligence) -> tuple[Tool, ...]:
    """The tools `intel` supports: diagnostics always, navigation with a server for it."""
    tools: list[_CodeTool] = [DiagnosticsTool(intel)]
    if intel.navigates:
        tools += [
            DefinitionTool(intel),
            ReferencesTool(intel),
            HoverTool(intel),
            SymbolsTool(intel),
        ]
    return tuple(tools)


def _position(arguments: Mapping[str, Any], text: str) -> tuple[int, int]:
    """The 0-based (line, character) the arguments name in `text`."""
    line = arguments.get("line")
    if not isinstance(line, int) or isinstance(line, bool) or line < 1:
        raise ToolInputError("`line` is required: a line number, 1-based")
    lines = text.split("\n")
    if line > len(lines):
        raise ToolInputError(f"the file has {len(lines)} lines, not {line}")
    source = lines[line - 1]
    column = arguments.get("column")
    symbol = arguments.get("symbol")
    if isinstance(symbol, str) and symbol:
        found = re.search(rf"(?<![\w]){re.escape(symbol)}(?![\w])", source)
        if found is None:
            raise ToolInputError(f"`{symbol}` is not on line {line}: {source.strip()!r}")
        return line - 1, found.start()
    if isinstance(column, int) and not isinstance(column, bool) and column >= 1:
        return line - 1, min(column - 1, len(source))
    raise ToolInputError("give `symbol` (a name on the line) or `column`")


def _place_lines(intel: CodeIntelligence, places: Sequence[Any]) -> list[str]:
    """`path:line:column: source line` for each place, each file read once."""
    sources: dict[str, list[str]] = {}
    lines = []
    for place in places:
        if place.path not in sources:
            try:
                sources[place.path] = Path(place.path).read_text("utf-8").split("\n")
            except (OSError, UnicodeDecodeError):
                sources[place.path] = []
        source = sources[place.path]
        text = source[place.line - 1].strip() if 0 < place.line <= len(source) else ""
        shown = intel.shown(Path(place.path))
        lines.append(f"{shown}:{place.line}:{place.column}: {text}".rstrip())
    return lines


def _files(intel: CodeIntelligence, roots: Sequence[Path], limit: int) -> list[Path]:
    """Up to `limit` files of the workspace a server reads, as git would list them."""
    found: list[Path] = []
    for root in roots:
        for entry in walk(root, root):
            if not entry.is_dir and not entry.is_symlink and intel.handles(entry.path):
                found.append(entry.path)
                if len(found) >= limit:
                    return found
    return found
