"""A whole `check`: the groups of rules in order, within a deadline, then the rules that
hold for every message every process wrote.

Groups go in order: the handshake, the session group, cancellation, persistence
(each in fresh processes of the agent); a group none of whose rules was asked for is
skipped, unless a rule about every message was asked (those need the messages). The
run stops early when the agent answers no `initialize` at all, or when the deadline
passes: the rules not reached say why. Whatever happens, every process it started is
ended with its group before `run()` returns, and a fault of the checker itself is
reported as such on the rules it touched, never as a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Final

import anyio

from acp_agent.adapters.check import _handshake, _persistence, _sessions, _turns
from acp_agent.adapters.check._context import EXIT_BOUND_S, Run
from acp_agent.adapters.check._probe import Probe
from acp_agent.adapters.check._rules import Finding, Verdict
from acp_agent.adapters.check._steps import DEFAULT_PROMPT

__all__ = ("DEFAULT_DEADLINE_S", "DEFAULT_QUIET_S", "DEFAULT_TIMEOUT_S", "Checker")

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S: Final = 30.0
#: How long after a response the checker watches for updates that must not come.
DEFAULT_QUIET_S: Final = 1.0
#: The whole run's bound: a slow agent with a real model needs a few minutes at most.
DEFAULT_DEADLINE_S: Final = 300.0
#: The rules judged on every message of every process.
EVERY_MESSAGE: Final = frozenset(
    {
        "stdout-json-rpc",
        "schema-valid",
        "schema-no-unknown-keys",
        "response-ids-echoed",
        "no-unadvertised-client-calls",
        "exit-after-eof",
    }
)
_GROUPS: Final[tuple[tuple[str, frozenset[str], Callable[[Run], Awaitable[None]]], ...]] = (
    ("the handshake", _handshake.RULE_IDS, _handshake.negotiation),
    ("the session group", _sessions.RULE_IDS, _sessions.sessions),
    ("cancellation", _turns.RULE_IDS, _turns.cancellation),
    ("persistence", _persistence.RULE_IDS, _persistence.persistence),
)


class Checker:
    """Checks one agent command against the rules in `only` (all when empty)."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        only: Collection[str] = (),
        prompt: str = DEFAULT_PROMPT,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        quiet_s: float = DEFAULT_QUIET_S,
        deadline_s: float = DEFAULT_DEADLINE_S,
    ) -> None:
        self.run_state = Run(
            command, only=only, prompt=prompt, timeout_s=timeout_s, quiet_s=quiet_s
        )
        self.deadline_s = deadline_s
        #: Set when the deadline ended the run early.
        self.deadline_passed = False

    @property
    def stopped(self) -> str:
        """Why the run ended before every rule was reached ("" when it did not)."""
        return self.run_state.stopped

    @property
    def pids(self) -> list[int]:
        """The process (and process group) id of every agent process started."""
        return self.run_state.pids

    async def run(self) -> list[Finding]:
        """Every asked-for rule's finding, in catalogue order."""
        run = self.run_state
        whole = bool(EVERY_MESSAGE & run.only)
        current = ""
        # The processes are read in this group; it ends once each was ended (`_close_all`).
        async with anyio.create_task_group() as processes:
            run.own_processes_in(processes)
            try:
                async with asyncio.timeout(self.deadline_s):
                    for name, rule_ids, group in _GROUPS:
                        if run.stopped:
                            break
                        if not (whole or rule_ids & run.only):
                            continue
                        current = name
                        await self._guarded(group, rule_ids)
            except TimeoutError:
                self.deadline_passed = True
                run.stopped = f"the --deadline of {self.deadline_s:g} s ran out during {current}"
            finally:
                with anyio.CancelScope(shield=True):
                    await _close_all(run)
                shutil.rmtree(run.scratch, ignore_errors=True)
                processes.cancel_scope.cancel()
        _judge_every_message(run)
        return run.findings()

    async def _guarded(
        self, group: Callable[[Run], Awaitable[None]], rule_ids: frozenset[str]
    ) -> None:
        """Run `group`; a fault of the checker's own leaves its rules undecided, said so."""
        try:
            await group(self.run_state)
        except Exception as exc:
            logger.debug("check group failed", exc_info=True)
            why = f"checker error: {type(exc).__name__}: {exc}"[:200]
            self.run_state.undecided(rule_ids, why)


async def _close_all(run: Run) -> None:
    """End every process still running (the deadline may have left some), at once."""
    async with anyio.create_task_group() as closing:
        for probe in run.probes:
            closing.start_soon(_close_quietly, probe)


async def _close_quietly(probe: Probe) -> None:
    try:
        await probe.close()
    except Exception:
        logger.debug("a process did not close cleanly", exc_info=True)


def _judge_every_message(run: Run) -> None:
    judge = run.judge
    lines = judge.lines
    seen = f"{lines} line(s) judged from {len(run.probes)} process(es)"
    skipped = (
        [f"{judge.oversized.count} line(s) over the checker's limit skipped, not judged"]
        if judge.oversized
        else []
    )
    run.find(
        "stdout-json-rpc",
        Verdict.FAIL if judge.not_json else Verdict.PASS if lines else Verdict.INCONCLUSIVE,
        *(
            [f"{judge.not_json.count} of {seen} not JSON:", *judge.not_json.evidence()]
            if judge.not_json
            else [f"{seen}, all JSON" if lines else "the agent wrote nothing to judge"]
        ),
        *skipped,
    )
    for rule_id, tally, what in (
        ("schema-valid", judge.invalid, "valid"),
        ("schema-no-unknown-keys", judge.undefined, "without undefined keys"),
    ):
        run.find(
            rule_id,
            Verdict.FAIL if tally else Verdict.PASS if judge.messages else Verdict.INCONCLUSIVE,
            *(
                [
                    f"{tally.count} problem(s), {tally.distinct}, in {tally.lines} "
                    f"of {judge.messages} message(s):",
                    *tally.evidence(),
                ]
                if tally
                else [
                    f"{judge.messages} message(s), all {what}"
                    if judge.messages
                    else "no messages to judge"
                ]
            ),
        )
    run.find(
        "response-ids-echoed",
        Verdict.FAIL
        if judge.ids_wrong
        else Verdict.PASS
        if judge.ids_echoed
        else Verdict.INCONCLUSIVE,
        *(
            [
                f"{judge.ids_wrong.count} response(s) with an id not as sent:",
                *judge.ids_wrong.evidence(),
            ]
            if judge.ids_wrong
            else [
                f"{judge.ids_echoed} response(s), each with its request's id as sent"
                if judge.ids_echoed
                else "no responses to judge"
            ]
        ),
    )
    calls = judge.unadvertised
    run.find(
        "no-unadvertised-client-calls",
        Verdict.FAIL if calls else Verdict.PASS if run.prompted else Verdict.INCONCLUSIVE,
        *(
            [f"{calls.count} call(s) to methods this client did not offer:", *calls.evidence()]
            if calls
            else ["none made" + ("" if run.prompted else "; no prompt ran, so nothing to judge")]
        ),
    )
    slow = [(label, e) for label, e in run.exits if e is None or e > EXIT_BOUND_S]
    run.find(
        "exit-after-eof",
        Verdict.FAIL if slow else Verdict.PASS if run.exits else Verdict.INCONCLUSIVE,
        (
            f"{slow[0][0]}: still running {EXIT_BOUND_S + 0.5:g} s after its stdin ended"
            if slow and slow[0][1] is None
            else f"{slow[0][0]}: exited {slow[0][1]:.1f} s after its stdin ended"
            if slow
            else f"{len(run.exits)} exit(s), the slowest "
            f"{max(e or 0.0 for _, e in run.exits):.2f} s after stdin ended"
            if run.exits
            else "no process was running when its stdin ended"
        ),
    )
