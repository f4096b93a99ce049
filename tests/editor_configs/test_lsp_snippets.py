"""Every `acp-agent lsp` snippet (editor-configs/lsp/) starts this installed agent as a
language server, read by a real parser for its language.

Helix's TOML is read with `tomllib`, Sublime Text's and Kate's JSON with `json`; the
Neovim snippet runs in a Lua interpreter with a stand-in `vim.lsp`, the Vim one in Vim
with a stand-in vim-lsp on its runtime path, the Emacs one in Emacs (a stand-in
`eglot-server-programs` where eglot is not built in). A missing interpreter skips its
test, saying which. The command all of them name is then started once and answers an
LSP `initialize` as an editor expects.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.editor_configs.snippets import (
    CONFIGS,
    EDITOR_ENVIRONMENT,
    PLACEHOLDER_COMMAND,
    installed_script,
)

HERE = Path(__file__).resolve().parent
LSP_CONFIGS = CONFIGS / "lsp"
_RUN_TIMEOUT_S = 30.0
_LUA_INTERPRETERS = ("lua5.4", "lua5.3", "lua5.1", "luajit", "lua")


def _tool(names: tuple[str, ...], why: str) -> str:
    found = next(filter(None, map(shutil.which, names)), None)
    if found is None:
        pytest.skip(why)
    return found


def _run(command: list[str], snippet: str, **extra: str) -> str:
    done = subprocess.run(
        command,
        env={**EDITOR_ENVIRONMENT, "SNIPPET": str(LSP_CONFIGS / snippet), **extra},
        capture_output=True,
        text=True,
        timeout=_RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _helix() -> list[str]:
    settings = tomllib.loads((LSP_CONFIGS / "helix" / "languages.toml").read_text())
    server = settings["language-server"]["acp-agent"]
    assert any("acp-agent" in language["language-servers"] for language in settings["language"])
    return [server["command"], *server["args"]]


def _sublime() -> list[str]:
    settings = json.loads((LSP_CONFIGS / "sublime" / "LSP.sublime-settings").read_text())
    client = settings["clients"]["acp-agent"]
    assert client["enabled"] is True
    return list(client["command"])


def _kate() -> list[str]:
    settings = json.loads((LSP_CONFIGS / "kate" / "lspclient.json").read_text())
    return list(settings["servers"]["python"]["command"])


def _neovim() -> list[str]:
    lua = _tool(_LUA_INTERPRETERS, "no Lua interpreter (Debian: lua5.4): cannot run the snippet")
    name, *command = _run([lua, str(HERE / "capture_neovim_lsp.lua")], "neovim/acp-agent-lsp.lua")[
        :-1
    ].split("\n")
    assert name == "acp_agent"
    return command


def _vim(tmp: Path) -> list[str]:
    vim = _tool(("vim",), "Vim is not installed (Debian: vim-nox): cannot load the snippet")
    out = tmp / "vim-lsp.json"
    _run(
        [vim, "-Nu", "NONE", "-i", "NONE", "-e", "-s", "-S", str(HERE / "capture_vim_lsp.vim")],
        "vim/acp-agent.vim",
        OUT=str(out),
    )
    server = json.loads(out.read_text())
    assert server["name"] == "acp-agent"
    assert "python" in server["allowlist"]
    return list(server["cmd"])


def _emacs() -> list[str]:
    emacs = _tool(("emacs",), "Emacs is not installed (Debian: emacs-nox): cannot load it")
    printed = _run(
        [
            emacs,
            "--batch",
            "-Q",
            "-l",
            str(HERE / "capture_eglot.el"),
            "--eval",
            "(capture-eglot-print)",
        ],
        "emacs/acp-agent-eglot.el",
    )
    entry: dict[str, Any] = json.loads(printed)
    assert "python-mode" in entry["modes"]
    return list(entry["command"])


READERS: dict[str, Callable[[Path], list[str]]] = {
    "helix/languages.toml": lambda _: _helix(),
    "sublime/LSP.sublime-settings": lambda _: _sublime(),
    "kate/lspclient.json": lambda _: _kate(),
    "neovim/acp-agent-lsp.lua": lambda _: _neovim(),
    "vim/acp-agent.vim": _vim,
    "emacs/acp-agent-eglot.el": lambda _: _emacs(),
}


def test_every_lsp_snippet_has_a_reader() -> None:
    snippets = {path.relative_to(LSP_CONFIGS).as_posix() for path in LSP_CONFIGS.glob("*/*")}
    assert snippets == set(READERS)


@pytest.mark.parametrize("snippet", sorted(READERS))
def test_lsp_snippet_starts_the_placeholder_script_as_a_language_server(
    snippet: str, tmp_path: Path
) -> None:
    assert READERS[snippet](tmp_path) == [PLACEHOLDER_COMMAND, "lsp"]


def _framed(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_the_command_the_snippets_name_answers_initialize_as_a_language_server(
    tmp_path: Path,
) -> None:
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "ACP_AGENT_HOME": str(tmp_path / "home"),
        "ACP_AGENT_LSP": "0",
    }
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"processId": None, "rootUri": None, "capabilities": {}},
    }
    done = subprocess.run(
        [str(installed_script()), "lsp"],
        input=_framed(initialize)
        + _framed({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        + _framed({"jsonrpc": "2.0", "method": "exit"}),
        env=env,
        capture_output=True,
        timeout=_RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    header, _, rest = done.stdout.partition(b"\r\n\r\n")
    fields = dict(line.split(b": ", 1) for line in header.split(b"\r\n"))
    length = int(fields[b"Content-Length"])
    answer = json.loads(rest[:length])
    result = answer["result"]
    assert result["serverInfo"]["name"] == "acp-agent"
    assert "acp-agent.ask" in result["capabilities"]["executeCommandProvider"]["commands"]
    assert result["capabilities"]["codeActionProvider"]
