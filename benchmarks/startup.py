"""How long acp-agent takes to become useful after an editor spawns it.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/startup.py [--runs N] [--agent PATH]

For each run it spawns the installed `acp-agent` script the way an editor does,
sends `initialize`, then `session/new` with an absolute cwd, closes stdin and waits
for the exit. It reports median, min, p90 and max of:

- spawn -> `initialize` response,
- spawn -> `session/new` response (sent as soon as the `initialize` response arrives),
- stdin closed -> process exit,

Then, with the scripted model, prompt sent -> its first `agent_message_chunk`, for
the first prompt of a fresh process and for its second, two ways:

- as a person sends it: the first prompt a second after the `session/new` answer
  (typing it takes longer). `session/new` is answered once the session is stored and
  assembles behind the answer, and the warm-up imports and prepares what a prompt
  needs; whatever they miss, the first prompt pays. The target: within 20 ms of the
  second.
- as a script sends it (`acp-agent exec`, `acpx exec`): right after the answer. That
  first prompt also waits for the session's assembly, so this part reports
  spawn -> first chunk as a whole, the time a script waits.

All next to the floor, spawn -> exit of `python -c pass` with the same interpreter,
measured in the same run (interleaved, so both see the same machine noise), and
the peak RSS (VmHWM from /proc, Linux only) of the agent up to the session/new
response and of a bare interpreter. Then it spawns the
agent once more with `PYTHONPROFILEIMPORTTIME=1` (the same as `-X importtime`)
over the same exchange and prints the imports that cost the most.

It is a report: nothing here asserts a time. Linux and macOS only (it uses select
on pipes and os.wait4).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

RESPONSE_TIMEOUT_S = 30.0
EXIT_TIMEOUT_S = 30.0


class AgentFailed(Exception):
    """The agent did not answer or exit as ACP requires; the message says how."""


@dataclass
class Run:
    initialize_s: float
    session_new_s: float
    exit_after_eof_s: float
    peak_rss_kib: int | None  # up to the session/new response


@dataclass
class FirstChunks:
    """Prompt sent -> first `agent_message_chunk`, for a process's first prompt and its second;
    and spawn -> the first prompt's first chunk."""

    first_s: float
    second_s: float
    spawn_to_first_s: float


#: How long after the `session/new` answer a person's first prompt arrives.
PERSON_PAUSE_S = 1.0


@dataclass
class Floor:
    exit_s: float
    peak_rss_kib: int | None


@dataclass
class ImportCost:
    self_us: int
    cumulative_us: int
    depth: int
    module: str


@dataclass
class Workspace:
    """A scratch home for the agent and an absolute cwd for its sessions."""

    root: Path
    home: Path = field(init=False)
    cwd: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.cwd = self.root / "workspace"
        self.home.mkdir()
        self.cwd.mkdir()


class LineReader:
    """Reads newline-terminated lines from a raw pipe with a deadline."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._fd = stream.fileno()
        self._buffer = b""

    def readline(self, deadline: float) -> bytes:
        while b"\n" not in self._buffer:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                raise EOFError
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line


def wait_for_exit(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AgentFailed(f"did not exit within {timeout_s:.0f} s after stdin was closed") from None


def peak_rss_kib(pid: int | str) -> int | None:
    """VmHWM, the peak resident set of a live process, from /proc (None elsewhere).

    Not `ru_maxrss`: a child started with vfork, as subprocess does, inherits the
    parent's high-water mark at exec, so ru_maxrss would report this script's size
    whenever it is larger than the child's.
    """
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def request(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(message).encode() + b"\n"


def read_response(reader: LineReader, request_id: int, what: str) -> dict[str, Any]:
    """Read lines until the response to `request_id`; notifications are skipped."""
    deadline = time.perf_counter() + RESPONSE_TIMEOUT_S
    while True:
        try:
            line = reader.readline(deadline)
        except TimeoutError:
            raise AgentFailed(f"no {what} response within {RESPONSE_TIMEOUT_S:.0f} s") from None
        except EOFError:
            raise AgentFailed(f"stdout closed before the {what} response") from None
        try:
            message = json.loads(line)
        except ValueError:
            raise AgentFailed(f"non-JSON line on stdout: {line[:200]!r}") from None
        if isinstance(message, dict) and message.get("id") == request_id:
            if "result" not in message:
                raise AgentFailed(f"{what} failed: {json.dumps(message)[:500]}")
            return message


def stderr_tail(stderr_path: Path, lines: int = 15) -> str:
    text = stderr_path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:]) or "(stderr was empty)"


def spawn(
    agent: str, workspace: Workspace, stderr_path: Path, extra_env: dict[str, str] | None
) -> subprocess.Popen[bytes]:
    """The agent as an editor starts it, its home in the scratch workspace."""
    env = {**os.environ, "ACP_AGENT_HOME": str(workspace.home), **(extra_env or {})}
    with stderr_path.open("wb") as stderr:
        return subprocess.Popen(
            [agent],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=workspace.cwd,
            env=env,
            bufsize=0,
        )


def run_agent(
    agent: str, workspace: Workspace, stderr_path: Path, extra_env: dict[str, str] | None = None
) -> tuple[Run, dict[str, Any]]:
    """Spawn the agent once, drive initialize and session/new, close stdin, time it all."""
    started_at = time.perf_counter()
    proc = spawn(agent, workspace, stderr_path, extra_env)
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        reader = LineReader(proc.stdout)
        proc.stdin.write(request(1, "initialize", {"protocolVersion": 1}))
        initialize = read_response(reader, 1, "initialize")
        initialized_at = time.perf_counter()
        proc.stdin.write(request(2, "session/new", {"cwd": str(workspace.cwd), "mcpServers": []}))
        read_response(reader, 2, "session/new")
        session_at = time.perf_counter()
        rss_kib = peak_rss_kib(proc.pid)
        proc.stdin.close()
        eof_at = time.perf_counter()
        code = wait_for_exit(proc, EXIT_TIMEOUT_S)
        exited_at = time.perf_counter()
        if code != 0:
            raise AgentFailed(f"exited with code {code} after stdin was closed")
    except (AgentFailed, BrokenPipeError) as exc:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        reason = (
            "the agent exited early (its stdin is closed)"
            if isinstance(exc, BrokenPipeError)
            else exc
        )
        raise AgentFailed(
            f"{reason}\n--- agent stderr (tail) ---\n{stderr_tail(stderr_path)}"
        ) from exc
    finally:
        proc.stdout.close()
        if not proc.stdin.closed:
            proc.stdin.close()
    run = Run(
        initialize_s=initialized_at - started_at,
        session_new_s=session_at - started_at,
        exit_after_eof_s=exited_at - eof_at,
        peak_rss_kib=rss_kib,
    )
    return run, initialize


#: The scripted model's reply to every prompt of the first-chunk runs.
FIRST_CHUNK_SCRIPT = {"replies": [[{"text": "Here."}, {"text": " And more."}]]}


def first_chunk_after(
    proc: subprocess.Popen[bytes], reader: LineReader, session_id: str, request_id: int
) -> float:
    """Send a prompt; seconds until its first message chunk, then read to its answer."""
    assert proc.stdin is not None
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "Go"}]}
    sent_at = time.perf_counter()
    proc.stdin.write(request(request_id, "session/prompt", prompt))
    deadline = sent_at + RESPONSE_TIMEOUT_S
    chunk_at: float | None = None
    while True:
        message = json.loads(reader.readline(deadline))
        update = (message.get("params") or {}).get("update") or {}
        if chunk_at is None and update.get("sessionUpdate") == "agent_message_chunk":
            chunk_at = time.perf_counter()
        if message.get("id") == request_id:
            if chunk_at is None:
                raise AgentFailed(f"the prompt was answered without a chunk: {message}")
            return chunk_at - sent_at


def run_first_chunks(
    agent: str, workspace: Workspace, stderr_path: Path, *, pause_s: float
) -> FirstChunks:
    """Spawn the agent with the scripted model; time its first prompt's first chunk, sent
    `pause_s` after the `session/new` answer, and its second prompt's."""
    script = workspace.root / "first-chunk.json"
    script.write_text(json.dumps(FIRST_CHUNK_SCRIPT))
    started_at = time.perf_counter()
    proc = spawn(agent, workspace, stderr_path, {"ACP_AGENT_SCRIPT": str(script)})
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        reader = LineReader(proc.stdout)
        proc.stdin.write(request(1, "initialize", {"protocolVersion": 1}))
        read_response(reader, 1, "initialize")
        proc.stdin.write(request(2, "session/new", {"cwd": str(workspace.cwd), "mcpServers": []}))
        session_id = read_response(reader, 2, "session/new")["result"]["sessionId"]
        time.sleep(pause_s)
        sent_at = time.perf_counter()
        first = first_chunk_after(proc, reader, session_id, 3)
        spawn_to_first = sent_at + first - started_at
        second = first_chunk_after(proc, reader, session_id, 4)
        proc.stdin.close()
        wait_for_exit(proc, EXIT_TIMEOUT_S)
    except (AgentFailed, BrokenPipeError, TimeoutError, EOFError) as exc:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        raise AgentFailed(
            f"{exc}\n--- agent stderr (tail) ---\n{stderr_tail(stderr_path)}"
        ) from exc
    finally:
        proc.stdout.close()
        if not proc.stdin.closed:
            proc.stdin.close()
    return FirstChunks(first, second, spawn_to_first)


def print_first_chunks(person: list[FirstChunks], script: list[FirstChunks]) -> None:
    rows = [
        ("a person: first prompt -> first chunk", [r.first_s for r in person]),
        ("a person: second prompt -> first chunk", [r.second_s for r in person]),
        ("a person: first minus second", [r.first_s - r.second_s for r in person]),
        ("a script: first prompt -> first chunk", [r.first_s for r in script]),
        ("a script: second prompt -> first chunk", [r.second_s for r in script]),
        ("a script: spawn -> first chunk", [r.spawn_to_first_s for r in script]),
    ]
    width = max(len(name) for name, _ in rows)
    header = f"{'scripted model':<{width}}  {'median':>9}  {'min':>9}  {'p90':>9}  {'max':>9}"
    print(header)
    print("-" * len(header))
    for name, values in rows:
        median, low, p90, high = summarize(values)
        print(
            f"{name:<{width}}  {median * 1e3:6.1f} ms  {low * 1e3:6.1f} ms  "
            f"{p90 * 1e3:6.1f} ms  {high * 1e3:6.1f} ms"
        )
    print(
        f"(a person's first prompt is sent {PERSON_PAUSE_S:.0f} s after the session/new answer;"
        " a script's at once)"
    )


# The memory floor: a bare interpreter that reports its own peak RSS before exiting.
REPORT_OWN_PEAK_RSS = """
try:
    print(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")))
except OSError:
    print("None")
"""


def run_floor(python: str) -> Floor:
    """Time `python -c pass` (spawn -> exit), then measure a bare interpreter's peak RSS."""
    started_at = time.perf_counter()
    code = subprocess.call([python, "-c", "pass"])
    exit_s = time.perf_counter() - started_at
    if code != 0:
        raise AgentFailed(f"`{python} -c pass` exited with code {code}")
    reported = subprocess.run(
        [python, "-c", REPORT_OWN_PEAK_RSS], capture_output=True, text=True, check=True
    ).stdout.strip()
    return Floor(exit_s=exit_s, peak_rss_kib=None if reported == "None" else int(reported))


IMPORT_TIME_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|( *)(\S.*)$")


def parse_import_times(stderr_text: str) -> list[ImportCost]:
    costs = []
    for line in stderr_text.splitlines():
        match = IMPORT_TIME_LINE.match(line)
        if match:
            self_us, cumulative_us, indent, module = match.groups()
            depth = max(0, (len(indent) - 1) // 2)
            costs.append(ImportCost(int(self_us), int(cumulative_us), depth, module.strip()))
    return costs


def summarize(values: list[float]) -> tuple[float, float, float, float]:
    """Median, min, p90, max."""
    ordered = sorted(values)
    p90 = (
        statistics.quantiles(ordered, n=10, method="inclusive")[8]
        if len(ordered) > 1
        else ordered[0]
    )
    return statistics.median(ordered), ordered[0], p90, ordered[-1]


def print_table(runs: list[Run], floors: list[Floor]) -> None:
    floor_median = statistics.median(f.exit_s for f in floors)
    rows: list[tuple[str, list[float], bool]] = [
        ("python -c pass: spawn -> exit (floor)", [f.exit_s for f in floors], True),
        ("acp-agent: spawn -> initialize response", [r.initialize_s for r in runs], True),
        ("acp-agent: spawn -> session/new response", [r.session_new_s for r in runs], True),
        ("acp-agent: stdin closed -> exit", [r.exit_after_eof_s for r in runs], False),
    ]
    name_width = max(len(name) for name, _, _ in rows)
    header = (
        f"{'time':<{name_width}}  {'median':>9}  {'min':>9}  {'p90':>9}  {'max':>9}  "
        f"{'median/floor':>12}"
    )
    print(header)
    print("-" * len(header))
    for name, values, with_ratio in rows:
        median, low, p90, high = summarize(values)
        ratio = f"{median / floor_median:11.1f}x" if with_ratio else f"{'':>12}"
        print(
            f"{name:<{name_width}}  {median * 1e3:6.1f} ms  {low * 1e3:6.1f} ms  "
            f"{p90 * 1e3:6.1f} ms  {high * 1e3:6.1f} ms  {ratio}"
        )
    print()
    floor_kib = [f.peak_rss_kib for f in floors if f.peak_rss_kib is not None]
    agent_kib = [r.peak_rss_kib for r in runs if r.peak_rss_kib is not None]
    if not floor_kib or not agent_kib:
        print("peak RSS: not available (needs /proc)")
        return
    floor_median_kib = statistics.median(floor_kib)
    header = (
        f"{'peak RSS (VmHWM)':<{name_width}}  {'median':>9}  {'min':>9}  {'p90':>9}  "
        f"{'max':>9}  {'median/floor':>12}"
    )
    print(header)
    print("-" * len(header))
    for name, kib in [
        ("python -c: bare interpreter (floor)", floor_kib),
        ("acp-agent: up to session/new response", agent_kib),
    ]:
        median, low, p90, high = summarize([float(k) for k in kib])
        print(
            f"{name:<{name_width}}  {median / 1024:5.1f} MiB  {low / 1024:5.1f} MiB  "
            f"{p90 / 1024:5.1f} MiB  {high / 1024:5.1f} MiB  {median / floor_median_kib:11.1f}x"
        )


def print_import_costs(costs: list[ImportCost], top: int = 5) -> None:
    if not costs:
        print("no import timings found on stderr (PYTHONPROFILEIMPORTTIME ignored?)")
        return
    top_level_us = sum(c.cumulative_us for c in costs if c.depth == 0)
    ours = [c for c in costs if c.module.split(".")[0] in {"acp_agent", "jsonbounds", "protocol"}]
    print(
        f"imports on the serving path: {len(costs)} modules, {top_level_us / 1e3:.1f} ms in total "
        f"({len(ours)} of them ours); -X importtime inflates these somewhat"
    )
    print()
    # A module can be reported twice (a package's __init__ imports its own submodule,
    # then the outer import statement finishes); keep its larger figure.
    by_module: dict[str, ImportCost] = {}
    for cost in costs:
        known = by_module.get(cost.module)
        if known is None or cost.cumulative_us > known.cumulative_us:
            by_module[cost.module] = cost
    print(f"top {top} by cumulative time (a parent includes its children)")
    for cost in sorted(by_module.values(), key=lambda c: c.cumulative_us, reverse=True)[:top]:
        print(
            f"  {cost.cumulative_us / 1e3:7.1f} ms  (self {cost.self_us / 1e3:5.1f} ms)  "
            f"{cost.module}"
        )
    print()
    print(f"top {top} by self time")
    for cost in sorted(costs, key=lambda c: c.self_us, reverse=True)[:top]:
        print(f"  {cost.self_us / 1e3:7.1f} ms  {cost.module}")


def find_agent(explicit: str | None) -> str:
    if explicit:
        path = shutil.which(explicit) or explicit
        if not Path(path).is_file():
            sys.exit(f"error: --agent {explicit!r} is not an executable file")
        return str(Path(path).absolute())
    beside_python = Path(sys.executable).parent / "acp-agent"
    if beside_python.is_file():
        return str(beside_python)
    on_path = shutil.which("acp-agent")
    if on_path:
        return on_path
    sys.exit(
        f"error: no `acp-agent` script next to {sys.executable} or on PATH.\n"
        "Install acp-agent into this environment first (pip install -e .), "
        "run this file with that environment's python, or pass --agent PATH."
    )


def check_importable(python: str) -> None:
    probe = subprocess.run(
        [python, "-c", "import acp_agent.cli"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        last_lines = "\n".join(probe.stderr.strip().splitlines()[-5:])
        sys.exit(
            f"error: `import acp_agent.cli` fails with {python}:\n{last_lines}\n"
            "Install acp-agent into this environment first (pip install -e .) "
            "and run this file with that environment's python."
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs of each (default 20)")
    parser.add_argument(
        "--agent", help="the acp-agent executable (default: next to this python, then PATH)"
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    python = sys.executable
    check_importable(python)
    agent = find_agent(args.agent)

    with tempfile.TemporaryDirectory(prefix="acp-agent-bench-") as scratch:
        workspace = Workspace(Path(scratch))
        stderr_path = workspace.root / "stderr.log"
        try:
            # One untimed warm-up of each: fills the page cache and writes .pyc files.
            run_floor(python)
            _, initialize = run_agent(agent, workspace, stderr_path)
            runs, floors = [], []
            for _ in range(args.runs):
                floors.append(run_floor(python))
                run, _ = run_agent(agent, workspace, stderr_path)
                runs.append(run)
            person, script = [], []
            for _ in range(args.runs):
                person.append(
                    run_first_chunks(agent, workspace, stderr_path, pause_s=PERSON_PAUSE_S)
                )
                script.append(run_first_chunks(agent, workspace, stderr_path, pause_s=0.0))
            run_agent(agent, workspace, stderr_path, {"PYTHONPROFILEIMPORTTIME": "1"})
        except AgentFailed as exc:
            print(f"error: {agent}: {exc}", file=sys.stderr)
            return 1
        costs = parse_import_times(stderr_path.read_text(errors="replace"))

    agent_info = initialize["result"].get("agentInfo") or {}
    print(
        f"acp-agent startup: {args.runs} runs each, interleaved with the floor; "
        f"agent {agent_info.get('name', '?')} {agent_info.get('version', '?')} at {agent}"
    )
    print(
        f"python {platform.python_version()} ({python}), {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs; ACP_AGENT_HOME is a scratch directory"
    )
    print()
    print_table(runs, floors)
    print()
    print_first_chunks(person, script)
    print()
    print_import_costs(costs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
