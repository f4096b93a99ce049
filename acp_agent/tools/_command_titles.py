"""Titles that say what a shell command reads, lists or searches: "Read src/app.py:10-40".

`command_title(command)` recognises one plain command that only reads (no
pipe, chain, redirection, substitution or variable; no option that writes,
runs a program or waits): `cat`, `nl`, `head`, `tail`, `sed -n 'A,Bp'` read
files; `ls`, `tree` and `find` (tests only) list; `grep`, `egrep`, `fgrep`,
`rg` search. Anything else gets None and keeps its "Run `…`" title. Only the
title changes: the call is still a command (kind `execute`), asked about as one.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Final

__all__ = ("command_title",)

#: Characters that make a command line more than one plain command.
_SHELL_SYNTAX: Final = re.compile(r"[|&;<>()$`\\\n{}]")
#: The most of a pattern or a list of paths a title shows.
_PART_CHARS: Final = 40

_READERS: Final = frozenset({"cat", "nl"})
_SEARCHERS: Final = frozenset({"grep", "egrep", "fgrep", "rg"})
#: Options of the searchers that take the next word as their value.
_SEARCH_VALUES: Final = frozenset(
    {"-A", "-B", "-C", "-m", "-g", "-t", "-T", "-f", "--glob", "--type", "--max-count"}
)
#: Options that make a searcher run a program, read patterns from a file or wait.
_SEARCH_UNSAFE: Final = frozenset({"--pre", "--pre-glob", "-f", "--file", "--follow"})
#: `find` tests that only select; any other word (`-exec`, `-delete`, `-fprint`) is refused.
_FIND_TESTS: Final = frozenset(
    {"-name", "-iname", "-path", "-ipath", "-type", "-maxdepth", "-mindepth", "-newer"}
)
_FIND_FLAGS: Final = frozenset({"-print", "-L", "-H", "-P"})
_SED_PRINT: Final = re.compile(r"^(\d+)(?:,(\d+))?p$")


def command_title(command: str) -> str | None:
    """What `command` does, when it only reads, lists or searches; else None."""
    if _SHELL_SYNTAX.search(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words:
        return None
    program, arguments = words[0].rsplit("/", 1)[-1], words[1:]
    if program in _READERS:
        return _read(arguments)
    if program in ("head", "tail"):
        return _head_or_tail(program, arguments)
    if program == "sed":
        return _sed(arguments)
    if program in ("ls", "tree"):
        return _list(program, arguments)
    if program == "find":
        return _find(arguments)
    if program in _SEARCHERS:
        return _search(arguments)
    return None


def _read(arguments: Sequence[str]) -> str | None:
    files = [word for word in arguments if not word.startswith("-")]
    return f"Read {_paths(files)}" if files else None


def _head_or_tail(program: str, arguments: Sequence[str]) -> str | None:
    count: int | None = None
    files: list[str] = []
    words = iter(arguments)
    for word in words:
        if word in ("-n", "--lines"):
            value = next(words, "")
            if not value.isdigit():
                return None
            count = int(value)
        elif re.fullmatch(r"-n?\d+", word):
            count = int(word.lstrip("-n"))
        elif word.startswith("-"):
            return None  # -f waits for more; -c counts bytes: not a plain read
        else:
            files.append(word)
    if len(files) != 1:
        return _read(files) if files else None
    lines = 10 if count is None else count
    if program == "head":
        return f"Read {_short(files[0])}:1-{lines}"
    return f"Read the last {lines} lines of {_short(files[0])}"


def _sed(arguments: Sequence[str]) -> str | None:
    if len(arguments) != 3 or arguments[0] != "-n":
        return None
    printed = _SED_PRINT.match(arguments[1])
    if printed is None:
        return None  # any other script may write (`w`) or run (`e`)
    start, end = printed.group(1), printed.group(2) or printed.group(1)
    return f"Read {_short(arguments[2])}:{start}-{end}"


def _list(program: str, arguments: Sequence[str]) -> str | None:
    if program == "tree" and any(word.startswith("-o") for word in arguments):
        return None  # tree -o writes a file
    places = [word for word in arguments if not word.startswith("-")]
    return f"List {_paths(places) if places else '.'}"


def _find(arguments: Sequence[str]) -> str | None:
    places: list[str] = []
    name: str | None = None
    words = iter(arguments)
    for word in words:
        if word in _FIND_FLAGS:
            continue
        if word in _FIND_TESTS:
            value = next(words, None)
            if value is None:
                return None
            if word in ("-name", "-iname", "-path", "-ipath"):
                name = value
        elif word.startswith("-"):
            return None  # an action (-exec, -delete, -fprint, ...) or a test we do not know
        else:
            places.append(word)
    where = _paths(places) if places else "."
    return f"Find '{_short(name)}' in {where}" if name else f"List {where}"


def _search(arguments: Sequence[str]) -> str | None:
    pattern: str | None = None
    places: list[str] = []
    words = iter(arguments)
    for word in words:
        option = word.split("=", 1)[0]
        if option in _SEARCH_UNSAFE:
            return None
        if word in ("-e", "--regexp"):
            pattern = next(words, None)
            if pattern is None:
                return None
        elif word in _SEARCH_VALUES:
            if next(words, None) is None:
                return None
        elif word.startswith("-"):
            continue
        elif pattern is None:
            pattern = word
        else:
            places.append(word)
    if pattern is None:
        return None
    where = f" in {_paths(places)}" if places else ""
    return f"Search '{_short(pattern)}'{where}"


def _paths(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:2])
    if len(paths) > 2:
        shown += f" and {len(paths) - 2} more"
    return _short(shown)


def _short(text: str) -> str:
    return text if len(text) <= _PART_CHARS else text[: _PART_CHARS - 1] + "…"
