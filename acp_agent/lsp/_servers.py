"""Which language servers acp-agent starts, and for which files.

Only servers that run no workspace code are started by default. Ruff's server
(`ruff server`, a dependency of the agent) reads Python source and its own
configuration (`pyproject.toml`, `ruff.toml`) and executes nothing from the
project: undefined names, syntax errors, lint. basedpyright (the `types` extra)
is a static analyser, it too only reads source, stubs and its configuration:
real type errors, and definitions, references, hover and symbols; it is used
when installed. Servers that run project code when they start (rust-analyzer
runs build scripts and proc macros, tsserver loads project plugins) are never
started because they are on PATH or because a project file names them.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from acp_agent.values import Value

__all__ = ("BASEDPYRIGHT", "RUFF", "ServerSpec", "ServerUnavailable", "default_servers")


class ServerUnavailable(Exception):
    """A server could not be started or initialized, or it died."""


@attrs.frozen
class ServerSpec(Value):
    """How to start one language server, and the files it is told about."""

    #: Its name in problems and messages (`ruff`).
    name: str
    command: tuple[str, ...]
    #: The file name suffixes it handles (`.py`).
    suffixes: tuple[str, ...]
    #: The LSP `languageId` of those files.
    language_id: str
    #: `initializationOptions` sent with `initialize`.
    options: dict[str, object] = attrs.field(factory=dict)
    #: What `workspace/configuration` answers, by section (others: null).
    settings: dict[str, object] = attrs.field(factory=dict)
    #: Whether it answers definition, references, hover and symbols (ruff does not).
    navigates: bool = False

    def handles(self, path: Path) -> bool:
        return path.suffix in self.suffixes


#: Ruff's language server, run by the interpreter the agent runs on (it is a dependency).
RUFF = ServerSpec(
    name="ruff",
    command=(sys.executable, "-m", "ruff", "server"),
    suffixes=(".py", ".pyi"),
    language_id="python",
)


#: basedpyright's language server, when the `types` extra is installed. Its own
#: default ("recommended") reports dozens of style warnings per file; "standard" is
#: pyright's: real errors. A project's `[tool.basedpyright]` still wins.
BASEDPYRIGHT = ServerSpec(
    name="basedpyright",
    command=(
        sys.executable,
        "-c",
        "from basedpyright.langserver import main; main()",
        "--stdio",
    ),
    suffixes=(".py", ".pyi"),
    language_id="python",
    # It asks for the `basedpyright` section and reads `analysis` in it.
    settings={"basedpyright": {"analysis": {"typeCheckingMode": "standard"}}},
    navigates=True,
)


def default_servers() -> Sequence[ServerSpec]:
    """The servers started without any configuration: the safe ones that are installed."""
    servers = [RUFF]
    if importlib.util.find_spec("basedpyright") is not None:
        servers.append(BASEDPYRIGHT)
    return tuple(servers)
