"""Random well-formed and malformed replies to each of `check`'s probes: a report and an
exit status every time, never a fault of the checker, nothing left running.

An agent (`hostile/scripted.py`) answers each method with the lines a drawn plan
gives it: a good result, a good result with one member of any JSON shape, any JSON
at all, an error of any shape, both or neither, the wrong id, garbage, a batch, an
update of any shape, several of these, or nothing. Each example checks six plans
side by side. The default run is a bounded sample; the thorough one is `slow`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_agent.adapters.check._rules import RULES
from tests.check.support import HERE, check_all, left_running, python

SCRIPTED = HERE / "hostile" / "scripted.py"
_EVERYTHING: Final = {
    "protocolVersion": 1,
    "agentCapabilities": {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
        "sessionCapabilities": {
            k: {} for k in ("list", "close", "delete", "resume", "additionalDirectories")
        },
    },
    "agentInfo": {"name": "scripted", "version": "1"},
}
_SELECT: Final = {
    "id": "mode",
    "name": "Mode",
    "type": "select",
    "currentValue": "a",
    "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}],
}
#: A good result for each method the checker calls.
GOOD: Final[dict[str, Any]] = {
    "initialize": _EVERYTHING,
    "session/new": {
        "sessionId": "$NEW",
        "modes": {
            "currentModeId": "a",
            "availableModes": [{"id": "a", "name": "A"}, {"id": "b", "name": "B"}],
        },
        "configOptions": [_SELECT],
    },
    "session/prompt": {"stopReason": "end_turn"},
    "session/list": {"sessions": [{"sessionId": "$SID", "cwd": "/tmp"}]},
    "session/load": {},
    "session/resume": {},
    "session/close": {},
    "session/delete": {},
    "session/set_mode": {},
    "session/set_config_option": {"configOptions": [_SELECT]},
    "_acp_agent_check/probe": {},
    "acp_agent_check/unknown": {},
    "_acp_agent_check/after-notifications": {},
}


def json_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=12)
        | st.sampled_from(["$ID", "$NEW", "$SID", "end_turn", "cancelled", "terminal"])
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=max_leaves,
    )


def results(method: str) -> st.SearchStrategy[Any]:
    good = GOOD[method]
    changed = (
        st.builds(
            lambda key, value: {**good, key: value}, st.sampled_from(sorted(good)), json_values()
        )
        if good
        else st.nothing()
    )
    # Mostly good, or good but for one member, so the probes behind this one run too.
    return st.one_of(st.just(good), st.just(good), changed, changed, json_values())


errors = st.one_of(
    st.fixed_dictionaries({"code": st.integers(-33000, -32000), "message": st.text(max_size=20)}),
    json_values(),
)


def lines(method: str) -> st.SearchStrategy[dict[str, Any]]:
    ids = st.sampled_from(["$ID"] * 6 + ["$ID_TEXT", None, 999, ["$ID"]])
    bodies = st.one_of(
        results(method).map(lambda r: {"result": r}),
        errors.map(lambda e: {"error": e}),
        st.tuples(results(method), errors).map(lambda re: {"result": re[0], "error": re[1]}),
        st.just({}),
    )
    response = st.builds(
        lambda jsonrpc, msg_id, body: {"json": {"jsonrpc": jsonrpc, "id": msg_id, **body}},
        st.sampled_from(["2.0", "2.0", "2.0", "1.0"]),
        ids,
        bodies,
    )
    update = st.builds(
        lambda sid, update: {
            "json": {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": sid, "update": update},
            }
        },
        st.sampled_from(["$SID", "sess_other", 5]),
        json_values() | st.fixed_dictionaries({"sessionUpdate": json_values(2)}),
    )
    raw = st.sampled_from(["garbage", "[1, 2]", "[" * 3000, "{}", "null", "\x00\xff"]).map(
        lambda text: {"raw": text}
    )
    return st.one_of(response, response, response, update, raw)


def answers(method: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    """What `method` is answered with: mostly one response with a result that is good or
    nearly (so the probes behind it run too), else any few lines, or none."""
    one = results(method).map(lambda r: [{"json": {"jsonrpc": "2.0", "id": "$ID", "result": r}}])
    return st.one_of(one, one, one, st.lists(lines(method), max_size=3))


plans = st.fixed_dictionaries({method: answers(method) for method in GOOD})


def check_plans(drawn: list[dict[str, Any]]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="check-fuzz-"))
    commands = {}
    for n, plan in enumerate(drawn):
        path = folder / f"plan-{n}.json"
        path.write_text(json.dumps(plan))
        commands[str(n)] = python(SCRIPTED, str(path))
    outcomes = check_all(commands, timeout_s=0.3, quiet_s=0.05, deadline_s=30)
    for name, outcome in outcomes.items():
        plan = drawn[int(name)]
        assert [f.rule.id for f in outcome.findings] == [r.id for r in RULES], plan
        assert outcome.status in (0, 1)
        assert not outcome.deadline_passed, (plan, outcome.text)
        assert "checker error" not in outcome.text, (plan, outcome.text)
        assert left_running(outcome.pids) == [], plan


_SETTINGS: Final = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


@pytest.mark.timeout(120)
@settings(max_examples=4, **_SETTINGS)
@given(drawn=st.lists(plans, min_size=6, max_size=6))
def test_any_replies_to_the_probes_give_a_report_and_an_exit_status(
    drawn: list[dict[str, Any]],
) -> None:
    check_plans(drawn)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@settings(max_examples=100, **_SETTINGS)
@given(drawn=st.lists(plans, min_size=6, max_size=6))
def test_any_replies_thoroughly(drawn: list[dict[str, Any]]) -> None:
    check_plans(drawn)
