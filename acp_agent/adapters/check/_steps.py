"""Steps every group of rules takes: get ready, make a session, prompt, watch for quiet.

Each step reads the agent's reply defensively (`Reply`) and turns a reply it cannot
build on into `Inconclusive`, whose text is the evidence for the rules that needed it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from acp_agent.adapters.check._context import Run
from acp_agent.adapters.check._probe import NoAnswer, Probe, Window
from acp_agent.adapters.check._replies import Reply, dig, short
from acp_agent.adapters.check._rules import Verdict
from protocol import methods

__all__ = (
    "AUTH_REQUIRED",
    "CANCEL_PROMPT",
    "DEFAULT_PROMPT",
    "Inconclusive",
    "advertises",
    "listed_ids",
    "missing",
    "new_session",
    "new_session_problem",
    "prompt",
    "quiet_after",
    "ready",
    "text",
)

DEFAULT_PROMPT: Final = "Say hello in one word."
#: A prompt that keeps a model busy long enough to be cancelled.
CANCEL_PROMPT: Final = (
    "Count from 1 to 300, one number per line, and say a sentence about each number."
)
#: The error code of `auth_required`: an agent that needs a login cannot be prompted.
AUTH_REQUIRED: Final = -32000


class Inconclusive(Exception):
    """A rule's prerequisite failed: the rule cannot be decided on this agent."""


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def advertises(capabilities: Any, name: str) -> bool:
    """Whether `sessionCapabilities.<name>` is advertised (an object; null or absent: not)."""
    return isinstance(dig(capabilities, "sessionCapabilities", name), dict)


def missing(exc: NoAnswer) -> Verdict:
    """The verdict on a rule whose request got no answer: failed, unless the agent was
    gone before it was asked (then nothing was asked of it)."""
    return Verdict.INCONCLUSIVE if exc.before else Verdict.FAIL


def listed_ids(reply: Reply) -> list[Any] | None:
    """The session ids a `session/list` reply lists; None when it has no sessions array."""
    sessions = reply.get("sessions")
    if not reply.ok or not isinstance(sessions, list):
        return None
    return [dig(s, "sessionId") for s in sessions]


async def ready(probe: Probe) -> Reply:
    """`initialize` with version 1; its reply (`Inconclusive` when it cannot be built on)."""
    try:
        reply = await probe.initialize()
    except NoAnswer as exc:
        raise Inconclusive(f"initialize: {exc.why}") from None
    if not reply.ok:
        raise Inconclusive(f"initialize answered {reply.problem()}")
    return reply


async def new_session(run: Run, probe: Probe, **extra: Any) -> tuple[str, Reply]:
    """A new session rooted in the scratch directory: its id and the whole reply."""
    params = {"cwd": str(run.scratch), "mcpServers": [], **extra}
    try:
        reply = await probe.request(methods.SESSION_NEW, params)
    except NoAnswer as exc:
        raise Inconclusive(f"session/new: {exc.why}") from None
    session_id = reply.get("sessionId")
    if not reply.ok or not isinstance(session_id, str) or not session_id:
        raise Inconclusive(f"session/new answered {new_session_problem(reply)}")
    return session_id, reply


def new_session_problem(reply: Reply) -> str:
    """Why a `session/new` reply gives no session ("" when it gives one)."""
    if reply.error_code == AUTH_REQUIRED:
        return f"{reply.problem()} (the agent needs a login)"
    session_id = reply.get("sessionId")
    if reply.problem():
        return reply.problem()
    if not isinstance(session_id, str) or not session_id:
        return f"no sessionId string: {short(reply.result, 60)}"
    return ""


async def prompt(
    run: Run, probe: Probe, session_id: str, blocks: list[dict[str, Any]], *, marks: Window | None
) -> Reply:
    """Prompt `session_id` with `blocks`; the reply. `Inconclusive` when it is an error
    (no model, a login needed): the rules about a turn have nothing to judge then."""
    reply = await probe.request(
        methods.SESSION_PROMPT, {"sessionId": session_id, "prompt": blocks}, marks=marks
    )
    if "error" in reply.message:
        why = "needs authentication" if reply.error_code == AUTH_REQUIRED else "failed"
        raise Inconclusive(f"the prompt {why}: {reply.problem()}")
    run.prompted = True
    return reply


async def quiet_after(
    run: Run,
    probe: Probe,
    window: Window,
    rule_id: str,
    groups: tuple[str, ...],
    *,
    context: str = "",
) -> None:
    """Watch `window` for `run.quiet_s` after its response: an update of `groups` then
    fails `rule_id`; session-level ones are shown; an agent that went away meanwhile
    leaves it undecided."""
    await asyncio.sleep(run.quiet_s)
    late = window.count(*groups, after=True)
    other = window.count("mine-session", after=True) if "mine-session" not in groups else 0
    if late:
        run.find(
            rule_id,
            Verdict.FAIL,
            f"{late} update(s) after the response, the first: {window.first(*groups, after=True)}",
            context=context,
        )
    elif probe.gone:
        run.find(
            rule_id, Verdict.INCONCLUSIVE, f"during the watch, {probe.gone_why()}", context=context
        )
    else:
        note = (
            f" ({other} session-level update(s): {window.first('mine-session', after=True)})"
            if other
            else ""
        )
        run.find(
            rule_id,
            Verdict.PASS,
            f"nothing in the {run.quiet_s:g} s after the response{note}",
            context=context,
        )
