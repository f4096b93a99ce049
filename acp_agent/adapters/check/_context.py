"""One check of one agent command: its settings, the processes it started, its findings.

The groups of rules (`_handshake`, `_sessions`, `_turns`, `_persistence`) record
verdicts here with `find`, each with its evidence and, where a rule is checked in
more than one situation, the situation (`context`). A rule's verdict is the worst
of what was recorded for it: a failure anywhere fails it, and a situation that could
not be judged keeps it from passing. Every process is started through `probe()`,
which ends it (its whole process group) however the block is left; what reads it
runs in the task group of the whole check (`own_processes_in`), which waits for it.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Collection, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from anyio.abc import TaskGroup

from acp_agent.adapters.check._judge import WireJudge
from acp_agent.adapters.check._probe import NoAnswer, Probe
from acp_agent.adapters.check._process import StartSoon
from acp_agent.adapters.check._rules import RULES, Finding, Verdict, rule

__all__ = ("EXIT_BOUND_S", "Run")

#: How long the agent may take to exit after its stdin ends (ACP-SHUTDOWN-001).
EXIT_BOUND_S: Final = 2.0
#: Worst first: the verdict a rule gets from all that was recorded for it.
_SEVERITY: Final = (Verdict.FAIL, Verdict.INCONCLUSIVE, Verdict.PASS, Verdict.NOT_APPLICABLE)


class Run:
    """The state of one `check`: what it asks, what it started, what it found."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        only: Collection[str],
        prompt: str,
        timeout_s: float,
        quiet_s: float,
    ) -> None:
        self.command = list(command)
        self.only = set(only) or {r.id for r in RULES}
        self.prompt = prompt
        self.timeout_s = timeout_s
        self.quiet_s = quiet_s
        #: The cwd of every session the checker makes (agents may write there).
        self.scratch = Path(tempfile.mkdtemp(prefix="acp-agent-check-"))
        self.judge = WireJudge()
        #: Starts a task in the check's task group (`own_processes_in`).
        self._start_soon: StartSoon | None = None
        self.probes: list[Probe] = []
        #: (process, seconds to exit after its stdin ended, None when it did not in time).
        self.exits: list[tuple[str, float | None]] = []
        #: Whether any prompt was answered (so the agent had a turn in which to misbehave).
        self.prompted = False
        #: Why the rules still to come were not reached ("" while they may be).
        self.stopped = ""
        self._found: dict[str, list[tuple[Verdict, tuple[str, ...]]]] = {}

    # --- findings ----------------------------------------------------------------------

    def find(self, rule_id: str, verdict: Verdict, *evidence: str, context: str = "") -> None:
        """Record a verdict on `rule_id`, in `context` ("fresh process", say) if given."""
        lines = tuple(f"{context}: {e}" if context else e for e in evidence if e)
        self._found.setdefault(rule_id, []).append((verdict, lines))

    def undecided(self, rule_ids: Iterable[str], why: str, *, context: str = "") -> None:
        """Rules not yet decided cannot be, for the reason `why`; in a `context`, the
        rules cannot be decided there, whatever was found elsewhere."""
        for rule_id in rule_ids:
            if context or rule_id not in self._found:
                self.find(rule_id, Verdict.INCONCLUSIVE, why, context=context)

    def decided(self, rule_id: str) -> bool:
        return rule_id in self._found

    def findings(self) -> list[Finding]:
        """Every asked-for rule's finding, in catalogue order."""
        return [self._finding(r.id) for r in RULES if r.id in self.only]

    def _finding(self, rule_id: str) -> Finding:
        entries = self._found.get(rule_id)
        if not entries:
            why = f"not reached: {self.stopped}" if self.stopped else "not reached"
            return Finding(rule(rule_id), Verdict.INCONCLUSIVE, (why,))
        entries = sorted(entries, key=lambda e: _SEVERITY.index(e[0]))
        evidence = tuple(line for _, lines in entries for line in lines)
        return Finding(rule(rule_id), entries[0][0], evidence)

    # --- processes ---------------------------------------------------------------------

    def own_processes_in(self, task_group: TaskGroup) -> None:
        """Read the processes in `task_group`: the check's, which ends (waiting for them)
        only once every process has been ended."""
        self._start_soon = task_group.start_soon

    @asynccontextmanager
    async def probe(self) -> AsyncIterator[Probe]:
        """A new process of the agent for the block; ended with its group afterwards.

        Left normally, the process first gets `EXIT_BOUND_S` (and a little) to exit on
        its own once its stdin ends; left by an exception (the deadline), it is ended
        at once. `NoAnswer` when the command cannot be started.
        """
        if self._start_soon is None:
            raise RuntimeError("a check starts processes only inside its task group")
        probe = Probe(
            self.command,
            start_soon=self._start_soon,
            judge=self.judge,
            timeout_s=self.timeout_s,
            label=f"run {len(self.probes) + 1}",
        )
        self.probes.append(probe)
        try:
            await probe.start()
        except OSError as exc:
            raise NoAnswer(
                f"the agent could not be started: {exc}", gone=True, before=True
            ) from None
        left_normally = False
        try:
            yield probe
            left_normally = True
        finally:
            if left_normally and not probe.gone:
                # Waited a little past the bound: later than that fails the rule however
                # late; once one process was that slow, the others are not waited for.
                slow = any(e is None for _, e in self.exits)
                waited = await probe.process.end_input(0.2 if slow else EXIT_BOUND_S + 0.5)
                self.exits.append((probe.label, waited))
            await probe.close()

    @property
    def pids(self) -> list[int]:
        """The process (and group) id of every process started."""
        return [p.process.pid for p in self.probes if p.process.pid is not None]
