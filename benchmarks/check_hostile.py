"""How long `acp-agent check` takes, and how much memory it needs, against hostile agents.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/check_hostile.py [--checker REPO] [--cap-s 120] [--cap-mb 2000]

For each agent of `tests/check/hostile` (banners, an echo, one that never answers, one
that exits at once, a child holding stdout behind a shell wrapper, a flood of
updates, malformed replies) it runs `python -m acp_agent check --json` as a person
would, and reports the wall time, the checker's peak resident memory (its own, not
the agent's: VmHWM, read as it runs) and the verdicts, each as a ratio to a baseline
measured in the same run: the same check of the well-behaved `broken_agent.py`; and
how many of the agent's processes were still running once the checker was gone.

`--checker REPO` runs the `acp_agent` of another checkout (to compare with main, say);
a checker past `--cap-s` seconds or `--cap-mb` MB is ended with everything it started
(it runs in a process group of its own) and reported as cut. It is a report: nothing
here asserts a time or a size.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "check" / "hostile"
PY = [sys.executable, "-S"]
AGENTS = {
    "baseline (well-behaved)": [
        *PY,
        str(ROOT / "tests" / "check" / "broken_agent.py"),
        "--store",
        "{scratch}/store.json",
    ],
    "banners and garbage": [*PY, str(HOSTILE / "banner.py")],
    "echoes its input": [*PY, str(HOSTILE / "echo.py")],
    "never answers": [*PY, str(HOSTILE / "silent.py")],
    "exits at once": [*PY, str(HOSTILE / "exits.py")],
    "child holds stdout (sh)": [str(HOSTILE / "child_holds_stdout.sh")],
    "floods updates": [*PY, str(HOSTILE / "flood.py")],
    'initialize -> "result": "ok"': [*PY, str(HOSTILE / "malformed.py"), "result-string"],
    "errors as strings": [
        *PY,
        str(HOSTILE / "malformed.py"),
        "error-string",
        *("--good", "initialize", "session/new", "session/prompt"),
    ],
    "members of the wrong type": [
        *PY,
        str(HOSTILE / "malformed.py"),
        "wrong-types",
        *("--good", "initialize"),
    ],
    "a 20 MiB line": [*PY, str(HOSTILE / "malformed.py"), "huge"],
}


def peak_kb(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class Result:
    seconds: float = 0.0
    peak_mb: float = 0.0
    verdicts: Counter[str] = field(default_factory=Counter)
    #: Why the checker was ended before it finished ("" when it finished).
    cut: str = ""
    #: Processes of the agent still running once the checker was gone.
    left: int = 0


def survivors(mark: str) -> list[int]:
    """Live processes (zombies aside) whose environment carries `mark`: the checker's
    own descendants, wherever they moved (agents inherit the checker's environment)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"CHECK_BENCH_MARK={mark}".encode() in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


def one_check(checker: Path, agent: list[str], args: argparse.Namespace) -> Result:
    """Check `agent` with the `acp_agent` of `checker`."""
    bounds = ["--timeout", str(args.timeout), "--quiet", str(args.quiet)]
    help_text = subprocess.run(
        [sys.executable, "-m", "acp_agent", "check", "--help"],
        cwd=checker,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(checker)},
    ).stdout
    if "--deadline" in help_text:
        bounds += ["--deadline", str(args.cap_s)]
    mark = uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryFile() as out:
        started = time.monotonic()
        command = [part.replace("{scratch}", scratch) for part in agent]
        process = subprocess.Popen(
            [sys.executable, "-m", "acp_agent", "check", "--json", *bounds, "--", *command],
            cwd=checker,
            stdout=out,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env={
                **os.environ,
                "PYTHONPATH": str(checker),
                "PYTHON": sys.executable,
                "CHECK_BENCH_MARK": mark,
            },
        )
        peak, cut = 0, ""
        while process.poll() is None:
            peak = max(peak, peak_kb(process.pid))
            took = time.monotonic() - started
            if took > args.cap_s + 10:
                cut = f"cut at {args.cap_s + 10:g} s"
            elif peak > args.cap_mb * 1024:
                cut = f"cut at {args.cap_mb} MB"
            if cut:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                break
            time.sleep(0.02)
        took = time.monotonic() - started
        time.sleep(0.2)  # what the checker ended has a moment to go
        left = survivors(mark)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        out.seek(0)
        verdicts: Counter[str] = Counter()
        for line in out.read().decode(errors="replace").splitlines():
            try:
                verdicts[json.loads(line)["verdict"]] += 1
            except (ValueError, KeyError, TypeError):
                verdicts["unreadable"] += 1
        if not verdicts and not cut:
            cut = f"no report (exit status {process.returncode})"
    return Result(took, peak / 1024, verdicts, cut, len(left))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--checker", type=Path, default=ROOT, help="the checkout to run")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--quiet", type=float, default=1.0)
    parser.add_argument("--cap-s", type=float, default=120.0)
    parser.add_argument("--cap-mb", type=int, default=2000)
    parser.add_argument("--only", nargs="*", default=[], help="agents whose name has this")
    args = parser.parse_args()
    names = [
        n
        for n in AGENTS
        if n.startswith("baseline") or not args.only or any(o in n for o in args.only)
    ]
    print(f"checker: {args.checker.resolve()}  (--timeout {args.timeout:g} --quiet {args.quiet:g})")
    print(
        f"{'agent':<30} {'time':>8} {'x base':>7} {'peak MB':>8} {'x base':>7} {'left':>4}"
        "  verdicts"
    )
    base: Result | None = None
    for name in names:
        result = one_check(args.checker, AGENTS[name], args)
        base = base or result
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(result.verdicts.items())) or "none"
        cut = f"  [{result.cut}]" if result.cut else ""
        print(
            f"{name:<30} {result.seconds:7.1f}s {result.seconds / base.seconds:7.1f}"
            f" {result.peak_mb:8.0f} {result.peak_mb / max(base.peak_mb, 1):7.1f}"
            f" {result.left:4}  {verdicts}{cut}"
        )


if __name__ == "__main__":
    main()
