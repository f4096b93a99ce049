"""`check` holds against hostile agents: a report every time, the right verdicts, no
traceback, nothing left running.

The agents (`hostile/`, a few lines each) write banners and garbage, echo what they
read, never answer, exit at once, leave a child holding stdout (through a shell
wrapper), flood updates, or answer every request with one malformed shape. Each is
checked once for the module, several at once; how long each takes and how much
memory the checker needs are measured in `benchmarks/check_hostile.py`, not here.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_agent.adapters.check._rules import RULES
from tests.check.support import HERE, Outcome, check_all, left_running, once, python

HOSTILE = HERE / "hostile"
#: How long the check waits for each answer: long enough for a Python start on a loaded
#: 2-core machine (1 s was not), short enough that the silent ones cost little.
TIMEOUT_S = 3.0

SHAPES = (
    "result-string",
    "result-null",
    "result-list",
    "error-string",
    "error-no-code",
    "both",
    "neither",
    "wrong-types",
    "id-changed",
    "batch",
    "deep",
    "huge",
)

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc for processes"),
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Each hostile agent's check, and (as "pids") what the wrapper's children were."""
    return once(tmp_path_factory, "hostile", lambda: _check_hostile(tmp_path_factory))


def _check_hostile(factory: pytest.TempPathFactory) -> dict[str, Any]:
    child_pids = factory.mktemp("hostile") / "pids"
    os.environ["HOSTILE_PIDS"] = str(child_pids)  # the wrapper records its child there
    os.environ["PYTHON"] = sys.executable
    commands = {
        name: python(HOSTILE / f"{name}.py")
        for name in ("banner", "echo", "silent", "exits", "flood")
    }
    commands["child"] = [str(HOSTILE / "child_holds_stdout.sh")]
    for shape in SHAPES:
        commands[shape] = python(HOSTILE / "malformed.py", shape)
        commands[f"{shape}+"] = python(HOSTILE / "malformed.py", shape, "--good", "initialize")
    try:
        outcomes: dict[str, Any] = check_all(
            commands, timeout_s=TIMEOUT_S, quiet_s=0.3, deadline_s=60
        )
    finally:
        del os.environ["HOSTILE_PIDS"], os.environ["PYTHON"]
    outcomes["pids"] = [int(p) for p in child_pids.read_text().split()]
    return outcomes


def test_every_hostile_agent_gets_a_whole_report_and_leaves_nothing_running(
    hostile: dict[str, Any],
) -> None:
    recorded = hostile["pids"]
    assert recorded, "the wrapper's child was started"
    outcomes = {name: o for name, o in hostile.items() if name != "pids"}
    for name, outcome in outcomes.items():
        assert [f.rule.id for f in outcome.findings] == [r.id for r in RULES], name
        assert not outcome.deadline_passed, (name, outcome.text)
        assert outcome.status in (0, 1)
        assert "checker error" not in outcome.text, (name, outcome.text)
        assert "Traceback" not in outcome.text
        assert outcome.verdicts["initialize-version"] in ("pass", "fail"), (name, outcome.text)
    pids = [p for outcome in outcomes.values() for p in outcome.pids]
    assert left_running([*pids, *recorded]) == []


def test_banners_on_stdout_fail_its_rule_only_where_they_are(hostile: dict[str, Outcome]) -> None:
    outcome = hostile["banner"]
    assert outcome.verdicts["stdout-json-rpc"] == "fail"
    assert "Welcome to banner-agent" in outcome.evidence("stdout-json-rpc")
    assert outcome.verdicts["initialize-version"] == "pass"
    assert outcome.status == 1


def test_an_echoing_agent_is_never_answered_into_a_loop(hostile: dict[str, Outcome]) -> None:
    outcome = hostile["echo"]
    # Only requests are answered: the echoes of ours, which are not JSON, get no answer
    # (that would be echoed back, and answered again), so it writes a line per request.
    found = re.match(r"(\d+) of (\d+) line\(s\) judged", outcome.evidence("stdout-json-rpc"))
    assert found, outcome.text
    assert int(found[1]) == int(found[2]) < 10, outcome.text
    assert outcome.verdicts["stdout-json-rpc"] == "fail"
    assert outcome.verdicts["initialize-version"] == "fail"
    assert outcome.verdicts["session-new-unique-ids"] == "inconclusive"


def test_an_agent_that_never_answers_fails_the_handshake_and_stops_the_run(
    hostile: dict[str, Outcome],
) -> None:
    outcome = hostile["silent"]
    assert f"no answer to initialize within {TIMEOUT_S:g} s" in outcome.evidence(
        "initialize-version"
    )
    assert outcome.verdicts["initialize-unsupported-version"] == "fail"
    assert outcome.verdicts["exit-after-eof"] == "fail"
    assert "answered no initialize" in outcome.stopped
    assert "not reached: two processes answered no initialize" in outcome.evidence(
        "session-new-unique-ids"
    )
    # Nothing to judge is never a pass.
    for rule in ("stdout-json-rpc", "schema-valid", "no-unadvertised-client-calls"):
        assert outcome.verdicts[rule] == "inconclusive", outcome.text


def test_an_agent_that_exits_at_once_is_reported_with_its_status_and_stderr(
    hostile: dict[str, Outcome],
) -> None:
    outcome = hostile["exits"]
    evidence = outcome.evidence("initialize-version")
    assert "exited with status 3" in evidence, evidence
    assert "SOME_API_KEY is not set" in evidence
    for rule in ("stdout-json-rpc", "schema-valid", "response-ids-echoed", "exit-after-eof"):
        assert outcome.verdicts[rule] == "inconclusive", outcome.text
    assert "pass" not in outcome.verdicts.values()


def test_a_child_holding_stdout_neither_stalls_the_check_nor_survives_it(
    hostile: dict[str, Outcome],
) -> None:
    outcome = hostile["child"]
    assert outcome.verdicts["initialize-version"] == "pass", outcome.text
    # The wrapper's own exit was timed, not its child's stdout: it passes on a quiet
    # machine, and on a loaded one it may miss the 2 s by a little, never by the child's life.
    evidence = outcome.evidence("exit-after-eof")
    exits = [float(s) for s in re.findall(r"exited ([\d.]+) s after its stdin ended", evidence)]
    assert outcome.verdicts["exit-after-eof"] == "pass" or (exits and max(exits) < 5), outcome.text


def test_a_flood_of_updates_is_judged_as_it_comes(hostile: dict[str, Outcome]) -> None:
    outcome = hostile["flood"]
    assert outcome.verdicts["nothing-after-prompt-response"] == "fail"
    assert outcome.verdicts["stdout-json-rpc"] == "pass"
    assert outcome.verdicts["schema-valid"] == "pass"


@pytest.mark.parametrize("shape", SHAPES)
def test_each_malformed_reply_is_a_finding_not_a_crash(
    hostile: dict[str, Outcome], shape: str
) -> None:
    first = hostile[shape]
    assert first.verdicts["initialize-version"] == "fail", first.text
    later = hostile[f"{shape}+"]
    assert later.verdicts["initialize-version"] == "pass", later.text
    assert later.verdicts["session-new-unique-ids"] == "fail", later.text


def test_the_deadline_cuts_a_run_short_and_says_so() -> None:
    outcomes = check_all(
        {"silent": python(HOSTILE / "silent.py")}, timeout_s=5, quiet_s=0.3, deadline_s=1.5
    )
    outcome = outcomes["silent"]
    assert outcome.deadline_passed
    assert "the --deadline of 1.5 s ran out during the handshake" in outcome.stopped
    assert "not reached: the --deadline of 1.5 s ran out" in outcome.evidence("initialize-version")
    assert "Stopped early: the --deadline" in outcome.text
    assert left_running(outcome.pids) == []
