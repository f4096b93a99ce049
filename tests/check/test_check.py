"""`acp-agent check` end to end: it passes acp-agent and fails each broken agent on its rule.

`broken_agent.py` keeps every rule unless told to break one: with `--break RULE`
exactly that rule fails and nothing else does. Its runs happen once for the module,
several at once (`support.check_all`), each against real processes; the tests read
the outcomes. The checker also runs as a person runs it (`python -m acp_agent check`)
against acp-agent itself (the scripted model, and a fake OpenAI-compatible provider
over HTTP) and for its command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_agent.adapters.check._report import WIDTH
from acp_agent.adapters.check._rules import RULES, Level
from tests.check.support import HERE, Outcome, check_all, left_running, once, python
from tests.support import agent_env, openai_env, write_script
from tests.support.fake_provider import FakeProviderServer, openai_reply

BROKEN_AGENT = HERE / "broken_agent.py"
TIMEOUT_S = 240

pytestmark = pytest.mark.timeout(TIMEOUT_S + 30)


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """The well-behaved agent (""), each broken one (by rule) and one that needs a login."""
    stores = tmp_path_factory.mktemp("stores")

    def agent(name: str, *args: str) -> list[str]:
        return python(BROKEN_AGENT, "--store", str(stores / f"{name or 'good'}.json"), *args)

    commands = {r.id: agent(r.id, "--break", r.id) for r in RULES}
    commands[""] = agent("")
    commands["auth"] = agent("auth", "--auth-required")
    # Generous against agents that answer in milliseconds, on a busy machine; the late
    # updates the broken agents send come 0.1 s after a response, well inside `quiet`.
    return once(
        tmp_path_factory,
        "broken",
        lambda: check_all(commands, timeout_s=5, quiet_s=0.5, deadline_s=120),
    )


def test_the_well_behaved_fixture_passes_every_rule(broken: dict[str, Outcome]) -> None:
    outcome = broken[""]
    assert outcome.verdicts == {r.id: "pass" for r in RULES}, outcome.text
    assert outcome.status == 0
    assert left_running(outcome.pids) == []


@pytest.mark.parametrize("rule", [r.id for r in RULES])
def test_each_broken_agent_fails_exactly_its_rule(broken: dict[str, Outcome], rule: str) -> None:
    outcome = broken[rule]
    failed = {name for name, verdict in outcome.verdicts.items() if verdict == "fail"}
    assert failed == {rule}, outcome.text
    assert set(outcome.verdicts.values()) <= {"pass", "fail"}, outcome.text
    level = next(r.level for r in RULES if r.id == rule)
    assert outcome.status == (1 if level is Level.MUST else 0)
    assert outcome.evidence(rule)


def test_an_agent_that_needs_a_login_is_inconclusive_where_a_turn_is_needed(
    broken: dict[str, Outcome],
) -> None:
    outcome = broken["auth"]
    found = outcome.verdicts
    for rule in (
        "prompt-updates-session-id",
        "nothing-after-prompt-response",
        "prompt-content",
        "cancel-resolves-cancelled",
        "close-cancels-prompt",
        "load-replays-before-response",
        "list-finds-sessions",
        # No turn ran, so there was no chance to call what was not offered.
        "no-unadvertised-client-calls",
    ):
        assert found[rule] == "inconclusive", outcome.text
    assert "authentication" in outcome.evidence("cancel-resolves-cancelled")
    assert found["load-never-prompted"] == "pass"
    assert "fail" not in found.values()
    assert outcome.status == 0


def test_the_table_fits_100_columns_with_evidence_on_its_own_lines(
    broken: dict[str, Outcome],
) -> None:
    for name, outcome in broken.items():
        lines = outcome.text.splitlines()
        assert max(len(line) for line in lines) <= WIDTH, (name, outcome.text)
        rows = [line for line in lines if line.startswith(tuple(r.id for r in RULES))]
        assert len(rows) == len(RULES), outcome.text
        # A failed rule shows the text it enforces and where, indented below its row.
        if name in {r.id for r in RULES}:
            row = next(i for i, line in enumerate(lines) if line.startswith(name + " "))
            below = lines[row + 1 : row + 12]
            assert any(line.startswith("    per ") for line in below), outcome.text


def test_schema_evidence_counts_every_problem_and_shows_each_kind(
    broken: dict[str, Outcome],
) -> None:
    # The agent adds "color" to the one update of each of the four prompts it answers
    # (a session's first, with a resource link, with the other kinds; the persisted one).
    evidence = broken["schema-no-unknown-keys"].evidence("schema-no-unknown-keys")
    assert evidence.startswith("4 problem(s), 1 distinct, in 4 of "), evidence
    assert "4x session/update: key not in the schema: $.update.color" in evidence


def check(*args: str, env: dict[str, str] | None = None) -> tuple[int, list[dict[str, Any]]]:
    done = subprocess.run(
        [sys.executable, "-m", "acp_agent", "check", "--json", *args],
        capture_output=True,
        text=True,
        env=env or agent_env(),
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]


def verdicts(findings: list[dict[str, Any]]) -> dict[str, str]:
    return {f["rule"]: f["verdict"] for f in findings}


def test_strict_fails_on_a_should_rule_and_only_limits_the_rules(tmp_path: Path) -> None:
    agent = python(BROKEN_AGENT, "--store", str(tmp_path / "s.json"), "--break", "agent-info")
    status, findings = check("--only", "agent-info", "--timeout", "5", "--", *agent)
    assert status == 0
    assert [f["rule"] for f in findings] == ["agent-info"]
    assert findings[0]["verdict"] == "fail"
    assert set(findings[0]) == {
        "version",
        "rule",
        "level",
        "verdict",
        "evidence",
        "requires",
        "source",
    }
    status, _ = check("--strict", "--only", "agent-info", "--timeout", "5", "--", *agent)
    assert status == 1


def test_acp_agent_passes_with_the_scripted_model(tmp_path: Path) -> None:
    # A reply slow enough to be cancelled, quick enough for the other turns to end.
    script = write_script(
        tmp_path / "steady.json",
        [{"text": "Working on it"}, {"sleep_ms": 500}, {"text": " - done."}],
    )
    agent = [sys.executable, "-m", "acp_agent", "--home", str(tmp_path / "home")]
    status, findings = check("--quiet", "0.5", "--", *agent, "--script", str(script))
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
    turns = ("prompt-updates-session-id", "prompt-content", "load-replays-before-response")
    status, findings = check(
        "--only", *turns, "--quiet", "0.5", "--", *agent, env=openai_env(server.base_url)
    )
    assert status == 0, findings
    assert verdicts(findings) == dict.fromkeys(turns, "pass"), findings


def test_usage_errors_exit_2() -> None:
    for args in (
        ["--"],
        ["--only", "no-such-rule", "--", "true"],
        ["--", "/no/such/agent"],
        ["--deadline", "0", "--", "true"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "acp_agent", "check", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("acp-agent check: ")
