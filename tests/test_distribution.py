"""The sdist carries everything, and the wheel built from it installs and serves ACP.

Built as a release would be: `python -m build` makes the sdist from a copy of
the work tree (what git tracks or would, so the tree itself gets no build
output), then the wheel from that sdist. The wheel goes into a new virtual
environment (its dependencies from the package index, through pip's cache), and
the installed scripts are run there: `acp-agent`, and the command the ACP
registry entry launches, with the environment and `initialize` the registry's
CI uses.

Slow-ish (half a minute to a minute, most of it pip) and needs the package index; it runs
in every `pytest` all the same. Only when a step fails and PyPI cannot be
reached is it skipped, saying so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import acp_agent
from tests.support.raw_agent import RawAgent
from tests.support.schema_validation import WireValidator

pytestmark = [pytest.mark.distribution, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parent.parent
PROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DIST = PROJECT["name"]
REGISTRY_ENTRY = ROOT / "registry" / DIST / "agent.json"

#: The generated modules (v1's and v2's) and the vendored schema protocol.validation reads
#: at run time.
GENERATED = tuple(
    f"{folder}/{name}"
    for folder in ("protocol", "protocol/v2")
    for name in (
        "types.py",
        "methods.py",
        *sorted(p.name for p in (ROOT / folder).glob("_types_*.py")),
    )
)
SCHEMA = tuple(
    f"protocol/schema/{version}{name}"
    for version in ("", "v2/")
    for name in ("schema.json", "schema.unstable.json")
)
#: The packages the wheel installs; every file git has under them must be in it.
PACKAGES = ("acp_agent/", "protocol/", "jsonbounds/")
STEP_TIMEOUT_S = 600
EXIT_TIMEOUT_S = 10.0

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
#: The `initialize` the registry's auth check sends (its .github/workflows/client.py).
REGISTRY_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": 1,
        "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"},
        "clientCapabilities": {
            "terminal": True,
            "fs": {"readTextFile": True, "writeTextFile": True},
            "_meta": {"terminal_output": True, "terminal-auth": True},
        },
    },
}


@dataclass(frozen=True)
class Built:
    """The sdist, the wheel built from it, and the work-tree files they were built from."""

    sdist: Path
    wheel: Path
    sources: frozenset[str]


@dataclass(frozen=True)
class Installed:
    """A new virtual environment with the wheel installed."""

    root: Path
    home: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"


def run(command: Sequence[str | Path], *, cwd: Path | None = None) -> str:
    """Run a build or install step; its output. Fails the test (or skips it offline) if it fails."""
    try:
        done = subprocess.run(
            [str(part) for part in command],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{command} took over {STEP_TIMEOUT_S} s: {exc.stderr!r}")
    if done.returncode != 0:
        output = f"{done.stdout}\n{done.stderr}"[-4000:]
        if not pypi_reachable():
            pytest.skip(f"no network (pypi.org unreachable), and {command[:3]} failed:\n{output}")
        pytest.fail(f"{command} exited {done.returncode}:\n{output}")
    return done.stdout


def pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        return False
    return True


def source_files() -> frozenset[str]:
    """The work tree's files as git sees them: tracked or new, never ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return frozenset(name for name in listed.split("\0") if name and (ROOT / name).is_file())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    source = tmp_path_factory.mktemp("source")
    sources = source_files()
    for name in sources:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, source])
    [sdist] = out.glob("*.tar.gz")
    [wheel] = out.glob("*.whl")
    return Built(sdist, wheel, sources)


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    place = tmp_path_factory.mktemp("installed")
    venv = Installed(place / "venv", place / "home")
    venv.home.mkdir()
    run([sys.executable, "-m", "venv", venv.root])
    run([venv.bin / "python", "-m", "pip", "install", "--quiet", built.wheel])
    return venv


def registry_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The bare environment the registry's CI starts an agent in (HOME a sandbox)."""
    return {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "dumb", **(extra or {})}


def serve_one(command: Sequence[str], env: Mapping[str, str], request: Any) -> dict[str, Any]:
    """Send `request` to the agent `command` starts, read its one answer, see it exit on EOF."""
    agent = RawAgent(command, env=env)
    try:
        agent.send_json(request)
        response = agent.read_message()
        agent.close_stdin()
        exit_code, _ = agent.wait_for_exit(EXIT_TIMEOUT_S)
    except (AssertionError, subprocess.TimeoutExpired) as exc:
        agent.stop()
        pytest.fail(f"{exc!r}\n--- agent stderr ---\n{agent.stderr.decode(errors='replace')}")
    stderr = agent.stderr.decode(errors="replace")
    assert exit_code == 0, stderr
    assert len(agent.received) == 1, agent.received
    assert WireValidator().problems(agent.sent, agent.received) == [], agent.received
    return response


def test_sdist_carries_the_sources_the_generated_modules_and_the_schema(built: Built) -> None:
    with tarfile.open(built.sdist) as sdist:
        names = {member.name.split("/", 1)[1] for member in sdist.getmembers() if member.isfile()}
    top = f"{DIST.replace('-', '_')}-{acp_agent.__version__}"
    assert built.sdist.name == f"{top}.tar.gz"
    assert {*GENERATED, *SCHEMA, "protocol/schema/README.md"} <= names
    assert {"pyproject.toml", "README.md", "MANIFEST.in", "PKG-INFO", "LICENSE"} <= names
    # The reference the README links travels with it.
    docs = {n for n in built.sources if n.startswith("docs/") and n.endswith(".md")}
    assert "docs/configuration.md" in docs
    assert docs - names == set(), "docs/ pages the README links are missing from the sdist"
    expected = {n for n in built.sources if n.startswith(PACKAGES)}
    assert expected - names == set(), "files git has under the packages are missing from the sdist"
    # The tests read the whole repository; the sdist only builds the wheel.
    assert not any(n.startswith("tests/") for n in names)


def test_wheel_carries_the_packages_their_data_and_both_scripts(built: Built) -> None:
    version = acp_agent.__version__
    dist_info = f"{DIST.replace('-', '_')}-{version}.dist-info"
    assert built.wheel.name == f"{DIST.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
        entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
    assert {*GENERATED, *SCHEMA} <= names
    expected = {n for n in built.sources if n.startswith(PACKAGES)}
    assert expected - names == set(), "files git has under the packages are missing from the wheel"
    assert {n.split("/", 1)[0] for n in names} == {"acp_agent", "protocol", "jsonbounds", dist_info}
    assert re.search(rf"^Name: {re.escape(DIST)}$", metadata, re.MULTILINE), metadata[:300]
    assert re.search(rf"^Version: {re.escape(version)}$", metadata, re.MULTILINE)
    assert re.search(r"^License-Expression: Apache-2.0$", metadata, re.MULTILINE)
    assert f"{dist_info}/licenses/LICENSE" in names  # the licence's text travels with it
    scripts = dict(
        line.replace(" ", "").split("=", 1)
        for line in entry_points.split("[console_scripts]", 1)[1].strip().splitlines()
        if "=" in line
    )
    assert scripts == {"acp-agent": "acp_agent.cli:main", DIST: "acp_agent.cli:main"}


def test_the_venv_imports_the_installed_packages_and_reads_their_schema(
    installed: Installed,
) -> None:
    probe = (
        "import importlib.metadata, json, acp_agent, jsonbounds, protocol\n"
        "from protocol.validation import WireValidator\n"
        "defs = [len(WireValidator(unstable=u, protocol_version=v).defs)\n"
        "    for u in (False, True) for v in (1, 2)]\n"
        "files = [acp_agent.__file__, protocol.__file__, jsonbounds.__file__]\n"
        "print(json.dumps({'files': files, 'defs': defs,\n"
        f"    'version': importlib.metadata.version({DIST!r})}}))\n"
    )
    facts = json.loads(run([installed.bin / "python", "-c", probe], cwd=installed.home))
    site = installed.root.resolve()
    assert all(Path(f).resolve().is_relative_to(site) for f in facts["files"]), facts
    assert all(count > 100 for count in facts["defs"]), facts
    assert facts["version"] == acp_agent.__version__


@pytest.mark.e2e
def test_installed_acp_agent_answers_initialize_and_exits_on_eof(installed: Installed) -> None:
    response = serve_one(
        [str(installed.bin / "acp-agent")], registry_env(installed.home), INITIALIZE
    )
    assert response["id"] == 1
    result = response["result"]
    assert result["protocolVersion"] == 1
    assert result["agentInfo"]["name"] == "acp-agent"
    assert result["agentInfo"]["version"] == acp_agent.__version__


@pytest.mark.e2e
def test_registry_command_passes_the_registry_auth_check(installed: Installed) -> None:
    """What `uvx <package> [args]` runs, answering the registry CI's `initialize`."""
    uvx = json.loads(REGISTRY_ENTRY.read_text())["distribution"]["uvx"]
    command = re.split(r"[<>=!@\[;\s]", uvx["package"], maxsplit=1)[0]
    response = serve_one(
        [str(installed.bin / command), *uvx.get("args", [])],
        registry_env(installed.home, uvx.get("env", {})),
        REGISTRY_INITIALIZE,
    )
    methods = response["result"]["authMethods"]
    # The registry reads a method without "type" as "agent".
    kinds = [method.get("type", "agent") for method in methods]
    assert {"agent", "terminal"} & set(kinds), methods


def test_the_code_names_the_distribution_pyproject_publishes() -> None:
    assert acp_agent.DISTRIBUTION == DIST
