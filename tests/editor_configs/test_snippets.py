"""Every editor-config snippet starts this installed agent, with the model and key it says.

Each snippet is read by a real parser for its language (see `snippets`), and the agent
all of them name is started once, in the smallest environment any of these editors gives
it (avante passes PATH and the snippet's variables only), to answer as an editor expects.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.editor_configs.snippets import (
    CONFIGS,
    EDITOR_ENVIRONMENT,
    LAUNCH_READERS,
    MODEL,
    PLACEHOLDER_COMMAND,
    Launch,
    agent_shell_capture,
    codecompanion_adapter,
    installed_script,
    zed_server,
)
from tests.support.raw_agent import RawAgent

#: The JSON snippets carry a key to replace; the others pass the editor's own on.
_KEY_TO_REPLACE = {"ANTHROPIC_API_KEY": "your Anthropic API key"}
_EXPECTED_ENV = {
    "zed/settings.json": {"ACP_AGENT_MODEL": MODEL, **_KEY_TO_REPLACE},
    "jetbrains/acp.json": {"ACP_AGENT_MODEL": MODEL, **_KEY_TO_REPLACE},
    "neovim/codecompanion.lua": {"ACP_AGENT_MODEL": MODEL},
    "neovim/avante.lua": {
        "ACP_AGENT_MODEL": MODEL,
        "HOME": EDITOR_ENVIRONMENT["HOME"],
        "ANTHROPIC_API_KEY": EDITOR_ENVIRONMENT["ANTHROPIC_API_KEY"],
    },
    "emacs/acp-agent-shell.el": {"ACP_AGENT_MODEL": MODEL},
    "toad/toad.sh": {"ACP_AGENT_MODEL": MODEL},
    "acpx/acpx.sh": {"ACP_AGENT_MODEL": MODEL},
}
#: The authentication method the CodeCompanion snippet picks (CodeCompanion always sends one).
_CODECOMPANION_AUTH_METHOD = "model"
#: Put where a snippet names MODEL: the agent's own choice with an Anthropic key is MODEL
#: too, so only a model no default gives shows the snippet's variable is the one it reads.
_PROBE_MODEL = "anthropic/a-model-only-this-test-names"


def _installed(launch: Launch) -> Launch:
    """`launch` with the placeholder replaced by this virtual environment's script."""
    assert launch.command == PLACEHOLDER_COMMAND
    return replace(launch, command=str(installed_script()))


def _response(agent: RawAgent, request_id: int) -> dict[str, Any]:
    """The response to request `request_id`, past any notifications sent before it."""
    while True:
        message = agent.read_message()
        if message.get("id") == request_id and "method" not in message:
            return message


def _model_variables(launch: Launch) -> list[str]:
    """The variables by which `launch` names the model."""
    return sorted(name for name, value in launch.env.items() if value == MODEL)


def test_every_snippet_in_editor_configs_has_a_reader() -> None:
    # editor-configs/lsp/ holds the language-server snippets (test_lsp_snippets.py).
    snippets = {
        path.relative_to(CONFIGS).as_posix() for path in CONFIGS.glob("*/*") if path.is_file()
    }
    assert snippets == set(LAUNCH_READERS) == set(_EXPECTED_ENV)


@pytest.mark.parametrize("snippet", sorted(LAUNCH_READERS))
def test_snippet_starts_the_placeholder_script_with_the_model_and_a_key(snippet: str) -> None:
    launch = LAUNCH_READERS[snippet]()
    assert launch == Launch(PLACEHOLDER_COMMAND, (), _EXPECTED_ENV[snippet])


def test_zed_snippet_is_a_custom_agent_server() -> None:
    assert zed_server()["type"] == "custom"


def test_codecompanion_adapter_extends_goose_and_authenticates_with_any_configured_model() -> None:
    adapter = codecompanion_adapter()
    assert adapter["<extends>"] == "goose"
    assert adapter["opts"]["name"] == "acp_agent"
    assert adapter["opts"]["defaults"] == {"auth_method": _CODECOMPANION_AUTH_METHOD}


def test_agent_shell_snippet_gives_a_command_that_starts_its_config() -> None:
    captured = agent_shell_capture()
    assert captured["identifier"] == "acp-agent"
    assert captured["interactive"] is True


def test_placeholder_stands_for_the_script_this_venv_installed() -> None:
    script = installed_script()
    assert PLACEHOLDER_COMMAND.endswith("/.venv/bin/acp-agent")
    assert script.is_file(), f"no acp-agent script at {script}"
    assert os.access(script, os.X_OK), f"{script} is not executable"
    shebang, _, body = script.read_text().partition("\n")
    assert shebang.startswith("#!")
    assert Path(shebang[2:].strip()).resolve() == Path(sys.executable).resolve()
    assert "from acp_agent.cli import main" in body


def test_the_agent_every_snippet_starts_answers_and_opens_a_session_on_its_model(
    tmp_path: Path,
) -> None:
    launches = {}
    for snippet, read in LAUNCH_READERS.items():
        try:
            launches[snippet] = read()
        except pytest.skip.Exception:
            continue  # its own test says why; the others still count
    zed = launches["zed/settings.json"]
    for snippet, launch in launches.items():
        assert (launch.command, launch.args, _model_variables(launch)) == (
            zed.command,
            zed.args,
            _model_variables(zed),
        ), snippet

    launch = _installed(zed)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        **{name: _PROBE_MODEL if value == MODEL else value for name, value in launch.env.items()},
        "ACP_AGENT_HOME": str(tmp_path / "home"),
        "ACP_AGENT_LSP": "0",
    }
    agent = RawAgent([launch.command, *launch.args], env=env)
    try:
        agent.send_json(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        )
        initialized = _response(agent, 1)["result"]
        assert initialized["agentInfo"]["name"] == "acp-agent"
        assert _CODECOMPANION_AUTH_METHOD in [method["id"] for method in initialized["authMethods"]]

        agent.send_json(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "authenticate",
                "params": {"methodId": _CODECOMPANION_AUTH_METHOD},
            }
        )
        assert _response(agent, 2) == {"jsonrpc": "2.0", "id": 2, "result": {}}

        agent.send_json(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/new",
                "params": {"cwd": str(tmp_path), "mcpServers": []},
            }
        )
        session = _response(agent, 3)["result"]
        models = [option for option in session["configOptions"] if option["id"] == "model"]
        assert [option["currentValue"] for option in models] == [_PROBE_MODEL]
    finally:
        returncode = agent.stop()
    assert returncode == 0, agent.stderr.decode(errors="replace")
