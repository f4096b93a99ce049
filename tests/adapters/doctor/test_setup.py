"""`acp-agent doctor` on the rest of the set-up: the store, MCP servers, language servers,
the workspace's files, and the `--json` shape; each a real subprocess with a real home.

The MCP servers are real processes: the `mcp`-SDK server of `tests/mcp/servers`, one
that exits at once with an error, one whose command does not exist, one that never
answers. The store is a real SQLite file (one made by `acp-agent exec`, or junk).
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import acp_agent
from tests.adapters.doctor.support import row, run_doctor
from tests.mcp.support import SERVERS
from tests.support import agent_env, write_script

pytestmark = pytest.mark.e2e

PYTHON = json.dumps(sys.executable)
#: What the failing MCP server is given, and prints: it must not be shown.
DB_TOKEN = "tok-very-secret-1234"
#: A server that fails at once, saying why on stderr (with its secret).
FAILING = (
    "import os, sys; print('no database at ' + os.environ['DB_TOKEN'], file=sys.stderr); "
    "sys.exit(3)"
)


def scripted(tmp_path: Path) -> Path:
    return write_script(tmp_path / "hello.json", [{"text": "Hello."}])


def config(home: Path, text: str) -> Path:
    path = home / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


MCP_CONFIG = f"""
[mcp_servers.tools]
command = {PYTHON}
args = [{json.dumps(str(SERVERS / "tools_server.py"))}]

[mcp_servers.broken]
command = {PYTHON}
args = ["-c", {json.dumps(FAILING)}]
env = {{ DB_TOKEN = "{DB_TOKEN}" }}

[mcp_servers.missing]
command = "/nonexistent/bin/mcp-server"

[mcp_servers.silent]
command = {PYTHON}
args = [{json.dumps(str(SERVERS / "silent_server.py"))}]

[mcp_servers.off]
command = "anything"
enabled = false
"""

PROJECT_CONFIG = f"""
default_model = "openai/gpt-4.1"

[mcp_servers.project-tools]
command = {PYTHON}
args = [{json.dumps(str(SERVERS / "tools_server.py"))}]
"""


def test_mcp_servers_are_started_and_each_works_fails_or_waits_to_be_enabled(
    tmp_path: Path,
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    user_config = config(home, MCP_CONFIG)
    (workspace / ".acp-agent").mkdir(parents=True)
    (workspace / ".acp-agent" / "config.toml").write_text(PROJECT_CONFIG)
    (workspace / "AGENTS.md").write_text("Run the tests before you say done.\n")
    args = ("--script", str(scripted(tmp_path)), "--cwd", str(workspace), "--mcp-timeout", "5")

    screen = run_doctor(home, *args, env=agent_env())
    report = run_doctor(home, *args, "--json", env=agent_env())

    # Broken MCP servers do not stop a prompt.
    assert (screen.returncode, report.returncode, report.json()["ok"]) == (0, 0, True)
    assert row(screen.stdout, "mcp:tools").split(None, 2) == [
        "ok",
        "mcp:tools",
        "13 tools: add, count, crash, deep, document, dump and 7 more",
    ]
    broken = report.check("mcp:broken")
    assert broken["status"] == "problem"
    assert broken["summary"].startswith("failed: the server process exited with code 3")
    assert broken["summary"].endswith("(Connection closed (MCP error -32000))")
    assert broken["details"]["stderr"] == "no database at [redacted]"
    assert broken["fix"] == "run its command by hand to see why"
    missing = report.check("mcp:missing")
    assert missing["status"] == "problem"
    assert "No such file or directory" in missing["summary"]
    assert missing["fix"] == (
        f"install '/nonexistent/bin/mcp-server' or fix command in [mcp_servers.missing] "
        f"in {user_config}"
    )
    silent = report.check("mcp:silent")
    assert (silent["status"], silent["summary"]) == (
        "problem",
        "failed: did not start (start, handshake and tool list) within 5 s",
    )
    off = report.check("mcp:off")
    assert (off["status"], off["summary"]) == ("ok", f"not started: disabled in {user_config}")
    waiting = report.check("mcp:project-tools")
    assert waiting["status"] == "warning"
    assert waiting["summary"].startswith("not started: declared by the project; not enabled")
    assert waiting["fix"] == f"to run it, add the 'enable with' entry below to {user_config}"
    entry = waiting["details"]["enable with"].splitlines()
    assert entry[:3] == [
        "[[mcp.enabled_project_servers]]",
        f'project = "{workspace}"',
        'name = "project-tools"',
    ]
    assert entry[3].startswith('hash = "sha256:')
    project = report.check("project")
    assert project["status"] == "warning"
    assert project["summary"] == (
        f"{workspace}: 1 AGENTS.md, 1 project MCP server(s); not enabled: project-tools; "
        "ignored in .acp-agent/config.toml: default_model"
    )
    assert project["details"]["AGENTS.md"] == ["workspace/AGENTS.md"]
    for output in (screen.stdout, screen.stderr, report.stdout, report.stderr):
        assert DB_TOKEN not in output
    assert "stderr: no database at [redacted]" in screen.stdout

    # Doing what the fix says enables the server: it starts and lists its tools.
    user_config.write_text(MCP_CONFIG + "\n" + "\n".join(entry) + "\n")
    enabled = run_doctor(home, *args, "--json", env=agent_env())

    assert enabled.check("mcp:project-tools")["status"] == "ok"
    assert enabled.check("mcp:project-tools")["summary"].startswith("13 tools: add, count")
    assert "not enabled" not in enabled.check("project")["summary"]


@pytest.mark.parametrize("kind", ["not sqlite", "a folder"])
def test_a_store_it_cannot_open_is_a_problem_naming_the_path(tmp_path: Path, kind: str) -> None:
    home = tmp_path / "home"
    store = home / "data" / "sessions.sqlite3"
    store.parent.mkdir(parents=True)
    if kind == "a folder":
        store.mkdir()
    else:
        store.write_bytes(b"these are notes, not a database\n" * 200)
    args = ("--script", str(scripted(tmp_path)), "--cwd", str(tmp_path))

    screen = run_doctor(home, *args, env=agent_env())
    report = run_doctor(home, *args, "--json", env=agent_env())

    assert (screen.returncode, report.returncode, report.json()["ok"]) == (1, 1, False)
    check = report.check("store")
    assert check["status"] == "problem"
    assert check["details"]["path"] == str(store)
    if kind == "a folder":
        assert check["summary"] == "a folder is where the session store should be"
    else:
        assert check["summary"] == "cannot be opened: file is not a database"
        assert check["fix"].startswith("it is not an SQLite file: move it away")
    assert row(screen.stdout, "store").startswith("problem  store")
    assert f"path: {store}" in screen.stdout
    assert store.exists()  # looked at, never replaced


def test_a_store_with_sessions_is_counted_and_left_as_it_was(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    script = scripted(tmp_path)
    made = subprocess.run(
        [
            *(sys.executable, "-m", "acp_agent", "exec", "--home", str(home)),
            *("--script", str(script), "--cwd", str(workspace), "Say hello"),
        ],
        capture_output=True,
        text=True,
        env=agent_env(),
        timeout=90,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    data = home / "data"
    before = sorted(path.name for path in data.iterdir())

    report = run_doctor(
        home, "--script", str(script), "--cwd", str(workspace), "--json", env=agent_env()
    )

    store = report.check("store")
    assert store["status"] == "ok"
    assert store["summary"].startswith("1 session, ")
    assert store["summary"].endswith(", quick_check ok")
    assert sorted(path.name for path in data.iterdir()) == before


def test_an_absent_store_is_a_warning_that_does_not_fail(tmp_path: Path) -> None:
    report = run_doctor(
        tmp_path / "home", "--script", str(scripted(tmp_path)), "--json", env=agent_env()
    )

    store = report.check("store")
    assert (report.returncode, store["status"]) == (0, "warning")
    assert store["summary"] == "no sessions yet (the store is created with the first session)"
    assert not (tmp_path / "home" / "data").exists()  # nothing created


def test_language_servers_are_found_or_named_with_what_to_install(tmp_path: Path) -> None:
    home = tmp_path / "home"
    user_config = config(
        home,
        '[lsp.servers.rust-analyzer]\ncommand = ["no-such-rust-analyzer"]\n'
        'extensions = [".rs"]\nlanguage = "rust"\n',
    )
    env = {k: v for k, v in agent_env().items() if k != "ACP_AGENT_LSP"}
    script = str(scripted(tmp_path))

    report = run_doctor(home, "--script", script, "--json", env=env)
    off = run_doctor(home, "--script", script, "--json", env=agent_env(ACP_AGENT_LSP="0"))

    python = report.check("lsp:python")
    assert python["status"] == "ok"
    assert python["details"]["ruff"] == f"found: {sys.executable} -m ruff"
    rust = report.check("lsp:rust")
    assert (rust["status"], rust["summary"]) == ("warning", "not found: rust-analyzer")
    assert rust["fix"] == (
        "install 'no-such-rust-analyzer' or fix [lsp.servers.rust-analyzer] command in "
        f"{user_config}"
    )
    assert report.returncode == 0  # fewer diagnostics, not a failed prompt
    assert (
        off.check("lsp")["summary"]
        == "code intelligence is off (ACP_AGENT_LSP=0): no language servers"
    )


def test_json_is_one_object_of_the_documented_shape_agreeing_with_the_screen(
    tmp_path: Path,
) -> None:
    config(tmp_path / "home", "[mcp_servers.gone]\ncommand = '/nonexistent/mcp'\n")
    screen = run_doctor(tmp_path / "home", "--cwd", str(tmp_path), env=agent_env())
    report = run_doctor(tmp_path / "home", "--cwd", str(tmp_path), "--json", env=agent_env())

    shape: dict[str, Any] = report.json()
    assert list(shape) == ["version", "ok", "checks"]
    assert (shape["version"], shape["ok"]) == (1, False)
    names = [check["name"] for check in shape["checks"]]
    assert names[:5] == ["version", "paths", "config", "model", "store"]
    assert {"mcp:gone", "project"} <= set(names)
    assert len(set(names)) == len(names)
    for check in shape["checks"]:
        assert set(check) <= {"name", "status", "summary", "fix", "details"}
        assert {"name", "status", "summary"} <= set(check)
        assert check["status"] in ("ok", "warning", "problem")
        assert isinstance(check["summary"], str)
        assert "\n" not in check["summary"]
        if check["status"] == "problem":
            assert isinstance(check["fix"], str)
            assert "\n" not in check["fix"]
        # The screen shows the same verdict and summary on the check's row.
        assert row(screen.stdout, check["name"]).split(None, 2) == [
            check["status"],
            check["name"],
            check["summary"],
        ]
    assert screen.returncode == report.returncode == 1
    assert report.stderr == ""


def test_a_directory_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    done = run_doctor(tmp_path / "home", "--cwd", str(tmp_path / "nope"), env=agent_env())
    zero = run_doctor(tmp_path / "home", "--timeout", "0", env=agent_env())

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"acp-agent doctor: --cwd: not a directory: {tmp_path / 'nope'}\n"
    assert zero.returncode == 2


def test_the_version_is_the_installed_distributions(tmp_path: Path) -> None:
    report = run_doctor(tmp_path / "home", "--json", env=agent_env())

    version = report.check("version")
    assert version["status"] == "ok", version
    assert version["summary"].startswith(f"acp-agent {acp_agent.__version__} (Python ")
    assert importlib.metadata.version(acp_agent.DISTRIBUTION) == acp_agent.__version__
