"""`acp-agent check --protocol 2`: acp-agent passes the v2 rules; an agent that answers
a v2 client in v1 fails the version rule, and every rule after it is inconclusive."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_agent.adapters.check._v2 import V2_RULES
from tests.support import agent_env, write_script

pytestmark = pytest.mark.timeout(90)


def check_v2(tmp_path: Path, **env: str) -> tuple[int, dict[str, dict[str, Any]]]:
    script = write_script(tmp_path / "script.json", [{"text": "Hello."}])
    agent = [sys.executable, "-m", "acp_agent", "--home", str(tmp_path / "home")]
    check = [sys.executable, "-m", "acp_agent", "check", "--protocol", "2", "--json"]
    done = subprocess.run(
        [*check, "--quiet", "0.3", "--", *agent, "--script", str(script)],
        capture_output=True,
        env=agent_env(**env),
        timeout=80,
        check=False,
    )
    findings = [json.loads(line) for line in done.stdout.decode().splitlines() if line]
    return done.returncode, {f["rule"]: f for f in findings}


def test_acp_agent_passes_the_v2_rules(tmp_path: Path) -> None:
    status, findings = check_v2(tmp_path)
    assert sorted(findings) == sorted(rule.id for rule in V2_RULES)
    assert {rule: f["verdict"] for rule, f in findings.items() if f["verdict"] != "pass"} == {}
    assert status == 0


def test_an_agent_answering_v1_fails_the_version_rule(tmp_path: Path) -> None:
    status, findings = check_v2(tmp_path, ACP_AGENT_PROTOCOL="v1")
    assert findings["v2-initialize-version"]["verdict"] == "fail"
    assert findings["v2-turn-ends-idle"]["verdict"] == "inconclusive"
    assert status == 1
