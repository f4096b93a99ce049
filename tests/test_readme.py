"""The README's set-up commands and examples, and the docs' examples, stay true.

README.md and docs/*.md mark what these tests read with `<!-- readme-check: NAME -->`
comments, each right above a fenced code block; a name is used once across them all.
"""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import subprocess
import sys
import time
import tomllib
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acp_agent.models import RequestOrigin, StopReason, UsageReported, parse_script
from acp_agent.models._scripted import (
    Fail,
    Sleep,
    Stop,
    TextDelta,
    ThoughtDelta,
    ToolCallStep,
    UsageStep,
)
from tests.editor_configs.snippets import PLACEHOLDER_COMMAND

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CI_RUN = ROOT / ".ci" / "run"
PYPROJECT = ROOT / "pyproject.toml"
ZED_SETTINGS = ROOT / "editor-configs" / "zed" / "settings.json"
SCHEMA = ROOT / "protocol" / "schema" / "schema.json"

RESPONSE_TIMEOUT_S = 10.0
EXIT_TIMEOUT_S = 10.0


def checked_documents() -> list[Path]:
    """The files that may hold `readme-check` blocks: the README and the docs pages."""
    return [README, *sorted(DOCS.glob("*.md"))]


def readme_block(name: str) -> tuple[str, str]:
    """The (language, body) of the fenced block right after `<!-- readme-check: NAME -->`."""
    marker = f"<!-- readme-check: {name} -->"
    holders = [(path, path.read_text()) for path in checked_documents()]
    found = [(path, text) for path, text in holders if marker in text]
    names = [str(path.relative_to(ROOT)) for path, _ in found]
    assert len(found) == 1, f"{marker!r} must be in one of README.md and docs/*.md, not {names}"
    [(path, text)] = found
    where = path.relative_to(ROOT)
    assert text.count(marker) == 1, f"{where} must contain {marker!r} exactly once"
    after = text.split(marker, 1)[1]
    match = re.match(r"\s*```(\w*)\n(.*?)\n```\n", after, re.DOTALL)
    assert match, f"no fenced code block right after {marker!r} in {where}"
    return match.group(1), match.group(2)


def readme_command(name: str) -> str:
    language, body = readme_block(name)
    assert language == "sh", f"the {name} block must be a sh block, not {language!r}"
    lines = body.splitlines()
    assert len(lines) == 1, f"the {name} block must hold one command line, not {lines!r}"
    return lines[0]


def ci_test_command() -> str:
    """The value of TEST_COMMAND in .ci/run, after shell unquoting."""
    assignments = re.findall(r"^TEST_COMMAND=(.+)$", CI_RUN.read_text(), re.MULTILINE)
    assert len(assignments) == 1, ".ci/run must assign TEST_COMMAND exactly once"
    words = shlex.split(assignments[0])
    assert len(words) == 1, f"TEST_COMMAND must be one quoted string, not {words!r}"
    return words[0]


def pyproject() -> dict[str, Any]:
    return tomllib.loads(PYPROJECT.read_text())


@pytest.mark.parametrize(
    "name", ["start-command", "initialize-line", "test-command", "zed-settings", "first-prompt"]
)
def test_what_a_newcomer_runs_first_is_in_the_readme_itself(name: str) -> None:
    assert f"<!-- readme-check: {name} -->" in README.read_text()


def test_zed_settings_file_is_the_snippet_shown_in_the_readme() -> None:
    language, body = readme_block("zed-settings")
    assert language == "json"
    assert json.loads(ZED_SETTINGS.read_text()) == json.loads(body)


def test_editor_snippets_name_the_script_the_start_command_runs() -> None:
    # tests/editor_configs checks each snippet runs PLACEHOLDER_COMMAND, and that it is
    # this venv's script; here, that it is the one the README's start command runs.
    start_script = readme_command("start-command").split(" && ")[-1]
    assert PLACEHOLDER_COMMAND.endswith("/" + start_script)


def test_readme_test_command_is_the_one_ci_runs() -> None:
    assert ci_test_command() == readme_command("test-command")
    executing = [
        line
        for line in CI_RUN.read_text().splitlines()
        if '"$TEST_COMMAND"' in line and not line.lstrip().startswith("#")
    ]
    assert executing == ['step tests bash -c "$TEST_COMMAND"']


def test_readme_commands_install_into_the_same_venv_with_extras_that_exist() -> None:
    start = readme_command("start-command").split(" && ")
    tests = readme_command("test-command").split(" && ")
    # Quiet installs, so the agent's answer is not lost under pip's output.
    assert start[:2] == ["python3 -m venv .venv", ".venv/bin/pip install -q -e ."]
    assert tests[:2] == ["python3 -m venv .venv", ".venv/bin/pip install -q -e '.[dev]'"]
    assert "dev" in pyproject()["project"]["optional-dependencies"]
    # The main suite, then tests_lsp apart: pytest-asyncio (pytest-lsp's) and anyio's
    # plugin cannot share a session; its own options leave anyio's to marked tests.
    assert tests[2:] == [
        ".venv/bin/python -m pytest",
        ".venv/bin/python -m pytest tests_lsp -o addopts='--strict-markers -ra' "
        "-o anyio_mode=strict -o asyncio_default_fixture_loop_scope=function",
    ]
    assert "tests_lsp" not in pyproject()["tool"]["pytest"]["ini_options"]["testpaths"]


def test_start_command_runs_a_console_script_declared_in_pyproject() -> None:
    start_script = readme_command("start-command").split(" && ")[-1]
    prefix = ".venv/bin/"
    assert start_script.startswith(prefix)
    script_name = start_script.removeprefix(prefix)
    scripts = pyproject()["project"]["scripts"]
    assert script_name in scripts, f"{script_name!r} is not in [project.scripts]: {scripts}"
    module_name, _, function_name = scripts[script_name].partition(":")
    assert callable(getattr(import_module(module_name), function_name))
    installed = entry_points(group="console_scripts", name=script_name)
    assert [ep.value for ep in installed] == [scripts[script_name]], (
        "the installed entry point differs from pyproject.toml; reinstall with pip install -e ."
    )


def tool_installs(name: str) -> list[tuple[str, str]]:
    """The (installer, what) pairs of the README's tool-install block `name`."""
    language, body = readme_block(name)
    assert language == "sh"
    return re.findall(r"(uvx|uv tool install|pipx install) (\S+?)(?:,|\s|$)", body)


def test_readme_tool_installs_name_the_clone_and_the_distribution() -> None:
    assert tool_installs("tool-install-clone") == [("uv tool install", "."), ("pipx install", ".")]
    name = pyproject()["project"]["name"]
    assert tool_installs("tool-install-name") == [
        ("uvx", name),
        ("uv tool install", name),
        ("pipx install", name),
    ]
    # uvx runs the script named like the package: it must be the agent.
    scripts = pyproject()["project"]["scripts"]
    assert scripts[name] == scripts["acp-agent"]


def test_readme_script_example_is_a_valid_script() -> None:
    language, body = readme_block("script-example")
    assert language == "json"
    script = parse_script(json.loads(body))
    assert script.reply_for(0) == (
        ThoughtDelta("A greeting."),
        TextDelta("Hello"),
        Sleep(200),
        TextDelta(", world."),
    )
    assert (
        script.reply_for(1)
        == script.reply_for(5)
        == (TextDelta("The second prompt, and every later one, gets this."),)
    )


def test_readme_tool_script_example_is_a_valid_script() -> None:
    language, body = readme_block("script-tools-example")
    assert language == "json"
    script = parse_script(json.loads(body))
    assert script.replies == (
        (
            TextDelta("Let me look."),
            ToolCallStep("read", '{"path":"README.md"}'),
            ToolCallStep("shell", '{"command":"git status"}', "call_git"),
            UsageStep(UsageReported(input_tokens=1200, output_tokens=40)),
        ),
        (TextDelta("Half an answer"), Fail("stream_broken", "the line dropped")),
        (TextDelta("I won't do that."), Stop(StopReason.REFUSAL)),
    )
    assert script.context_window == 32000


def test_readme_branches_script_example_is_a_valid_script() -> None:
    language, body = readme_block("script-branches-example")
    assert language == "json"
    script = parse_script(json.loads(body))
    [entry] = script.branches
    assert entry.title == "tests"
    played = script.for_line(RequestOrigin(3, "tests"))
    assert played.reply_for(0) == (ToolCallStep("shell", '{"command":"pytest -q"}'),)
    assert played.reply_for(1) == (TextDelta("All tests pass."),)
    assert script.reply_for(2) == (TextDelta("The tests pass."),)


@pytest.mark.e2e
def test_readme_first_prompt_prints_the_scripted_reply(tmp_path: Path) -> None:
    language, body = readme_block("first-prompt")
    assert language == "sh"
    write_script, run_prompt = body.splitlines()
    [script_json] = re.findall(r"^echo '([^']*)' > hello\.json$", write_script)
    [reply] = parse_script(json.loads(script_json)).reply_for(0)
    assert isinstance(reply, TextDelta)
    assert f"It prints `{reply.text}`" in README.read_text()
    # The README runs it from the clone's root, after the set-up made .venv there; here
    # .venv is this environment, where the tests run.
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
    env = {**os.environ, "ACP_AGENT_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        ["bash", "-c", f"set -e\n{write_script}\n{run_prompt}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, reply.text + "\n"), done.stderr


def read_line(fd: int, deadline: float) -> tuple[bytes, bytes]:
    """The first line from `fd` (without its newline) and whatever followed it."""
    buffer = b""
    while b"\n" not in buffer:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no complete line within the time limit; got {buffer!r}"
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            chunk = os.read(fd, 1 << 16)
            assert chunk, f"stdout closed before a complete line; got {buffer!r}"
            buffer += chunk
    line, _, rest = buffer.partition(b"\n")
    return line, rest


def initialize_response_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text())
    response_schema = {
        "$schema": schema["$schema"],
        "$defs": schema["$defs"],
        "$ref": "#/$defs/InitializeResponse",
    }
    validator_class = jsonschema.validators.validator_for(response_schema)
    validator_class.check_schema(response_schema)
    return validator_class(response_schema)


@pytest.mark.e2e
def test_installed_agent_answers_the_readme_initialize_line_and_exits_on_eof(
    tmp_path: Path,
) -> None:
    language, initialize_line = readme_block("initialize-line")
    assert language == "json"
    assert "\n" not in initialize_line
    assert json.loads(initialize_line) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": 1},
    }
    agent = Path(sys.executable).parent / "acp-agent"
    assert agent.is_file(), f"{agent} is missing: install acp-agent into this environment"
    stderr_path = tmp_path / "stderr.log"
    env = {**os.environ, "ACP_AGENT_HOME": str(tmp_path / "home")}
    with stderr_path.open("wb") as stderr:
        proc = subprocess.Popen(
            [str(agent)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=tmp_path,
            env=env,
            bufsize=0,
        )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write(initialize_line.encode() + b"\n")
        line, rest = read_line(proc.stdout.fileno(), time.monotonic() + RESPONSE_TIMEOUT_S)
        proc.stdin.close()
        exit_code = proc.wait(timeout=EXIT_TIMEOUT_S)
        rest += proc.stdout.read()
    except (AssertionError, BrokenPipeError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"{exc!r}\n--- agent stderr ---\n{stderr_path.read_text(errors='replace')}")
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    stderr_text = stderr_path.read_text(errors="replace")

    response = json.loads(line)
    assert set(response) == {"jsonrpc", "id", "result"}, response
    assert response["jsonrpc"] == "2.0"
    assert response["id"] == 1
    initialize_response_validator().validate(response["result"])
    assert response["result"]["protocolVersion"] == 1
    assert rest == b"", f"unexpected stdout after the response: {rest!r}"
    assert exit_code == 0, f"exit code {exit_code}; stderr:\n{stderr_text}"
