"""A session's settings, when `session/new` offers them: its modes and its config options.

Each is switched to another value and back, so the rest of the run sees the
session as it was made.
"""

from __future__ import annotations

from typing import Any, Final

from acp_agent.adapters.check._context import Run
from acp_agent.adapters.check._probe import NoAnswer, Probe
from acp_agent.adapters.check._replies import Reply, dig, short
from acp_agent.adapters.check._rules import Verdict
from acp_agent.adapters.check._steps import missing
from protocol import methods

__all__ = ("RULE_IDS", "settings_rules")

RULE_IDS: Final = frozenset({"session-modes", "config-options"})


async def settings_rules(run: Run, probe: Probe, session_id: str, created: Reply) -> None:
    await _modes(run, probe, session_id, created.get("modes"))
    await _config_options(run, probe, session_id, created.get("configOptions"))


async def _modes(run: Run, probe: Probe, session_id: str, modes: Any) -> None:
    rule_id = "session-modes"
    if modes is None:
        run.find(rule_id, Verdict.NOT_APPLICABLE, "session/new offered no modes")
        return
    current = dig(modes, "currentModeId")
    available = dig(modes, "availableModes")
    ids = [dig(m, "id") for m in available] if isinstance(available, list) else []
    if current not in ids or not isinstance(current, str):
        run.find(
            rule_id,
            Verdict.FAIL,
            f"currentModeId {short(current, 40)} is not one of the modes offered: {short(ids)}",
        )
        return
    other = next((i for i in ids if isinstance(i, str) and i != current), None)
    if other is None:
        run.find(rule_id, Verdict.PASS, f"the one mode offered, {short(current, 40)}, is current")
        return
    try:
        reply = await probe.request(
            methods.SESSION_SET_MODE, {"sessionId": session_id, "modeId": other}
        )
        await probe.request(methods.SESSION_SET_MODE, {"sessionId": session_id, "modeId": current})
    except NoAnswer as exc:
        run.find(rule_id, missing(exc), f"session/set_mode: {exc.why}")
        return
    run.find(
        rule_id,
        Verdict.PASS if reply.ok else Verdict.FAIL,
        f"current {short(current, 40)} is offered; "
        f"session/set_mode to {short(other, 40)} -> {reply.describe()}",
    )


async def _config_options(run: Run, probe: Probe, session_id: str, options: Any) -> None:
    rule_id = "config-options"
    if not isinstance(options, list) or not options:
        run.find(rule_id, Verdict.NOT_APPLICABLE, "session/new offered no configOptions")
        return
    problems = _option_problems(options)
    switchable = [o for o in options if _other_value(o) is not None]
    # A mode or an effort rather than the model: switching models may need an account.
    switchable.sort(key=lambda o: dig(o, "category") in ("model", "model_config"))
    if problems or not switchable:
        run.find(
            rule_id,
            Verdict.FAIL if problems else Verdict.PASS,
            *(problems or [f"{len(options)} option(s), none with a second value to set"]),
        )
        return
    option = switchable[0]
    config_id, current = dig(option, "id"), dig(option, "currentValue")
    other = _other_value(option)
    try:
        reply = await probe.request(
            methods.SESSION_SET_CONFIG_OPTION,
            {"sessionId": session_id, "configId": config_id, "value": other},
        )
        await probe.request(
            methods.SESSION_SET_CONFIG_OPTION,
            {"sessionId": session_id, "configId": config_id, "value": current},
        )
    except NoAnswer as exc:
        run.find(rule_id, missing(exc), f"session/set_config_option: {exc.why}")
        return
    answered = reply.get("configOptions")
    back = answered if isinstance(answered, list) else []
    back_ids = {dig(o, "id") for o in back}
    lost = [dig(o, "id") for o in options if dig(o, "id") not in back_ids]
    value = next((dig(o, "currentValue") for o in back if dig(o, "id") == config_id), None)
    wrong = (
        [f"set_config_option {short(config_id, 40)} = {short(other, 40)} -> {reply.describe()}"]
        if not reply.ok or not isinstance(answered, list)
        else [f"the answer leaves out option(s) {short(lost)}"]
        if lost
        else [f"the answer has {short(config_id, 40)} = {short(value, 40)}, not {short(other, 40)}"]
        if value != other
        else []
    )
    run.find(
        rule_id,
        Verdict.FAIL if wrong else Verdict.PASS,
        *(
            wrong
            or [
                f"set {short(config_id, 40)} to {short(other, 40)}: "
                f"all {len(back)} option(s) answered, it set"
            ]
        ),
    )


def _option_problems(options: list[Any]) -> list[str]:
    """Boolean options nobody asked for, and current values that are not among the choices."""
    problems = []
    for option in options:
        name = short(dig(option, "id"), 40)
        if dig(option, "type") == "boolean":
            problems.append(f"option {name} is boolean; this client did not offer them")
        elif _values(option) and dig(option, "currentValue") not in _values(option):
            current = short(dig(option, "currentValue"), 40)
            problems.append(f"option {name}: currentValue {current} is not one of its values")
    return problems


def _other_value(option: Any) -> str | None:
    """A value of a select option other than its current one, if it offers one."""
    current = dig(option, "currentValue")
    return next((v for v in _values(option) if v != current), None)


def _values(option: Any) -> list[Any]:
    """The values a select option offers, flat or in groups."""
    choices = dig(option, "options")
    values: list[Any] = []
    for choice in choices if isinstance(choices, list) else []:
        group = dig(choice, "options")
        if isinstance(group, list):
            values.extend(dig(c, "value") for c in group)
        elif dig(choice, "value") is not None:
            values.append(dig(choice, "value"))
    return [v for v in values if isinstance(v, str)]
