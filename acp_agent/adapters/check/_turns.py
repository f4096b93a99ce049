"""Ending a turn early: `session/cancel` during a prompt, and `session/close` during one.

Both need a prompt that is still running: a long one is sent, and the end is asked
for once its first update arrives (or after a bound). A prompt that ended first
leaves the rules undecided, never failed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final

from acp_agent.adapters.check._context import Run
from acp_agent.adapters.check._probe import NoAnswer, Probe, Window
from acp_agent.adapters.check._replies import Reply, short
from acp_agent.adapters.check._rules import Verdict
from acp_agent.adapters.check._steps import (
    CANCEL_PROMPT,
    Inconclusive,
    advertises,
    new_session,
    prompt,
    quiet_after,
    ready,
    text,
)
from protocol import methods

__all__ = ("RULE_IDS", "cancellation")

RULE_IDS: Final = frozenset(
    {"cancel-resolves-cancelled", "nothing-after-cancelled-response", "close-cancels-prompt"}
)
_CANCEL_RULES: Final = ("cancel-resolves-cancelled", "nothing-after-cancelled-response")
#: The longest wait for a prompt's first update before ending it anyway.
_FIRST_UPDATE_S: Final = 10.0


async def cancellation(run: Run) -> None:
    try:
        async with run.probe() as probe:
            try:
                capabilities = (await ready(probe)).get("agentCapabilities")
                await _cancel(run, probe)
                await _close_during_prompt(run, probe, capabilities)
            except Inconclusive as exc:
                run.undecided(RULE_IDS, str(exc))
    except NoAnswer as exc:
        run.undecided(RULE_IDS, exc.why)


async def _running_prompt(
    run: Run, probe: Probe, session_id: str, window: Window
) -> asyncio.Future[Reply]:
    """A long prompt, once it has sent its first update (`Inconclusive` if it ended first)."""
    turn = asyncio.ensure_future(
        prompt(run, probe, session_id, [text(CANCEL_PROMPT)], marks=window)
    )
    first_update = asyncio.ensure_future(window.first_update.wait())
    try:
        await asyncio.wait(
            (turn, first_update),
            timeout=min(run.timeout_s, _FIRST_UPDATE_S),
            return_when=asyncio.FIRST_COMPLETED,
        )
    except BaseException:
        turn.cancel()
        raise
    finally:
        first_update.cancel()
    if turn.done():
        reply = turn.result()  # raises Inconclusive / NoAnswer as the prompt did
        raise Inconclusive(f"the prompt ended before it could be ended early: {reply.describe()}")
    return turn


async def _cancel(run: Run, probe: Probe) -> None:
    session_id, _ = await new_session(run, probe)
    with probe.watch(session_id) as window:
        try:
            turn = await _running_prompt(run, probe, session_id, window)
        except Inconclusive as exc:
            run.undecided(_CANCEL_RULES, str(exc))
            return
        except NoAnswer as exc:
            run.undecided(_CANCEL_RULES, f"the prompt: {exc.why}")
            return
        probe.notify(methods.SESSION_CANCEL, {"sessionId": session_id})
        reply = await _outcome(run, "cancel-resolves-cancelled", turn, window, "session/cancel")
        if reply is None:
            run.undecided(_CANCEL_RULES, "the cancel was not seen to end the prompt")
            return
        await quiet_after(
            run, probe, window, "nothing-after-cancelled-response", ("mine-chunk", "mine-turn")
        )


async def _close_during_prompt(run: Run, probe: Probe, capabilities: Any) -> None:
    rule_id = "close-cancels-prompt"
    if not advertises(capabilities, "close"):
        run.find(rule_id, Verdict.NOT_APPLICABLE, "sessionCapabilities.close not advertised")
        return
    session_id, _ = await new_session(run, probe)
    with probe.watch(session_id) as window:
        try:
            turn = await _running_prompt(run, probe, session_id, window)
        except Inconclusive as exc:
            run.undecided((rule_id,), str(exc))
            return
        except NoAnswer as exc:
            run.undecided((rule_id,), f"the prompt: {exc.why}")
            return
        close = asyncio.ensure_future(
            probe.request(methods.SESSION_CLOSE, {"sessionId": session_id})
        )
        await _outcome(run, rule_id, turn, window, "session/close")
        # Its own answer is close-session's business; it is only waited for here.
        await asyncio.wait((close,), timeout=run.timeout_s)
        if close.done():
            close.exception()  # retrieved, so an unanswered close is no stray error
        else:
            close.cancel()


async def _outcome(
    run: Run, rule_id: str, turn: asyncio.Future[Reply], window: Window, how: str
) -> Reply | None:
    """The prompt's answer after `how` (sent now) ended it: stopReason cancelled passes.

    Another stop reason within `run.quiet_s` of the end being sent may be a turn that
    finished before the agent read it: that leaves the rule undecided (as the kit does).
    """
    sent = time.monotonic()
    try:
        reply = await turn
    except NoAnswer as exc:
        run.find(rule_id, Verdict.FAIL, f"after {how}, the prompt: {exc.why}")
        return None
    except Inconclusive as exc:
        run.find(rule_id, Verdict.FAIL, f"after {how}, {exc}")
        return None
    stop = reply.get("stopReason")
    answered = f"after {how} the prompt answered " + (
        f"stopReason {short(stop, 40)}" if reply.ok else reply.describe()
    )
    after_s = (window.answered or time.monotonic()) - sent
    raced = reply.ok and stop in ("end_turn", "max_tokens", "max_turn_requests", "refusal")
    if raced and after_s < run.quiet_s:
        run.find(
            rule_id,
            Verdict.INCONCLUSIVE,
            f"{answered} {after_s * 1000:.0f} ms later: it may have ended before reading it",
        )
        return None
    run.find(rule_id, Verdict.PASS if reply.ok and stop == "cancelled" else Verdict.FAIL, answered)
    return reply
