"""The session group: one process makes sessions, prompts one, and tries every session
method and setting the agent advertises, beside the JSON-RPC probes (an extension
request, an unknown method, unknown notifications)."""

from __future__ import annotations

from typing import Any, Final

from acp_agent.adapters.check import _prompts, _settings
from acp_agent.adapters.check._context import Run
from acp_agent.adapters.check._probe import NoAnswer, Probe
from acp_agent.adapters.check._replies import Reply, short
from acp_agent.adapters.check._rules import Verdict
from acp_agent.adapters.check._steps import (
    AUTH_REQUIRED,
    Inconclusive,
    advertises,
    listed_ids,
    missing,
    new_session,
    new_session_problem,
    ready,
)
from protocol import methods

__all__ = ("RULE_IDS", "sessions")

_OWN: Final = frozenset(
    {
        "session-new-unique-ids",
        "extension-request-answered",
        "unknown-method-32601",
        "unknown-notification-ignored",
        "additional-directories",
        "close-session",
        "delete-session",
        "delete-unknown-quietly",
    }
)
RULE_IDS: Final = _OWN | _prompts.RULE_IDS | _settings.RULE_IDS
_UNKNOWN_SESSION: Final = "sess_acp_agent_check_never_made"


async def sessions(run: Run) -> None:
    try:
        async with run.probe() as probe:
            try:
                await _all(run, probe)
            except Inconclusive as exc:
                run.undecided(RULE_IDS, str(exc))
    except NoAnswer as exc:
        run.undecided(RULE_IDS, exc.why)


async def _all(run: Run, probe: Probe) -> None:
    capabilities = (await ready(probe)).get("agentCapabilities")
    session_id, created = await _unique_ids(run, probe)
    await _protocol_probes(run, probe)
    await _prompts.turn_rules(run, probe, session_id, capabilities)
    await _settings.settings_rules(run, probe, session_id, created)
    await _additional_directories(run, probe, capabilities)
    await _close(run, probe, capabilities)
    await _delete(run, probe, capabilities)


async def _unique_ids(run: Run, probe: Probe) -> tuple[str, Reply]:
    """Two `session/new`: distinct ids; the first session and its reply."""
    replies: list[Reply] = []
    for _ in range(2):
        try:
            reply = await probe.request(
                methods.SESSION_NEW, {"cwd": str(run.scratch), "mcpServers": []}
            )
        except NoAnswer as exc:
            run.find("session-new-unique-ids", missing(exc), f"session/new: {exc.why}")
            raise Inconclusive(f"session/new: {exc.why}") from None
        problem = new_session_problem(reply)
        if problem:
            auth = reply.error_code == AUTH_REQUIRED
            verdict = Verdict.INCONCLUSIVE if auth else Verdict.FAIL
            run.find("session-new-unique-ids", verdict, f"session/new answered {problem}")
            raise Inconclusive(f"session/new answered {problem}")
        replies.append(reply)
    first, second = (str(r.get("sessionId")) for r in replies)
    run.find(
        "session-new-unique-ids",
        Verdict.PASS if first != second else Verdict.FAIL,
        f"two session/new -> {short(first, 60)}, {short(second, 60)}",
    )
    return first, replies[0]


async def _protocol_probes(run: Run, probe: Probe) -> None:
    """An extension request and an unknown method get answers; notifications do not."""
    custom = "_acp_agent_check/probe"
    answers: list[tuple[str, Reply]] = []
    try:
        reply = await probe.request(custom, {})
        run.find("extension-request-answered", Verdict.PASS, f"{custom} -> {reply.describe()}")
        answers.append((custom, reply))
    except NoAnswer as exc:
        run.find("extension-request-answered", missing(exc), f"{custom}: {exc.why}")
    unknown = "acp_agent_check/unknown"
    try:
        answers.append((unknown, await probe.request(unknown, {})))
    except NoAnswer as exc:
        run.find("unknown-method-32601", missing(exc), f"{unknown}: {exc.why}")
    for method, reply in answers:
        found = reply.error_code == -32601 and "result" not in reply.message
        run.find(
            "unknown-method-32601",
            Verdict.PASS if found else Verdict.FAIL,
            f"{method} -> {reply.describe()}",
        )
    with probe.watch("") as window:
        for name in ("_acp_agent_check/notified", "acp_agent_check/notified"):
            probe.notify(name, {})
        try:
            await probe.request("_acp_agent_check/after-notifications", {})
        except NoAnswer as exc:
            run.find(
                "unknown-notification-ignored",
                missing(exc),
                f"after two unknown notifications: {exc.why}",
            )
            return
    run.find(
        "unknown-notification-ignored",
        Verdict.FAIL if window.stray else Verdict.PASS,
        f"{window.stray} response(s) to notifications, the first: {short(window.first_stray)}"
        if window.stray
        else "no response to two unknown notifications; the next request was answered",
    )


async def _additional_directories(run: Run, probe: Probe, capabilities: Any) -> None:
    rule_id = "additional-directories"
    if not advertises(capabilities, "additionalDirectories"):
        run.find(rule_id, Verdict.NOT_APPLICABLE, "additionalDirectories not advertised")
        return
    extra = run.scratch / "additional"
    extra.mkdir(exist_ok=True)
    try:
        await new_session(run, probe, additionalDirectories=[str(extra)])
        run.find(
            rule_id, Verdict.PASS, f"session/new with additionalDirectories [{extra}] answered"
        )
    except Inconclusive as exc:
        run.find(rule_id, Verdict.FAIL, str(exc))


async def _close(run: Run, probe: Probe, capabilities: Any) -> None:
    if not advertises(capabilities, "close"):
        run.find(
            "close-session", Verdict.NOT_APPLICABLE, "sessionCapabilities.close not advertised"
        )
        return
    try:
        session_id, _ = await new_session(run, probe)
        closed = await probe.request(methods.SESSION_CLOSE, {"sessionId": session_id})
    except Inconclusive as exc:
        run.undecided(("close-session",), str(exc))
        return
    except NoAnswer as exc:
        run.find("close-session", missing(exc), f"session/close: {exc.why}")
        return
    empty = closed.ok and set(closed.result or {}) <= {"_meta"}
    run.find(
        "close-session",
        Verdict.PASS if empty else Verdict.FAIL,
        f"session/close of an idle session -> {closed.describe()}",
    )


async def _delete(run: Run, probe: Probe, capabilities: Any) -> None:
    rules = ("delete-session", "delete-unknown-quietly")
    if not advertises(capabilities, "delete"):
        for rule_id in rules:
            run.find(rule_id, Verdict.NOT_APPLICABLE, "sessionCapabilities.delete not advertised")
        return
    try:
        session_id, _ = await new_session(run, probe)
        deleted = await probe.request(methods.SESSION_DELETE, {"sessionId": session_id})
        unknown = await probe.request(methods.SESSION_DELETE, {"sessionId": _UNKNOWN_SESSION})
        listed = (
            await probe.request(methods.SESSION_LIST, {})
            if advertises(capabilities, "list")
            else None
        )
    except Inconclusive as exc:
        run.undecided(rules, str(exc))
        return
    except NoAnswer as exc:
        run.find("delete-session", missing(exc), f"session/delete: {exc.why}")
        run.undecided(rules, exc.why)
        return
    problems = [] if deleted.ok else [f"session/delete -> {deleted.describe()}"]
    if listed is None:
        looked = "session/list not advertised, so not looked for in a list"
    else:
        ids = listed_ids(listed) or []
        if session_id in ids:
            problems.append(f"{session_id} still listed after session/delete")
        looked = f"gone from session/list ({len(ids)} listed)"
    run.find(
        "delete-session",
        Verdict.FAIL if problems else Verdict.PASS,
        *(problems or [f"session/delete -> {deleted.describe()}; {looked}"]),
    )
    run.find(
        "delete-unknown-quietly",
        Verdict.PASS if unknown.ok else Verdict.FAIL,
        f"deleting a session never made -> {unknown.describe()}",
    )
