"""Ending a turn early: `session/cancel` during a prompt, and `session/close` during one.

Both need a prompt that is still running: a long one is sent, and the end is asked
for once its first update arrives (or after a bound). A prompt that ended first
leaves the rules undecided, never failed. The requests in flight run in a task
group of the step that sent them, which ends them when it ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

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


class _InFlight:
    """A request whose reply is taken later: it runs in a task of the step's group, and
    its reply, or what it raised, waits for `reply()`."""

    def __init__(self) -> None:
        self.done = asyncio.Event()
        self._reply: Reply | None = None
        self._error: Exception | None = None

    async def run(self, request: Callable[[], Awaitable[Reply]]) -> None:
        try:
            self._reply = await request()
        except Exception as exc:
            self._error = exc  # raised to whoever takes the reply
        finally:
            self.done.set()

    async def reply(self) -> Reply:
        """The reply, once it came; raises what the request raised."""
        await self.done.wait()
        if self._error is not None:
            raise self._error
        assert self._reply is not None
        return self._reply


async def _first_set(*events: asyncio.Event) -> None:
    """Return once any of `events` is set."""
    async with anyio.create_task_group() as waiting:

        async def wait(event: asyncio.Event) -> None:
            await event.wait()
            waiting.cancel_scope.cancel()

        for event in events:
            waiting.start_soon(wait, event)


async def _running_prompt(
    run: Run, probe: Probe, session_id: str, window: Window, requests: TaskGroup
) -> _InFlight:
    """A long prompt, once it has sent its first update (`Inconclusive` if it ended first)."""
    turn = _InFlight()
    requests.start_soon(
        turn.run, lambda: prompt(run, probe, session_id, [text(CANCEL_PROMPT)], marks=window)
    )
    with anyio.move_on_after(min(run.timeout_s, _FIRST_UPDATE_S)):
        await _first_set(turn.done, window.first_update)
    if turn.done.is_set():
        reply = await turn.reply()  # raises Inconclusive / NoAnswer as the prompt did
        raise Inconclusive(f"the prompt ended before it could be ended early: {reply.describe()}")
    return turn


async def _cancel(run: Run, probe: Probe) -> None:
    session_id, _ = await new_session(run, probe)
    with probe.watch(session_id) as window:
        async with anyio.create_task_group() as requests:
            try:
                await _cancel_prompt(run, probe, session_id, window, requests)
            finally:
                requests.cancel_scope.cancel()  # what is still in flight


async def _cancel_prompt(
    run: Run, probe: Probe, session_id: str, window: Window, requests: TaskGroup
) -> None:
    try:
        turn = await _running_prompt(run, probe, session_id, window, requests)
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
        async with anyio.create_task_group() as requests:
            try:
                await _close_prompt(run, probe, session_id, window, requests)
            finally:
                requests.cancel_scope.cancel()  # what is still in flight


async def _close_prompt(
    run: Run, probe: Probe, session_id: str, window: Window, requests: TaskGroup
) -> None:
    rule_id = "close-cancels-prompt"
    try:
        turn = await _running_prompt(run, probe, session_id, window, requests)
    except Inconclusive as exc:
        run.undecided((rule_id,), str(exc))
        return
    except NoAnswer as exc:
        run.undecided((rule_id,), f"the prompt: {exc.why}")
        return
    close = _InFlight()
    requests.start_soon(
        close.run, lambda: probe.request(methods.SESSION_CLOSE, {"sessionId": session_id})
    )
    await _outcome(run, rule_id, turn, window, "session/close")
    # Its own answer is close-session's business; it is only waited for here.
    with anyio.move_on_after(run.timeout_s):
        await close.done.wait()


async def _outcome(
    run: Run, rule_id: str, turn: _InFlight, window: Window, how: str
) -> Reply | None:
    """The prompt's answer after `how` (sent now) ended it: stopReason cancelled passes.

    Another stop reason within `run.quiet_s` of the end being sent may be a turn that
    finished before the agent read it: that leaves the rule undecided (as the kit does).
    """
    sent = time.monotonic()
    try:
        reply = await turn.reply()
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
