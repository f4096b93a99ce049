"""The editor-config snippets, each read with a real parser for its language.

Each reader returns the `Launch` its editor or client would make of the snippet: the
command, its arguments, and the variables it adds to the agent's environment. JSON is read
with `json`; the Neovim snippets run in a Lua interpreter with stand-in plugins
(`capture_setup.lua`); the Emacs one is loaded by Emacs with stand-in agent-shell
functions (`capture_agent_shell.el`); the shell ones run in bash with stand-in clients
first on PATH (`record_client.py`). A reader whose interpreter is missing skips the test,
saying which one. The readers run each snippet in `EDITOR_ENVIRONMENT`, the editor's own
environment as far as a snippet can see it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

__all__ = (
    "CONFIGS",
    "EDITOR_ENVIRONMENT",
    "LAUNCH_READERS",
    "MODEL",
    "PLACEHOLDER_COMMAND",
    "Launch",
    "agent_shell_capture",
    "codecompanion_adapter",
    "installed_script",
    "zed_server",
)

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parent.parent / "editor-configs"

#: What every snippet names instead of the script's absolute path, which only the reader knows.
PLACEHOLDER_COMMAND = "/absolute/path/to/acp-agent/.venv/bin/acp-agent"
#: The model every snippet sets, the one the agent picks itself when ANTHROPIC_API_KEY is set.
MODEL = "anthropic/claude-sonnet-4-5"

#: The environment the snippets are run in: HOME, a locale and a key an editor would have.
#: (Without a UTF-8 locale the stand-in client's Python would add LC_CTYPE itself, PEP 538.)
EDITOR_ENVIRONMENT = {
    "PATH": os.environ.get("PATH", os.defpath),
    "HOME": "/nonexistent/editor-home",
    "LANG": "C.UTF-8",
    "ANTHROPIC_API_KEY": "key-from-the-editor-environment",
}

#: Variables bash sets in every child's environment, which no snippet asked for.
_SHELL_BOOKKEEPING = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
_RUN_TIMEOUT_S = 30.0
_LUA_INTERPRETERS = ("lua5.4", "lua5.3", "lua5.1", "luajit", "lua")


@dataclass(frozen=True)
class Launch:
    """How a snippet starts the agent: command, arguments, variables added to its environment."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


def installed_script() -> Path:
    """The `acp-agent` script of the virtual environment the tests run in."""
    return Path(sys.prefix) / "bin" / "acp-agent"


def zed_server() -> dict[str, Any]:
    """The agent server entry of the Zed snippet."""
    settings = json.loads((CONFIGS / "zed" / "settings.json").read_text())
    server = settings["agent_servers"]["acp-agent"]
    assert isinstance(server, dict)
    return server


def codecompanion_adapter() -> dict[str, Any]:
    """What the CodeCompanion snippet's adapter function returns, run as CodeCompanion would."""
    setup = _run_lua(CONFIGS / "neovim" / "codecompanion.lua")
    adapter = setup["adapters"]["acp"]["acp_agent"]["<function>"]
    assert isinstance(adapter, dict)
    return adapter


def agent_shell_capture() -> dict[str, Any]:
    """The agent-shell snippet's config and `acp-make-client` arguments, as Emacs builds them."""
    emacs = shutil.which("emacs")
    if emacs is None:
        pytest.skip(
            "Emacs is not installed (Debian: emacs-nox): cannot load the agent-shell snippet"
        )
    captured = _run_json(
        [emacs, "--batch", "-Q", "-l", str(HERE / "capture_agent_shell.el")],
        env={**EDITOR_ENVIRONMENT, "SNIPPET": str(CONFIGS / "emacs" / "acp-agent-shell.el")},
    )
    assert isinstance(captured, dict)
    return captured


def _read_zed() -> Launch:
    server = zed_server()
    return Launch(server["command"], tuple(server["args"]), server["env"])


def _read_jetbrains() -> Launch:
    settings = json.loads((CONFIGS / "jetbrains" / "acp.json").read_text())
    server = settings["agent_servers"]["acp-agent"]
    return Launch(server["command"], tuple(server["args"]), server["env"])


def _read_codecompanion() -> Launch:
    adapter = codecompanion_adapter()
    # CodeCompanion deep-merges the options into the goose adapter, and a list replaces
    # the list it meets (vim.tbl_deep_extend), so this is the whole command it runs.
    command = adapter["opts"]["commands"]["default"]
    return Launch(command[0], tuple(command[1:]), dict(adapter["opts"].get("env") or {}))


def _read_avante() -> Launch:
    setup = _run_lua(CONFIGS / "neovim" / "avante.lua")
    provider = setup["acp_providers"][setup["provider"]]
    return Launch(
        provider["command"],
        tuple(provider.get("args") or ()),
        dict(provider.get("env") or {}),
    )


def _read_agent_shell() -> Launch:
    captured = agent_shell_capture()
    env = dict(entry.partition("=")[::2] for entry in captured["environment"])
    return Launch(captured["command"], tuple(captured["args"]), env)


def _read_toad() -> Launch:
    argv, env = _run_client_snippet(CONFIGS / "toad" / "toad.sh", "toad")
    assert argv[:1] == ["acp"], f"not `toad acp COMMAND`: {argv}"
    assert len(argv) >= 2, f"no agent command after `toad acp`: {argv}"
    return _launch_of_command_line(argv[1], env)


def _read_acpx() -> Launch:
    argv, env = _run_client_snippet(CONFIGS / "acpx" / "acpx.sh", "acpx")
    assert "--agent" in argv[:-1], f"no `--agent COMMAND`: {argv}"
    assert "exec" in argv, f"not a one-shot `exec`: {argv}"
    return _launch_of_command_line(argv[argv.index("--agent") + 1], env)


#: Every snippet and the reader that says how it starts the agent.
LAUNCH_READERS: dict[str, Callable[[], Launch]] = {
    "zed/settings.json": _read_zed,
    "jetbrains/acp.json": _read_jetbrains,
    "neovim/codecompanion.lua": _read_codecompanion,
    "neovim/avante.lua": _read_avante,
    "emacs/acp-agent-shell.el": _read_agent_shell,
    "toad/toad.sh": _read_toad,
    "acpx/acpx.sh": _read_acpx,
}


def _launch_of_command_line(command_line: str, env: Mapping[str, str]) -> Launch:
    """A client's one-string agent command, split as a shell would (toad and acpx do)."""
    words = shlex.split(command_line)
    assert words, f"an empty agent command: {command_line!r}"
    return Launch(words[0], tuple(words[1:]), dict(env))


def _run_lua(snippet: Path) -> dict[str, Any]:
    """The table `snippet` hands its plugin's setup, running it with stand-in plugins."""
    lua = next(filter(None, map(shutil.which, _LUA_INTERPRETERS)), None)
    if lua is None:
        pytest.skip(
            f"no Lua interpreter ({', '.join(_LUA_INTERPRETERS)}): cannot run {snippet.name}"
        )
    setup = _run_json([lua, str(HERE / "capture_setup.lua"), str(snippet)], env=EDITOR_ENVIRONMENT)
    assert isinstance(setup, dict), setup
    return setup


def _run_client_snippet(snippet: Path, client: str) -> tuple[list[str], dict[str, str]]:
    """Run `snippet` in bash with a stand-in `client`: its argv and the variables added for it."""
    with tempfile.TemporaryDirectory() as scratch:
        bin_dir = Path(scratch) / "bin"
        bin_dir.mkdir()
        stand_in = bin_dir / client
        recorder = shlex.join([sys.executable, str(HERE / "record_client.py")])
        stand_in.write_text(f'#!/bin/sh\nexec {recorder} "$@"\n')
        stand_in.chmod(0o755)
        record = Path(scratch) / "record.json"
        env = {
            **EDITOR_ENVIRONMENT,
            "PATH": f"{bin_dir}{os.pathsep}{EDITOR_ENVIRONMENT['PATH']}",
            "RECORD_CLIENT_TO": str(record),
        }
        _run(["bash", str(snippet)], env=env)
        assert record.exists(), f"{snippet.name} never ran {client}"
        recorded = json.loads(record.read_text())
    added = {
        name: value
        for name, value in recorded["env"].items()
        if env.get(name) != value and name not in _SHELL_BOOKKEEPING
    }
    return recorded["argv"], added


def _run_json(command: Sequence[str], *, env: Mapping[str, str]) -> Any:
    return json.loads(_run(command, env=env))


def _run(command: Sequence[str], *, env: Mapping[str, str]) -> str:
    """Run `command`; its stdout, or a failure showing its stderr."""
    done = subprocess.run(
        list(command),
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=_RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"{command[0]} failed ({done.returncode}):\n{done.stderr}"
    return done.stdout
