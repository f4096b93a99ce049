"""What the command sandbox adds to each command the agent runs.

Usage (with the virtual environment that has acp-agent installed, bwrap on PATH):

    .venv/bin/python benchmarks/sandbox.py [--runs N]

Runs `true` and a tiny Python command (this interpreter's `-c 'print(1)'`), each as the shell
tool runs it (`bash -c`), through the agent's own local command path
(`tools._process.run_local`),
with no sandbox and in the sandbox of the person's default policy (this machine's
home: its existing tool caches and hidden places mounted, a workspace and a
private temp folder), and the command line an editor's terminal runs for it
(`Sandbox.in_terminal`: `bash -c` of it in the sandbox, after the check that the
sandbox starts there, as a session's first command in a terminal; then `tried`, as its
later ones), run as a plain local process as an editor would, all
interleaved so they see the same machine noise. Reports median and p90 of each,
the ratio to plain, and the milliseconds added at the median, against the target:
under 20 ms added per command.

It is a report: nothing here asserts a time. Linux only (bubblewrap).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from acp_agent.paths import resolve_paths
from acp_agent.sandbox import Sandbox, probe_sandbox, sandbox_policy
from acp_agent.tools._process import run_local

#: What the sandbox may add to one command, at the median.
TARGET_ADDED_MS = 20.0

COMMANDS = {"true": ["true"], "python -c 'print(1)'": [sys.executable, "-c", "print(1)"]}


BASH = shutil.which("bash") or "/bin/bash"


async def _once(argv: list[str], cwd: Path, sandbox: Sandbox | None) -> float:
    """Seconds from start to exit of one run of `argv`."""

    async def drop(chunk: bytes) -> None:
        del chunk

    started = time.perf_counter()
    ended = await run_local(
        argv, cwd=cwd, env=dict(os.environ), timeout_s=30, on_output=drop, sandbox=sandbox
    )
    elapsed = time.perf_counter() - started
    if ended.exit_code != 0:
        raise SystemExit(f"{argv} failed (sandboxed: {sandbox is not None}): {ended}")
    return elapsed


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


async def main(runs: int) -> int:
    support = probe_sandbox()
    if not support.available:
        print(f"the sandbox cannot run here: {support.reason}", file=sys.stderr)
        return 1
    base = Path(tempfile.mkdtemp(prefix="acp-agent-sandbox-bench-", dir="/var/tmp"))
    try:
        workspace, temp = base / "workspace", base / "temp"
        workspace.mkdir()
        temp.mkdir()
        policy = sandbox_policy(agent_paths=resolve_paths(None), temp_dir=temp)
        sandbox = Sandbox(policy, (workspace,), bwrap=support.bwrap or "bwrap")
        argv = sandbox.wrap(["true"], cwd=workspace)
        mounts = sum(1 for word in argv if word in ("--bind", "--ro-bind", "--tmpfs"))
        print(f"{support.bwrap}, {runs} runs each, {mounts} mounts per command")
        print(f"{'command':<22} {'where':<10} {'median/p90':>18} {'ratio':>6} {'added':>9}")
        worst = 0.0
        for name, words in COMMANDS.items():
            argv = [BASH, "-c", shlex.join(words)]
            wrap = sandbox.in_terminal(BASH, shlex.join(words), cwd=workspace)
            terminal = [wrap.command, *wrap.args]
            tried = sandbox.in_terminal(BASH, shlex.join(words), cwd=workspace, tried=True)
            runs_of: dict[str, tuple[list[str], Sandbox | None]] = {
                "plain": (argv, None),
                "sandboxed": (argv, sandbox),
                "terminal": (terminal, None),
                "tried": ([tried.command, *tried.args], None),
            }
            times: dict[str, list[float]] = {where: [] for where in runs_of}
            for _ in range(3):  # warm the page cache for each
                for run, confined in runs_of.values():
                    await _once(run, workspace, confined)
            for _ in range(runs):
                for where, (run, confined) in runs_of.items():
                    times[where].append(await _once(run, workspace, confined))
            plain_ms = statistics.median(times["plain"]) * 1000
            for where, seconds in times.items():
                median_ms = statistics.median(seconds) * 1000
                added = median_ms - plain_ms
                if where != "plain":
                    worst = max(worst, added)
                print(
                    f"{name:<22} {where:<10} {median_ms:8.1f} / {_p90(seconds) * 1000:6.1f} ms "
                    f"{median_ms / plain_ms:6.2f} {added:6.1f} ms"
                )
        verdict = "met" if worst < TARGET_ADDED_MS else "NOT met"
        print(f"target: under {TARGET_ADDED_MS:g} ms added per command: {verdict} "
              f"(at most {worst:.1f} ms)")  # fmt: skip
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="runs of each (default 100)")
    sys.exit(anyio.run(main, parser.parse_args().runs))
