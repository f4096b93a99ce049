"""`acp-agent check` end to end: it passes acp-agent and fails each broken agent on its rule.

The checker runs as a person runs it (`python -m acp_agent check ... -- AGENT`),
against acp-agent itself (the scripted model, and a fake OpenAI-compatible provider
over HTTP) and against `broken_agent.py`, which keeps every rule unless told to
break one: with `--break RULE` exactly that rule fails and nothing else does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_agent.adapters.check._rules import RULES, Level
from tests.support import agent_env, openai_env, write_script
from tests.support.fake_provider import FakeProviderServer, openai_reply

BROKEN_AGENT = Path(__file__).with_name("broken_agent.py")
TIMEOUT_S = 240

pytestmark = pytest.mark.timeout(TIMEOUT_S + 30)


def check(*args: str, env: dict[str, str] | None = None) -> tuple[int, list[dict[str, Any]]]:
    store = Path(tempfile.mkdtemp(prefix="broken-agent-")) / "sessions.json"
    done = subprocess.run(
        [sys.executable, "-m", "acp_agent", "check", "--json", *args],
        capture_output=True,
        text=True,
        env={**(env or agent_env()), "BROKEN_AGENT_STORE": str(store)},
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]


def verdicts(findings: list[dict[str, Any]]) -> dict[str, str]:
    return {f["rule"]: f["verdict"] for f in findings}


def broken(rule: str | None = None) -> list[str]:
    return [sys.executable, str(BROKEN_AGENT), *(["--break", rule] if rule else [])]


def test_the_well_behaved_fixture_passes_every_rule() -> None:
    status, findings = check("--timeout", "5", "--quiet", "0.4", "--", *broken())
    assert status == 0
    assert verdicts(findings) == {r.id: "pass" for r in RULES}
    assert all(f["version"] == 1 and f["source"] and f["requires"] for f in findings)


@pytest.mark.parametrize("rule", [r.id for r in RULES])
def test_each_broken_agent_fails_exactly_its_rule(rule: str) -> None:
    status, findings = check("--timeout", "3", "--quiet", "0.4", "--", *broken(rule))
    failed = {name for name, verdict in verdicts(findings).items() if verdict == "fail"}
    assert failed == {rule}, findings
    level = {r.id: r.level for r in RULES}[rule]
    assert status == (1 if level is Level.MUST else 0)
    evidence = next(f["evidence"] for f in findings if f["rule"] == rule)
    assert evidence


def test_strict_fails_on_a_should_rule_and_only_limits_the_rules() -> None:
    status, findings = check(
        "--strict", "--only", "unknown-method-32601", "--timeout", "3", "--", *broken()
    )
    assert status == 0
    assert [f["rule"] for f in findings] == ["unknown-method-32601"]
    status, _ = check(
        "--strict", "--only", "exit-after-eof", "--timeout", "5", "--", *broken("exit-after-eof")
    )
    assert status == 1


def test_acp_agent_passes_with_the_scripted_model(tmp_path: Path) -> None:
    # A reply slow enough to be cancelled, quick enough for the other turns to end.
    script = write_script(
        tmp_path / "steady.json",
        [{"text": "Working on it"}, {"sleep_ms": 2000}, {"text": " - done."}],
    )
    agent = [sys.executable, "-m", "acp_agent", "--home", str(tmp_path / "home")]
    status, findings = check("--", *agent, "--script", str(script))
    assert status == 0, findings
    assert set(verdicts(findings).values()) == {"pass"}, findings


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def test_acp_agent_passes_with_a_model_over_http(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    server.add(*[openai_reply("Hello.") for _ in range(20)])
    agent = [sys.executable, "-m", "acp_agent", "--home", str(tmp_path / "home")]
    status, findings = check("--", *agent, env=openai_env(server.base_url))
    found = verdicts(findings)
    assert status == 0, findings
    assert "fail" not in found.values(), findings
    # One-chunk replies end before a cancel can land: that rule cannot be decided.
    assert found["cancel-resolves-cancelled"] in ("pass", "inconclusive")
    assert found["prompt-updates-session-id"] == "pass"
    assert found["load-replays-before-response"] == "pass"


def test_an_agent_that_needs_a_login_is_inconclusive_where_a_turn_is_needed() -> None:
    agent = [*broken(), "--auth-required"]
    status, findings = check("--timeout", "5", "--quiet", "0.4", "--", *agent)
    found = verdicts(findings)
    assert status == 0, findings
    for rule in (
        "prompt-updates-session-id",
        "nothing-after-prompt-response",
        "cancel-resolves-cancelled",
        "load-replays-before-response",
    ):
        assert found[rule] == "inconclusive", findings
    assert "authentication" in next(
        f["evidence"] for f in findings if f["rule"] == "cancel-resolves-cancelled"
    )
    assert found["load-never-prompted"] == "pass"
    assert "fail" not in found.values()


def test_usage_errors_exit_2() -> None:
    for args in (["--"], ["--only", "no-such-rule", "--", "true"], ["--", "/no/such/agent"]):
        done = subprocess.run(
            [sys.executable, "-m", "acp_agent", "check", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("acp-agent check: ")
