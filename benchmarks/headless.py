"""How long a script waits for `acp-agent exec`, from its start to its exit.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/headless.py [--runs N] [--agent PATH] [--before PATH]
                                            [--connect on|off]

Each round runs `acp-agent exec "..."` as a script does, a fresh process each time,
answered by the startup benchmark's fake provider (a real HTTP server on 127.0.0.1
streaming a short reply in the Chat Completions format), and times it from spawn to
exit, checking that it printed the reply. The whole run is what a script waits for:
the command's own start, its agent's start, the session, the prompt's turn and both
exits. Beside it, in the same interleaved rounds: the floor, `python -c pass` spawn ->
exit with the same interpreter; `--before PATH`, another build (reported paired by
round, which the machine's drift cannot move); and with `--connect on` (the default)
the same command through the bridge to an `acp-agent server` started once, before the
rounds (`acp-agent exec --connect`).

It is a report: nothing here asserts a time. Linux and macOS.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from startup import (
    REPLY,
    AgentFailed,
    AppServer,
    EndlessFake,
    Workspace,
    agent_subject,
    bridge_subject,
    build_arguments,
    find_agent,
    median,
    ms,
    p90,
    parse_rounds,
    run_floor,
)

#: What a round asks; the fake model answers every prompt with `REPLY`.
PROMPT = "Say something short."
EXEC_TIMEOUT_S = 60.0


def run_exec(agent: str, env: dict[str, str], cwd: Path, *extra: str) -> float:
    """Spawn -> exit of one `exec`, in seconds; `AgentFailed` unless it printed the reply."""
    started = time.perf_counter()
    done = subprocess.run(
        [agent, "exec", "--cwd", str(cwd), *extra, PROMPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=EXEC_TIMEOUT_S,
        check=False,
    )
    took = time.perf_counter() - started
    if done.returncode != 0 or done.stdout != "".join(REPLY) + "\n":
        raise AgentFailed(
            f"exec exited {done.returncode}: {done.stdout!r}; stderr: {done.stderr[-2000:]}"
        )
    return took


def paired(after: Sequence[float], before: Sequence[float]) -> str:
    differences = [a - b for a, b in zip(after, before, strict=True)]
    faster = sum(1 for d in differences if d < 0)
    return f"{ms(median(differences)):>10}   faster in {faster}/{len(differences)}"


def main(argv: list[str] | None = None) -> int:
    parser = build_arguments(__doc__.splitlines()[0])
    parser.add_argument(
        "--connect",
        choices=("on", "off"),
        default="on",
        help="also run `exec --connect` to an app server (default on)",
    )
    args = parse_rounds(parser, argv)
    python = sys.executable
    agent = find_agent(args.agent)
    builds = {"acp-agent": agent}
    if args.before:
        builds["before"] = find_agent(args.before)

    times: dict[str, list[float]] = {name: [] for name in [*builds, "connect", "floor"]}
    with tempfile.TemporaryDirectory(prefix="acp-agent-bench-") as scratch, EndlessFake() as fake:
        workspace = Workspace(Path(scratch))
        envs = {
            name: agent_subject(name, path, fake.base_url).env(workspace.home(name))
            for name, path in builds.items()
        }
        server: AppServer | None = None
        connect_env: dict[str, str] | None = None
        try:
            if args.connect == "on":
                bridge = bridge_subject(agent, fake.base_url)
                server = AppServer(agent, bridge, workspace)
                connect_env = bridge.env(workspace.home("bridge"))
            # One untimed round: the .pyc files and the kept attrs methods are written.
            for name, path in builds.items():
                run_exec(path, envs[name], workspace.cwd)
            if connect_env is not None:
                run_exec(agent, connect_env, workspace.cwd, "--connect")
            for round_index in range(args.runs):
                times["floor"].append(run_floor(python).exit_s)
                order = list(builds.items())
                if round_index % 2:
                    order.reverse()
                for name, path in order:
                    times[name].append(run_exec(path, envs[name], workspace.cwd))
                if connect_env is not None:
                    times["connect"].append(
                        run_exec(agent, connect_env, workspace.cwd, "--connect")
                    )
        except AgentFailed as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        finally:
            if server is not None:
                server.stop()

    floor = median(times["floor"])
    print(f"acp-agent exec: {args.runs} interleaved rounds; acp-agent at {agent}")
    print(
        f"python {platform.python_version()} ({python}), {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs; the model: a fake provider on 127.0.0.1"
    )
    print()
    print(f"{'spawn -> exit':38} {'median':>10} {'p90':>10} {'/floor':>8}")
    print("-" * 70)
    rows = [("python -c pass", "floor"), ("acp-agent exec", "acp-agent")]
    if args.before:
        rows.append(("before: acp-agent exec", "before"))
    if times["connect"]:
        rows.append(("acp-agent exec --connect", "connect"))
    for label, name in rows:
        values = times[name]
        print(
            f"{label:38} {ms(median(values)):>10} {ms(p90(values)):>10} "
            f"{median(values) / floor:7.2f}x"
        )
    if args.before:
        print()
        print(f"{'before -> acp-agent, paired by round':38} {'median change':>13}")
        print("-" * 70)
        print(f"{'acp-agent exec':38} {paired(times['acp-agent'], times['before'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
