"""The handshake: `initialize` in two fresh processes, with version 1 and one the agent
cannot know (65535), and what the first answer advertises about the agent itself."""

from __future__ import annotations

from typing import Final

from acp_agent.adapters.check._context import Run
from acp_agent.adapters.check._probe import NoAnswer
from acp_agent.adapters.check._replies import Reply, dig, short
from acp_agent.adapters.check._rules import Verdict

__all__ = ("RULE_IDS", "negotiation")

RULE_IDS: Final = frozenset(
    {"initialize-version", "initialize-unsupported-version", "agent-info", "auth-methods"}
)
_UNKNOWN_VERSION: Final = 65535


async def negotiation(run: Run) -> None:
    """Both initializations; when neither is answered at all, the rest of the run is not
    worth starting (`run.stopped` says why)."""
    unanswered: list[str] = []
    for version, rule_id in (
        (1, "initialize-version"),
        (_UNKNOWN_VERSION, "initialize-unsupported-version"),
    ):
        reply = await _initialize(run, version)
        if isinstance(reply, str):
            run.find(rule_id, Verdict.FAIL, f"initialize({version}): {reply}")
            unanswered.append(reply)
            continue
        answered = reply.get("protocolVersion")
        if not reply.ok:
            run.find(rule_id, Verdict.FAIL, f"initialize({version}) answered {reply.problem()}")
            continue
        if version == 1:
            ok = answered == 1 and not isinstance(answered, bool)
            _advertised(run, reply)
        else:
            ok = (
                isinstance(answered, int) and not isinstance(answered, bool) and answered != version
            )
        run.find(
            rule_id,
            Verdict.PASS if ok else Verdict.FAIL,
            f"initialize({version}) -> protocolVersion {short(answered, 40)}",
        )
    if len(unanswered) == 2:
        run.undecided(("agent-info", "auth-methods"), f"initialize: {unanswered[0]}")
        run.stopped = f"two processes answered no initialize ({unanswered[0]})"


async def _initialize(run: Run, version: int) -> Reply | str:
    """`initialize(version)` in a fresh process: the reply, or why there is none."""
    try:
        async with run.probe() as probe:
            try:
                return await probe.initialize(version)
            except NoAnswer as exc:
                # Caught inside, so the process still gets its chance to exit on its own.
                return exc.why
    except NoAnswer as exc:
        return exc.why


def _advertised(run: Run, reply: Reply) -> None:
    """What the version-1 answer says of the agent: its name and its auth methods."""
    info = reply.get("agentInfo")
    name, version = dig(info, "name"), dig(info, "version")
    has_info = isinstance(name, str) and name and isinstance(version, str) and version
    run.find(
        "agent-info",
        Verdict.PASS if has_info else Verdict.FAIL,
        f"agentInfo: {short(info, 100)}" if info is not None else "no agentInfo in the answer",
    )
    methods_ = reply.get("authMethods")
    listed = methods_ if isinstance(methods_, list) else []
    terminal = [m for m in listed if dig(m, "type") == "terminal"]
    run.find(
        "auth-methods",
        Verdict.FAIL if terminal else Verdict.PASS,
        f"a terminal auth method, unasked: {short(terminal[0])}"
        if terminal
        else f"{len(listed)} auth method(s), none of type terminal",
    )
