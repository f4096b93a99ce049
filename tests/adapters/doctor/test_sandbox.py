"""`acp-agent doctor` on the sandbox: bubblewrap found and able to confine commands, or why
not and how to enable it; the person's `[sandbox]` entries it had to leave out."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from acp_agent.adapters.doctor._sandbox import check_sandbox
from acp_agent.adapters.doctor._setup import DoctorSetup
from acp_agent.paths import resolve_paths
from acp_agent.sandbox import forget_probes
from tests.adapters.doctor.support import row, run_doctor
from tests.sandbox.conftest import needs_bwrap
from tests.support import agent_env, write_script


def _setup(tmp_path: Path, env: dict[str, str]) -> DoctorSetup:
    return DoctorSetup(
        paths=resolve_paths(tmp_path / "home"), home=None, home_source=None, env=env, cwd=tmp_path
    )


def test_bubblewrap_here_confines_commands(tmp_path: Path) -> None:
    needs_bwrap()
    forget_probes()
    check = check_sandbox(_setup(tmp_path, dict(os.environ)))

    assert check.status.value == "ok"
    assert check.summary.startswith("bubblewrap ")
    where = shutil.which("bwrap")
    assert check.summary.endswith(f" at {where} can confine commands")
    assert "config problems" not in check.details


def test_entries_of_sandbox_left_out_are_a_warning_naming_them(tmp_path: Path) -> None:
    needs_bwrap()
    config = tmp_path / "home" / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[sandbox]\nwritable = ["relative"]\n')

    check = check_sandbox(_setup(tmp_path, dict(os.environ)))

    assert check.status.value == "warning"
    assert check.details["config problems"] == [
        "[sandbox] writable: 'relative' is not an absolute or ~/ path; ignored"
    ]


@pytest.mark.e2e
def test_without_bwrap_doctor_warns_and_says_how_to_install_it(tmp_path: Path) -> None:
    script = write_script(tmp_path / "hello.json", [{"text": "Hello."}])
    env = agent_env(PATH=str(tmp_path / "empty-bin"))

    screen = run_doctor(tmp_path / "home", "--script", str(script), env=env)
    report = run_doctor(tmp_path / "home", "--script", str(script), "--json", env=env)

    check = report.check("sandbox")
    assert check["status"] == "warning"
    assert check["summary"] == "commands cannot run sandboxed: not installed: no bwrap on PATH"
    assert check["fix"].startswith("install bubblewrap: apt install bubblewrap (Debian, Ubuntu)")
    assert check["fix"].endswith(
        "; until then the sandboxed mode (the default) asks before every command "
        "(docs/tools.md#the-command-sandbox)"
    )
    assert report.returncode == screen.returncode == 0  # a prompt still works
    assert row(screen.stdout, "sandbox").startswith("warning  sandbox  commands cannot run")
