"""Walking the workspace as git sees it: `.gitignore`d paths and `.git` skipped.

Rules come from every `.gitignore` between the workspace root and each
directory walked (deeper files override shallower ones, `!` re-includes, an
ignored directory is not entered) and from `.git/info/exclude` of a
repository root; they apply whether or not the directory is a git
repository. Hidden files are included; `.git` never is, nor a directory the
caller prunes (`prune`). Symlinks are
reported but never followed (so a walk cannot leave the workspace). Entries
come depth-first, each directory's entries sorted by name, which is also
the order of ripgrep's `--sort path`.

Glob patterns (`glob_regex`): `*` and `?` stay within one path segment,
`**` spans segments (`**/` also matches none), `[...]` and `{a,b}` work as
in shells.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from acp_agent.values import Value

if TYPE_CHECKING:
    import pathspec

__all__ = ("Entry", "IgnoreRules", "glob_regex", "walk")


@attrs.frozen
class _Rules(Value):
    base: Path
    spec: pathspec.GitIgnoreSpec

    def without_matches(self, directories: list[Path]) -> _Rules:
        """These rules less every pattern that matches one of `directories`."""
        relative = [
            d.relative_to(self.base).as_posix() + "/"
            for d in directories
            if d != self.base and d.is_relative_to(self.base)
        ]
        kept = [
            pattern
            for pattern in self.spec.patterns
            if not any(pattern.match_file(path) is not None for path in relative)
        ]
        if len(kept) == len(self.spec.patterns):
            return self
        return _Rules(self.base, type(self.spec)(kept))


def _load(base: Path, file: Path) -> _Rules | None:
    try:
        lines = file.read_text("utf-8", "replace").splitlines()
    except OSError:
        return None
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    import pathspec  # ~20 ms with its regex backends: paid by the first walk, not by session/new

    return _Rules(base, pathspec.GitIgnoreSpec.from_lines(lines))


@attrs.frozen
class IgnoreRules(Value):
    """The ignore rules in effect in one directory (shallowest first)."""

    rules: tuple[_Rules, ...] = ()

    def entering(self, directory: Path) -> IgnoreRules:
        """The rules for `directory`: these plus its own `.gitignore` (and git excludes)."""
        added: list[_Rules] = []
        exclude = directory / ".git" / "info" / "exclude"
        if exclude.is_file() and (found := _load(directory, exclude)):
            added.append(found)
        gitignore = directory / ".gitignore"
        if gitignore.is_file() and (found := _load(directory, gitignore)):
            added.append(found)
        return IgnoreRules(self.rules + tuple(added)) if added else self

    def ignores(self, path: Path, is_dir: bool) -> bool:
        """Whether `path` is ignored: the deepest rule that matches it decides."""
        verdict: bool | None = None
        for rule in self.rules:
            try:
                relative = path.relative_to(rule.base).as_posix()
            except ValueError:
                continue
            result = rule.spec.check_file(relative + "/" if is_dir else relative)
            if result.include is not None:
                verdict = result.include
        return bool(verdict)

    @classmethod
    def for_directory(cls, directory: Path, root: Path) -> IgnoreRules:
        """The rules for walking inside `directory`, read from `root` down to it.

        A directory asked for explicitly is walked even if ignored (as ripgrep
        does): patterns that match it or a directory above it are dropped, so
        only what they say about its descendants themselves still counts.
        """
        rules = cls()
        chain = [d for d in [directory, *directory.parents] if d.is_relative_to(root)]
        for step in reversed(chain):
            rules = rules.entering(step)
        ancestors = [d for d in chain if d != root]
        return IgnoreRules(tuple(rule.without_matches(ancestors) for rule in rules.rules))


@attrs.frozen
class Entry(Value):
    """A path found by a walk."""

    path: Path
    #: Relative to the walk's start, with `/` separators.
    relative: str
    is_dir: bool
    is_symlink: bool
    depth: int


def walk(
    start: Path,
    root: Path,
    *,
    max_depth: int | None = None,
    stop: threading.Event | None = None,
    prune: Callable[[Path], bool] | None = None,
) -> Iterator[Entry]:
    """Every path under directory `start` that git would not ignore, depth-first by name.

    `root` is the workspace root whose `.gitignore` files apply from the top.
    Stops early when `stop` is set. A directory `prune` says yes to is left out
    with all it holds.
    """
    rules = IgnoreRules.for_directory(start, root)
    yield from _walk(start, start, rules, 1, max_depth, stop, prune)


def _walk(
    directory: Path,
    start: Path,
    rules: IgnoreRules,
    depth: int,
    max_depth: int | None,
    stop: threading.Event | None,
    prune: Callable[[Path], bool] | None = None,
) -> Iterator[Entry]:
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda item: item.name)
    except OSError:
        return
    for item in entries:
        if stop is not None and stop.is_set():
            return
        if item.name == ".git":
            continue
        path = Path(item.path)
        is_symlink = item.is_symlink()
        is_dir = not is_symlink and item.is_dir(follow_symlinks=False)
        if rules.ignores(path, is_dir) or (is_dir and prune is not None and prune(path)):
            continue
        yield Entry(path, path.relative_to(start).as_posix(), is_dir, is_symlink, depth)
        if is_dir and (max_depth is None or depth < max_depth):
            inner = rules.entering(path)
            yield from _walk(path, start, inner, depth + 1, max_depth, stop, prune)


def _class(body: str) -> str:
    if body.startswith("!"):
        body = "^" + body[1:]
    return "[" + body.replace("\\", "\\\\") + "]"


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := pattern.find("]", i + 2)) != -1:
            out.append(_class(pattern[i + 1 : end]))
            i = end + 1
        elif c == "{" and (end := pattern.find("}", i)) != -1:
            alternatives = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex that matches a whole `/`-separated relative path against glob `pattern`."""
    return re.compile(_translate(pattern.removeprefix("./")), re.DOTALL)
