"""Finding things in the workspace: `list` a directory, `glob` for paths, `grep` for text.

All three skip what git ignores (`.gitignore` files, `.git/info/exclude`,
the `.git` directory) whether or not the workspace is a repository, and
never follow symlinks (see `_walk`). `grep` runs ripgrep when it is on PATH
and a Python search otherwise; both are set up to give the same results in
the same order (depth-first by name), with the same caps: files over 10 MiB
and binary files (a NUL byte) are skipped, hidden files are searched, and a
whitelist `glob` without `/` matches file names at any depth. Regexes are
ripgrep's syntax or Python's; their common ground (classes, groups,
alternation, `\\b`, `\\d`, `\\s`, `\\w`, anchors) works the same.

`raw_output`: list ``{"path", "entries": [{"path", "type"}], "truncated"}``;
glob ``{"path", "pattern", "files", "truncated"}``; grep ``{"path",
"pattern", "engine", "matches": [{"path", "line", "text"}] | "files",
"truncated"}``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import anyio
import attrs

from acp_agent.process_groups import process_groups
from acp_agent.toolkit import (
    Effect,
    Location,
    PermissionNeed,
    TextContent,
    ToolContext,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolPresentation,
    ToolResult,
    fenced,
)
from acp_agent.tools._args import optional_bool, optional_int, optional_str, require_str
from acp_agent.tools._common import short
from acp_agent.tools._process import kill_group
from acp_agent.tools._walk import glob_regex, walk
from acp_agent.tools._workspace import WorkspacePath, display_path, path_need, resolve_path
from acp_agent.values import Value

__all__ = (
    "GLOB_DEFINITION",
    "GREP_DEFINITION",
    "LIST_DEFINITION",
    "MAX_FILE_BYTES",
    "MAX_LINE_CHARS",
    "GlobTool",
    "GrepMatch",
    "GrepTool",
    "ListTool",
)

#: grep skips files larger than this (ripgrep `--max-filesize 10M`).
MAX_FILE_BYTES: Final = 10 * 1024 * 1024
#: Matched lines longer than this are truncated.
MAX_LINE_CHARS: Final = 300
_DEFAULT_GREP_RESULTS: Final = 100
_DEFAULT_PATHS: Final = 500
_MAX_RESULTS: Final = 2000

_PATH_PROPERTY: Final = {
    "type": "string",
    "description": "Directory to search (relative to the working directory, or absolute; "
    "default: the working directory).",
}


def _start(arguments: Mapping[str, Any], roots: Sequence[Path]) -> WorkspacePath:
    return resolve_path(arguments.get("path") or ".", roots)


def _walk_root(target: WorkspacePath) -> Path:
    """Whose `.gitignore` files apply from the top: the containing root, else the path."""
    return target.root if target.root is not None else target.path


def _shown(path: Path, roots: Sequence[Path]) -> str:
    return display_path(str(path), roots)


LIST_DEFINITION: Final = ToolDefinition(
    name="list",
    description="""\
List a directory's entries as an indented tree (directories end in `/`, symlinks show \
their target), `depth` levels down (default 1, at most 5). Entries git ignores and the \
.git directory are left out. At most 500 entries.""",
    input_schema={
        "type": "object",
        "properties": {
            "path": _PATH_PROPERTY,
            "depth": {"type": "integer", "minimum": 1, "maximum": 5},
        },
        "additionalProperties": False,
    },
    kind=ToolKind.SEARCH,
)


@attrs.frozen
class ListTool(Value):
    """Lists a directory, as git sees it."""

    @property
    def definition(self) -> ToolDefinition:
        return LIST_DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        name = display_path(arguments.get("path") or ".", roots)
        return ToolPresentation(f"List {name}", ToolKind.SEARCH)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        optional_int(arguments, "depth", minimum=1, maximum=5)
        return path_need(Effect.READ_ONLY, _start(arguments, roots))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        target = _start(arguments, context.roots)
        depth = optional_int(arguments, "depth", default=1, minimum=1, maximum=5)
        if not target.path.is_dir():
            raise ToolInputError(f"{target.display} is not a directory")

        def collect() -> tuple[list[tuple[int, str, str]], bool]:
            found: list[tuple[int, str, str]] = []
            for entry in walk(target.path, _walk_root(target), max_depth=depth):
                if len(found) == _DEFAULT_PATHS:
                    return found, True
                if entry.is_symlink:
                    label = f"{entry.path.name} -> {entry.path.readlink()}"
                    kind = "symlink"
                elif entry.is_dir:
                    label, kind = entry.path.name + "/", "directory"
                else:
                    label, kind = entry.path.name, "file"
                found.append((entry.depth, label, kind))
            return found, False

        found, truncated = await anyio.to_thread.run_sync(collect)
        lines = [f"{'  ' * (level - 1)}{label}" for level, label, _ in found]
        header = f"{target.display}/" if target.display != "." else "./"
        text = "\n".join([header, *("  " + line for line in lines)])
        if not found:
            text += "\n  (empty)"
        if truncated:
            text += f"\n[Only the first {_DEFAULT_PATHS} entries are listed; list a subdirectory.]"
        raw_entries: list[dict[str, str]] = []
        for level, label, kind in found:
            raw_entries.append({"name": label, "type": kind, "depth": str(level)})
        return ToolResult(
            (TextContent(fenced(text)),),
            text,
            raw_output={"path": str(target.path), "entries": raw_entries, "truncated": truncated},
            locations=(Location(str(target.path)),),
        )


GLOB_DEFINITION: Final = ToolDefinition(
    name="glob",
    description="""\
Find files whose path (relative to `path`, default the working directory) matches a \
glob: `*` and `?` within one directory level, `**` across levels, `{a,b}` and `[abc]`. \
E.g. `**/*.py` (any depth), `*.md` (top level only), `src/**/test_*.{ts,tsx}`. Files \
git ignores are skipped. Paths come sorted; at most `max_results` (default 500).""",
    input_schema={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "The glob."},
            "path": _PATH_PROPERTY,
            "max_results": {"type": "integer", "minimum": 1, "maximum": _MAX_RESULTS},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    kind=ToolKind.SEARCH,
)


@attrs.frozen
class GlobTool(Value):
    """Finds files by glob, as git sees the tree."""

    @property
    def definition(self) -> ToolDefinition:
        return GLOB_DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        pattern = arguments.get("pattern")
        name = display_path(arguments.get("path") or ".", roots)
        shown = f"'{short(pattern, 40)}'" if isinstance(pattern, str) else "files"
        where = "" if name == "." else f" in {name}"
        return ToolPresentation(f"Find {shown}{where}", ToolKind.SEARCH)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        require_str(arguments, "pattern")
        optional_int(arguments, "max_results", minimum=1, maximum=_MAX_RESULTS)
        return path_need(Effect.READ_ONLY, _start(arguments, roots))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        pattern = require_str(arguments, "pattern")
        limit = optional_int(
            arguments, "max_results", default=_DEFAULT_PATHS, minimum=1, maximum=_MAX_RESULTS
        )
        assert limit is not None
        target = _start(arguments, context.roots)
        if not target.path.is_dir():
            raise ToolInputError(f"{target.display} is not a directory")
        matcher = glob_regex(pattern)
        stop = threading.Event()

        def collect() -> tuple[list[Path], bool]:
            found: list[Path] = []
            for entry in walk(target.path, _walk_root(target), stop=stop):
                if entry.is_dir or not matcher.fullmatch(entry.relative):
                    continue
                if entry.is_symlink and entry.path.is_dir():
                    continue
                if len(found) == limit:
                    return found, True
                found.append(entry.path)
            return found, False

        try:
            found, truncated = await anyio.to_thread.run_sync(collect, abandon_on_cancel=True)
        finally:
            stop.set()
        shown = [_shown(path, context.roots) for path in found]
        if found:
            text = "\n".join(shown)
            if truncated:
                text += f"\n[Only the first {limit} paths are shown; narrow the pattern or path.]"
        else:
            text = f"No files match `{pattern}` in `{target.display}`."
        return ToolResult(
            (TextContent(fenced(text) if found else text),),
            text,
            raw_output={
                "path": str(target.path),
                "pattern": pattern,
                "files": [str(path) for path in found],
                "truncated": truncated,
            },
            locations=(Location(str(target.path)),),
        )


@attrs.frozen
class GrepMatch(Value):
    """A matched line (or, listing files, a file's first match)."""

    path: Path
    #: 1-based; None when only files are listed.
    line: int | None
    text: str


@attrs.frozen
class _Query(Value):
    pattern: str
    target: WorkspacePath
    glob: str | None
    ignore_case: bool
    files_only: bool
    limit: int


GREP_DEFINITION: Final = ToolDefinition(
    name="grep",
    description="""\
Search file contents for a regular expression, line by line (ripgrep syntax; keep to \
what Python's `re` also understands). Returns `path:line: text` for each matching line \
(or only the paths, with `output: "files"`), in path order. Searches `path` (a \
directory or one file; default the working directory) and skips files git ignores, \
binary files and files over 10 MiB. `glob` filters files: without `/` it matches file \
names at any depth (`*.py`), with `/` paths relative to `path` (`src/**/*.ts`). At most \
`max_results` results (default 100).""",
    input_schema={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "The regular expression."},
            "path": {
                "type": "string",
                "description": "Directory or file to search (default: the working directory).",
            },
            "glob": {"type": "string", "description": "Only search files matching this glob."},
            "case_insensitive": {"type": "boolean"},
            "output": {"type": "string", "enum": ["content", "files"]},
            "max_results": {"type": "integer", "minimum": 1, "maximum": _MAX_RESULTS},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    kind=ToolKind.SEARCH,
)


def _default_ripgrep() -> str | None:
    return shutil.which("rg")


def _truncated(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]}… [{len(text) - MAX_LINE_CHARS} more characters]"


@attrs.frozen
class GrepTool(Value):
    """Searches file contents; ripgrep when available (`ripgrep`), else Python, same results."""

    #: The ripgrep executable; None searches in Python. Defaults to `rg` on PATH.
    ripgrep: str | None = attrs.field(factory=_default_ripgrep)

    @property
    def definition(self) -> ToolDefinition:
        return GREP_DEFINITION

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        pattern = arguments.get("pattern")
        name = display_path(arguments.get("path") or ".", roots)
        shown = f"'{short(pattern, 40)}'" if isinstance(pattern, str) else "text"
        where = "" if name == "." else f" in {name}"
        return ToolPresentation(f"Search {shown}{where}", ToolKind.SEARCH)

    def _query(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> _Query:
        pattern = require_str(arguments, "pattern")
        output = optional_str(arguments, "output") or "content"
        if output not in ("content", "files"):
            raise ToolInputError('`output` must be "content" or "files"')
        limit = optional_int(
            arguments,
            "max_results",
            default=_DEFAULT_GREP_RESULTS,
            minimum=1,
            maximum=_MAX_RESULTS,
        )
        assert limit is not None
        return _Query(
            pattern=pattern,
            target=_start(arguments, roots),
            glob=optional_str(arguments, "glob") or None,
            ignore_case=optional_bool(arguments, "case_insensitive"),
            files_only=output == "files",
            limit=limit,
        )

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        return path_need(Effect.READ_ONLY, self._query(arguments, roots).target)

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        query = self._query(arguments, context.roots)
        if not query.target.path.exists():
            raise ToolInputError(f"{query.target.display} does not exist")
        engine: Literal["ripgrep", "python"]
        if self.ripgrep is not None:
            engine = "ripgrep"
            matches, truncated = await _ripgrep(self.ripgrep, query)
        else:
            engine = "python"
            matches, truncated = await _python_grep(query)
        return _grep_result(query, engine, matches, truncated, context.roots)


def _grep_result(
    query: _Query,
    engine: Literal["ripgrep", "python"],
    matches: list[GrepMatch],
    truncated: bool,
    roots: Sequence[Path],
) -> ToolResult:
    where = query.target.display
    raw: dict[str, Any] = {
        "path": str(query.target.path),
        "pattern": query.pattern,
        "engine": engine,
        "truncated": truncated,
    }
    if query.files_only:
        raw["files"] = [str(m.path) for m in matches]
        lines = [_shown(m.path, roots) for m in matches]
        noun = "files"
    else:
        raw["matches"] = [{"path": str(m.path), "line": m.line, "text": m.text} for m in matches]
        lines = [f"{_shown(m.path, roots)}:{m.line}: {_truncated(m.text)}" for m in matches]
        noun = "matches"
    if not matches:
        text = f"No matches for `{query.pattern}` in `{where}`."
        return ToolResult((TextContent(text),), text, raw_output=raw)
    body = "\n".join(lines)
    if truncated:
        body += (
            f"\n[Only the first {query.limit} {noun} are shown; there are more. Narrow the "
            f"pattern, path or glob, or raise max_results (at most {_MAX_RESULTS}).]"
        )
    locations: dict[str, Location] = {}
    for match in matches:
        if len(locations) == 20:
            break
        locations.setdefault(str(match.path), Location(str(match.path), match.line))
    return ToolResult(
        (TextContent(fenced(body)),),
        body,
        raw_output=raw,
        locations=tuple(locations.values()),
    )


def _ripgrep_command(executable: str, query: _Query) -> list[str]:
    command = [
        executable,
        "--no-config",
        "--sort",
        "path",
        "--hidden",
        "--no-require-git",
        "--no-ignore-dot",
        "--no-ignore-global",
        "--no-messages",
        "--max-filesize",
        "10M",
        "--glob",
        "!.git",
    ]
    if query.glob:
        command += ["--glob", query.glob]
    if query.ignore_case:
        command.append("--ignore-case")
    command += ["--files-with-matches", "--null"] if query.files_only else ["--json"]
    # Run from the searched directory, so globs with a `/` are relative to it.
    where = "." if query.target.path.is_dir() else query.target.path.name
    return [*command, "--regexp", query.pattern, "--", where]


def _json_text(field: Mapping[str, Any]) -> str:
    if "text" in field:
        return str(field["text"])
    return base64.b64decode(field.get("bytes", "")).decode("utf-8", "replace")


async def _ripgrep(executable: str, query: _Query) -> tuple[list[GrepMatch], bool]:
    target = query.target.path
    directory = target if target.is_dir() else target.parent
    # A group of its own, registered before it runs (ended with the agent if it dies).
    with process_groups().gate(_ripgrep_command(executable, query), cwd=directory) as gate:
        process = await anyio.open_process(
            gate.argv,
            cwd=directory,
            stdin=gate.stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        registration = gate.admit(process.pid)
    matches: list[GrepMatch] = []
    truncated = False
    errors = bytearray()
    separator = b"\0" if query.files_only else b"\n"
    try:
        async with anyio.create_task_group() as group:

            async def read_errors() -> None:
                assert process.stderr is not None
                async for chunk in process.stderr:
                    if len(errors) < 4096:
                        errors.extend(chunk)

            group.start_soon(read_errors)
            assert process.stdout is not None
            pending = b""
            async for chunk in process.stdout:
                pending += chunk
                *records, pending = pending.split(separator)
                for record in records:
                    match = _parse_ripgrep(record, query.files_only, directory)
                    if match is None:
                        continue
                    if len(matches) == query.limit:
                        truncated = True
                        break
                    matches.append(match)
                if truncated:
                    break
            if truncated:
                kill_group(process.pid)
            await process.wait()
    finally:
        with anyio.CancelScope(shield=True):
            kill_group(process.pid)
            await process.aclose()
            if registration is not None:
                registration.release()
    if process.returncode == 2 and not truncated and not matches:
        message = bytes(errors).decode("utf-8", "replace").strip()
        raise ToolInputError(f"ripgrep refused the search: {message}")
    return matches, truncated


def _parse_ripgrep(record: bytes, files_only: bool, directory: Path) -> GrepMatch | None:
    """A match from ripgrep's output; its paths are relative to `directory`."""
    if not record:
        return None
    if files_only:
        relative = record.decode("utf-8", "surrogateescape")
        return GrepMatch(Path(os.path.normpath(directory / relative)), None, "")
    event = json.loads(record)
    if event.get("type") != "match":
        return None
    data = event["data"]
    text = _json_text(data["lines"]).removesuffix("\n").removesuffix("\r")
    path = Path(os.path.normpath(directory / _json_text(data["path"])))
    return GrepMatch(path, int(data["line_number"]), text)


def _decode_for_search(data: bytes) -> str | None:
    """The text ripgrep would search, or None for a binary file."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-16-le" if data.startswith(b"\xff\xfe") else "utf-16-be"
        return data[2:].decode(codec, "replace")
    if b"\x00" in data:
        return None
    return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "surrogateescape")


async def _python_grep(query: _Query) -> tuple[list[GrepMatch], bool]:
    flags = re.IGNORECASE if query.ignore_case else 0
    try:
        regex = re.compile(query.pattern, flags)
    except re.error as error:
        raise ToolInputError(f"invalid regular expression: {error}") from None
    name_glob = query.glob is not None and "/" not in query.glob.strip("/")
    matcher = glob_regex(query.glob.lstrip("/")) if query.glob else None
    stop = threading.Event()
    target = query.target

    def files() -> list[Path]:
        if target.path.is_file():
            return [target.path]
        found = []
        for entry in walk(target.path, _walk_root(target), stop=stop):
            if entry.is_dir or entry.is_symlink:
                continue
            subject = entry.path.name if name_glob else entry.relative
            if matcher is not None and not matcher.fullmatch(subject):
                continue
            found.append(entry.path)
        return found

    def search() -> tuple[list[GrepMatch], bool]:
        matches: list[GrepMatch] = []
        for path in files():
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            text = _decode_for_search(data)
            if text is None:
                continue
            lines = text.split("\n")
            if text.endswith("\n"):
                lines.pop()
            for number, line in enumerate(lines, start=1):
                if stop.is_set():
                    return matches, False
                if not regex.search(line):
                    continue
                if len(matches) == query.limit:
                    return matches, True
                if query.files_only:
                    matches.append(GrepMatch(path, None, ""))
                    break
                shown = line.removesuffix("\r").encode("utf-8", "surrogateescape")
                matches.append(GrepMatch(path, number, shown.decode("utf-8", "replace")))
        return matches, False

    try:
        return await anyio.to_thread.run_sync(search, abandon_on_cancel=True)
    finally:
        stop.set()
