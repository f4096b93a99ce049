"""The person's `[sandbox]` settings, from their own `config.toml`.

Only the person's file is read, never a workspace's: a cloned repository must
not widen the sandbox its own commands run in.

    [sandbox]
    writable = ["~/.cache/bazel", "/srv/shared-cache"]   # writable besides the roots
    hidden = ["~/work/secrets", "~/.config/tokens.json"] # never readable, besides the defaults
    readable = ["~/.npmrc"]                              # default hidden places shown after all
    tool_caches = true                                   # the default tool caches writable
    hidden_env = ["GITHUB_TOKEN"]                        # variables commands do not get

Paths are absolute or start with `~/`; variables are names. A malformed entry is
logged, kept in `problems` (for `doctor`) and left out; the rest still applies.
"""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from acp_agent.values import Value

__all__ = ("SandboxSettings", "load_sandbox_settings")

logger = logging.getLogger(__name__)

_KEYS: Final = frozenset({"writable", "hidden", "readable", "tool_caches", "hidden_env"})
#: An environment variable's name.
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen
class SandboxSettings(Value):
    """`[sandbox]` as the person wrote it (paths unexpanded)."""

    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    #: Places of `DEFAULT_HIDDEN` the person wants readable after all.
    readable: tuple[str, ...] = ()
    #: Whether `DEFAULT_TOOL_CACHES` are writable.
    tool_caches: bool = True
    #: Environment variables commands do not get, besides `DEFAULT_HIDDEN_ENV`.
    hidden_env: tuple[str, ...] = ()
    #: What was left out, and why (one line each).
    problems: tuple[str, ...] = ()


def load_sandbox_settings(config_file: Path | None) -> SandboxSettings:
    """`[sandbox]` of `config_file`; the defaults without a file or a table."""
    if config_file is None or not config_file.is_file():
        return SandboxSettings()
    try:
        document = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problem = f"{config_file} could not be read for [sandbox]: {exc}"
        logger.warning("%s", problem)
        return SandboxSettings(problems=(problem,))
    table = document.get("sandbox", {})
    if not isinstance(table, Mapping):
        return _with_problems(SandboxSettings(), ["[sandbox] must be a table; ignored"])
    problems: list[str] = []
    writable = _paths(table, "writable", problems)
    hidden = _paths(table, "hidden", problems)
    readable = _paths(table, "readable", problems)
    tool_caches = table.get("tool_caches", True)
    if not isinstance(tool_caches, bool):
        problems.append("[sandbox] tool_caches must be true or false; the default (true) applies")
        tool_caches = True
    hidden_env = _names(table, "hidden_env", problems)
    for key in sorted(set(table) - _KEYS):
        problems.append(f"[sandbox] {key} is not a setting; ignored")
    settings = SandboxSettings(writable, hidden, readable, tool_caches, hidden_env)
    return _with_problems(settings, problems)


def _names(table: Mapping[str, Any], key: str, problems: list[str]) -> tuple[str, ...]:
    """`table[key]`: a list of environment variable names; anything else becomes a problem."""
    value = table.get(key, [])
    if not isinstance(value, list):
        problems.append(f"[sandbox] {key} must be a list of variable names; ignored")
        return ()
    kept = []
    for entry in value:
        if isinstance(entry, str) and _NAME.fullmatch(entry):
            kept.append(entry)
        else:
            problems.append(f"[sandbox] {key}: {entry!r} is not a variable name; ignored")
    return tuple(kept)


def _paths(table: Mapping[str, Any], key: str, problems: list[str]) -> tuple[str, ...]:
    """`table[key]`: a list of absolute or `~/` paths; anything else becomes a problem."""
    value = table.get(key, [])
    if not isinstance(value, list):
        problems.append(f"[sandbox] {key} must be a list of paths; ignored")
        return ()
    kept = []
    for entry in value:
        if isinstance(entry, str) and (
            entry == "~" or entry.startswith("~/") or Path(entry).is_absolute()
        ):
            kept.append(entry)
        else:
            problems.append(f"[sandbox] {key}: {entry!r} is not an absolute or ~/ path; ignored")
    return tuple(kept)


def _with_problems(settings: SandboxSettings, problems: list[str]) -> SandboxSettings:
    for problem in problems:
        logger.warning("config.toml: %s", problem)
    return attrs.evolve(settings, problems=tuple(problems))
