"""Sessions that outlive a turn: listing, loading and resuming them, in both situations
where an agent may behave differently: on the connection that made them, and in a
fresh process (as after a restart, or from another client).

One process makes a session it prompts and one it never prompts, and lists, loads
and resumes them on its own connection; then a fresh process lists and loads them,
and another resumes them. Each finding names its situation.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from acp_agent.adapters.check._context import Run
from acp_agent.adapters.check._probe import NoAnswer, Probe
from acp_agent.adapters.check._replies import Reply, dig
from acp_agent.adapters.check._rules import Verdict
from acp_agent.adapters.check._steps import (
    Inconclusive,
    advertises,
    listed_ids,
    missing,
    new_session,
    prompt,
    quiet_after,
    ready,
    text,
)
from protocol import methods

__all__ = ("RULE_IDS", "persistence")

_LOAD_RULES: Final = (
    "load-replays-before-response",
    "nothing-after-load-response",
    "load-never-prompted",
)
_RESUME_RULES: Final = ("resume-replays-nothing", "resume-never-prompted")
_LIST_RULES: Final = ("list-sessions", "list-finds-sessions")
RULE_IDS: Final = frozenset({*_LOAD_RULES, *_RESUME_RULES, *_LIST_RULES})
#: The rules that need the prompted session.
_NEED_PROMPTED: Final = (
    "load-replays-before-response",
    "nothing-after-load-response",
    "resume-replays-nothing",
    "list-finds-sessions",
)
SAME, FRESH = "same connection", "fresh process"
#: Pages of `session/list` followed when looking for a session.
_PAGES: Final = 5


async def persistence(run: Run) -> None:
    try:
        async with run.probe() as maker:
            try:
                capabilities = (await ready(maker)).get("agentCapabilities")
                never, _ = await new_session(run, maker)
                prompted = await _prompted_session(run, maker)
            except Inconclusive as exc:
                run.undecided(RULE_IDS, str(exc))
                return
            await _reopen(run, maker, capabilities, prompted, never, SAME)
    except NoAnswer as exc:
        run.undecided(RULE_IDS, exc.why)
        return
    load, listing = dig(capabilities, "loadSession") is True, advertises(capabilities, "list")
    if load or listing:
        await _fresh(run, _only(load=load, listing=listing), prompted, never)
    if advertises(capabilities, "resume"):
        await _fresh(run, _only(resume=True), prompted, never)


def _only(*, load: bool = False, listing: bool = False, resume: bool = False) -> dict[str, Any]:
    """The capabilities to exercise in one fresh process (each in its own, so one
    method's effects are not another's starting point)."""
    session: dict[str, Any] = {}
    if listing:
        session["list"] = {}
    if resume:
        session["resume"] = {}
    return {"loadSession": load, "sessionCapabilities": session}


async def _fresh(run: Run, capabilities: dict[str, Any], prompted: str | None, never: str) -> None:
    """In a new process: `capabilities` exercised on sessions an earlier one made."""
    asked = _asked(capabilities)
    try:
        async with run.probe() as probe:
            try:
                await ready(probe)
            except Inconclusive as exc:
                run.undecided(asked, str(exc), context=FRESH)
                return
            await _reopen(run, probe, capabilities, prompted, never, FRESH)
    except NoAnswer as exc:
        run.undecided(asked, exc.why, context=FRESH)


def _asked(capabilities: dict[str, Any]) -> list[str]:
    rules: list[str] = []
    if advertises(capabilities, "list"):
        rules += _LIST_RULES
    if capabilities.get("loadSession") is True:
        rules += _LOAD_RULES
    if advertises(capabilities, "resume"):
        rules += _RESUME_RULES
    return rules


async def _prompted_session(run: Run, probe: Probe) -> str | None:
    """A session with a turn in it; None (its rules undecided) when no prompt can run."""
    session_id, _ = await new_session(run, probe)
    try:
        await prompt(run, probe, session_id, [text(run.prompt)], marks=None)
    except Inconclusive as exc:
        run.undecided(_NEED_PROMPTED, str(exc))
        return None
    except NoAnswer as exc:
        run.undecided(_NEED_PROMPTED, f"the prompt: {exc.why}")
        return None
    # Whatever of the turn comes late settles now, so it is not taken for a replay's.
    await asyncio.sleep(run.quiet_s)
    return session_id


async def _reopen(
    run: Run, probe: Probe, capabilities: Any, prompted: str | None, never: str, context: str
) -> None:
    if advertises(capabilities, "list"):
        await _list(run, probe, prompted, context)
    elif context == SAME:
        for rule_id in _LIST_RULES:
            run.find(rule_id, Verdict.NOT_APPLICABLE, "sessionCapabilities.list not advertised")
    if dig(capabilities, "loadSession") is True:
        await _load(run, probe, prompted, never, context)
    elif context == SAME:
        for rule_id in _LOAD_RULES:
            run.find(rule_id, Verdict.NOT_APPLICABLE, "loadSession not advertised")
    if advertises(capabilities, "resume"):
        await _resume(run, probe, prompted, never, context)
    elif context == SAME:
        for rule_id in _RESUME_RULES:
            run.find(rule_id, Verdict.NOT_APPLICABLE, "sessionCapabilities.resume not advertised")


async def _list(run: Run, probe: Probe, prompted: str | None, context: str) -> None:
    empty_dir = run.scratch / "no-sessions-here"
    empty_dir.mkdir(exist_ok=True)
    try:
        everything = await probe.request(methods.SESSION_LIST, {})
        none = await probe.request(methods.SESSION_LIST, {"cwd": str(empty_dir)})
        found = await _find_listed(probe, str(run.scratch), prompted) if prompted else None
    except NoAnswer as exc:
        run.find("list-sessions", missing(exc), f"session/list: {exc.why}", context=context)
        run.undecided(("list-finds-sessions",), exc.why, context=context)
        return
    listed, unmatched = listed_ids(everything), listed_ids(none)
    problems = []
    if listed is None:
        problems.append(f"session/list -> {everything.describe()}")
    if unmatched != []:
        problems.append(f"session/list of a cwd with no sessions -> {none.describe()}")
    run.find(
        "list-sessions",
        Verdict.FAIL if problems else Verdict.PASS,
        *(problems or [f"{len(listed or [])} session(s) listed; none for a cwd without any"]),
        context=context,
    )
    if found is not None:
        run.find(
            "list-finds-sessions",
            Verdict.PASS if found else Verdict.FAIL,
            f"the prompted session {prompted} is "
            + ("listed" if found else f"not listed for its cwd ({_PAGES} page(s) at most)"),
            context=context,
        )


async def _find_listed(probe: Probe, cwd: str, session_id: str) -> bool:
    """Whether `session/list` for `cwd` lists `session_id`, following its pages."""
    cursor: Any = None
    for _ in range(_PAGES):
        params = {"cwd": cwd} if cursor is None else {"cwd": cwd, "cursor": cursor}
        reply = await probe.request(methods.SESSION_LIST, params)
        if session_id in (listed_ids(reply) or []):
            return True
        cursor = reply.get("nextCursor")
        if not isinstance(cursor, str):
            return False
    return False


def _params(run: Run, session_id: str) -> dict[str, Any]:
    return {"sessionId": session_id, "cwd": str(run.scratch), "mcpServers": []}


async def _load(run: Run, probe: Probe, prompted: str | None, never: str, context: str) -> None:
    if prompted is not None:
        with probe.watch(prompted) as window:
            try:
                reply = await probe.request(
                    methods.SESSION_LOAD, _params(run, prompted), marks=window
                )
            except NoAnswer as exc:
                run.find(_LOAD_RULES[0], missing(exc), f"session/load: {exc.why}", context=context)
                run.undecided((_LOAD_RULES[1],), exc.why, context=context)
                reply = None
            if reply is not None and not reply.ok:
                run.find(
                    _LOAD_RULES[0],
                    Verdict.FAIL,
                    f"session/load of the prompted session -> {reply.describe()}",
                    context=context,
                )
                run.undecided((_LOAD_RULES[1],), "the load failed", context=context)
            elif reply is not None:
                replayed = window.count("mine-chunk", "mine-turn", after=False)
                run.find(
                    _LOAD_RULES[0],
                    Verdict.PASS if replayed else Verdict.FAIL,
                    f"{replayed} message or tool-call update(s) replayed before the response",
                    context=context,
                )
                await quiet_after(
                    run, probe, window, _LOAD_RULES[1], ("mine-chunk", "mine-turn"), context=context
                )
    await _opens(run, probe, methods.SESSION_LOAD, never, _LOAD_RULES[2], context)


async def _resume(run: Run, probe: Probe, prompted: str | None, never: str, context: str) -> None:
    rule_id = _RESUME_RULES[0]
    if prompted is not None:
        with probe.watch(prompted) as window:
            try:
                reply = await probe.request(
                    methods.SESSION_RESUME, _params(run, prompted), marks=window
                )
            except NoAnswer as exc:
                run.find(rule_id, missing(exc), f"session/resume: {exc.why}", context=context)
                reply = None
            if reply is not None and not reply.ok:
                # Nothing was replayed: what failed is resuming, which the next rule asks.
                run.find(
                    rule_id,
                    Verdict.INCONCLUSIVE,
                    f"session/resume of the prompted session -> {reply.describe()}",
                    context=context,
                )
            elif reply is not None:
                chunks = window.count("mine-chunk", after=False)
                run.find(
                    rule_id,
                    Verdict.FAIL if chunks else Verdict.PASS,
                    f"{chunks} message chunk(s) before the response, the first: "
                    f"{window.first('mine-chunk', after=False)}"
                    if chunks
                    else "no message chunks before the response",
                    context=context,
                )
    await _opens(run, probe, methods.SESSION_RESUME, never, _RESUME_RULES[1], context)


async def _opens(
    run: Run, probe: Probe, method: str, session_id: str, rule_id: str, context: str
) -> None:
    """`method` (load or resume) of the never-prompted session answers a result."""
    try:
        reply: Reply = await probe.request(method, _params(run, session_id))
    except NoAnswer as exc:
        run.find(rule_id, missing(exc), f"{method}: {exc.why}", context=context)
        return
    run.find(
        rule_id,
        Verdict.PASS if reply.ok else Verdict.FAIL,
        f"{method} of a never-prompted session -> "
        + ("answered" if reply.ok else reply.describe()),
        context=context,
    )
