"""How the doctor tests run `acp-agent doctor`: the real command, in a home of their own."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

__all__ = ("KEY", "Doctor", "row", "run_doctor")

#: The API key the tests configure: it must never appear in what doctor prints.
KEY = "sk-doctor-secret-0123456789abcdef"
TIMEOUT_S = 90


@attrs.frozen
class Doctor:
    """One finished run: the human screen (or the JSON), stderr, the exit status."""

    stdout: str
    stderr: str
    returncode: int

    def json(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads(self.stdout)
        return report

    def check(self, name: str) -> dict[str, Any]:
        """The JSON check named `name` (a `--json` run)."""
        [found] = [check for check in self.json()["checks"] if check["name"] == name]
        return found


def run_doctor(home: Path, *args: str, env: Mapping[str, str], cwd: Path | None = None) -> Doctor:
    """`python -m acp_agent doctor --home HOME ARGS...` with exactly `env`."""
    done = subprocess.run(
        [sys.executable, "-m", "acp_agent", "doctor", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=dict(env),
        cwd=cwd,
        timeout=TIMEOUT_S,
        check=False,
    )
    return Doctor(done.stdout, done.stderr, done.returncode)


def row(screen: str, name: str) -> str:
    """The line of the human screen that starts check `name` (status, name, summary)."""
    [line] = [
        line
        for line in screen.splitlines()
        if line and not line[0].isspace() and line.split()[1:2] == [name]
    ]
    return line
