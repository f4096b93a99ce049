"""Running `check` against many small agents at once, and what a test asks of each run.

The checker is asynchronous and its waits dominate, so one event loop runs several
checks side by side (`check_all`), each against real agent processes over real
pipes; a module runs its agents once and its tests read the outcomes. Timing is
never asserted: the bounds given are generous for agents that answer in
milliseconds.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pickle
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final, TypeVar

import attrs
import pytest

from acp_agent.adapters.check._command import exit_status
from acp_agent.adapters.check._report import report
from acp_agent.adapters.check._rules import Finding
from acp_agent.adapters.check._runs import Checker

__all__ = ("HERE", "Outcome", "check_all", "left_running", "once", "python")

HERE: Final = Path(__file__).resolve().parent
#: Checks run side by side (agents take milliseconds; the checker mostly waits).
_AT_ONCE: Final = 12
T = TypeVar("T")


@attrs.frozen
class Outcome:
    """One check of one agent: what it found and what it started."""

    findings: list[Finding]
    stopped: str
    deadline_passed: bool
    pids: list[int]

    @property
    def verdicts(self) -> dict[str, str]:
        return {f.rule.id: str(f.verdict) for f in self.findings}

    def evidence(self, rule_id: str) -> str:
        return "\n".join(next(f.evidence for f in self.findings if f.rule.id == rule_id))

    @property
    def status(self) -> int:
        return exit_status(self.findings, strict=False)

    @property
    def text(self) -> str:
        return report(self.findings, stopped=self.stopped)


async def _check(command: Sequence[str], limit: asyncio.Semaphore, **bounds: float) -> Outcome:
    async with limit:
        checker = Checker(command, **bounds)
        findings = await checker.run()
        return Outcome(findings, checker.stopped, checker.deadline_passed, checker.pids)


def check_all(
    commands: Mapping[str, Sequence[str]],
    *,
    timeout_s: float,
    quiet_s: float,
    deadline_s: float,
) -> dict[str, Outcome]:
    """Check every command (by name), several at once; each outcome by name."""

    async def run() -> dict[str, Outcome]:
        limit = asyncio.Semaphore(_AT_ONCE)
        bounds = {"timeout_s": timeout_s, "quiet_s": quiet_s, "deadline_s": deadline_s}
        outcomes = await asyncio.gather(*(_check(c, limit, **bounds) for c in commands.values()))
        return dict(zip(commands, outcomes, strict=True))

    return asyncio.run(run())


def python(script: Path, *args: str) -> list[str]:
    """The command that runs `script` (standard library only: no site, a quick start)."""
    return [sys.executable, "-S", str(script), *args]


def left_running(pids: Sequence[int]) -> list[int]:
    """The processes still alive (zombies aside) in the groups `pids` lead, or among
    `pids` themselves."""
    groups = set(pids)
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone while we looked
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ")".
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        pid = int(entry.name)
        if state != "Z" and (int(pgrp) in groups or pid in groups):
            alive.append(pid)
    return [p for p in alive if p != os.getpid()]


def once(factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """`compute()`, run once per test session even across xdist's workers: the first
    worker to ask computes it under a lock and leaves it for the others to read (a
    module's tests may be spread over several workers)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return compute()
    # The workers' temporary folders share a parent that is this session's own.
    shared = factory.getbasetemp().parent / f"check-{name}.pickle"
    with (shared.parent / f"check-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shared.exists():
            loaded: T = pickle.loads(shared.read_bytes())
            return loaded
        value = compute()
        shared.write_bytes(pickle.dumps(value))
        return value
