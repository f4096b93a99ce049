"""How long a person and a script wait for acp-agent after an editor spawns it.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/startup.py [--runs N] [--agent PATH] [--before PATH]
                                           [--peer auto|off] [--install-peer]

Every subject is spawned the way an editor spawns an agent and sent `initialize`
and, as soon as that is answered, `session/new`; then two prompts, each sent once
the one before it is answered. The model is the test suite's fake provider
(`tests/support/fake_provider.py`), a real HTTP server on 127.0.0.1 that answers
every prompt with the same short reply, in the Chat Completions format for
acp-agent and the relay and the Responses format for codex. Two ways:

- a script (`acp-agent exec`, `acpx exec`, CI) sends its first prompt right after
  the `session/new` answer: it waits for whatever the session still assembles;
- a person sends it a second later (`PERSON_PAUSE_S`: typing takes longer), which
  whatever the agent warms in the background may use.

For each way it reports the median of: the `session/new` round trip, spawn ->
the first prompt's first chunk (for a person, less the pause: what they waited),
and prompt -> first chunk for the first prompt of the process and for its second.
A first chunk is the first `agent_message_chunk` carrying the model's text.

Each is shown as a ratio to a baseline measured in the same run, in interleaved
rounds so all see the same machine noise: spawn -> `initialize` to the floor,
`python -c pass` spawn -> exit with the same interpreter; the protocol paths to a
minimal ACP relay (`benchmarks/acp_relay.py`: standard library only, nothing stored,
each text delta relayed as it arrives). When it is installed, codex-acp 0.16 (the
Rust build, `benchmarks/codex_peer.py`) runs the same rounds against the same fake
model, and each row's ratio to it is the target's (acp-agent at most 1x codex on
the `session/new` round trip and on prompt -> first chunk). `--before PATH` runs
another acp-agent build in the same rounds (before and after a change).

The bridge (`--bridge on`, the default) is acp-agent as a script can also run it:
`acp-agent --connect` spawned the same way, to an `acp-agent server` the benchmark
starts once, before the rounds, against the same fake model (its own home). The
server's runtime is warm; the bridge spawns, imports little and relays. Its tables
give its ratio to the relay and to codex-acp.

Then the peak RSS (VmHWM, Linux only) of each subject up to the `session/new`
answer next to a bare interpreter's, the time from stdin closed to exit, and, from
one more spawn with `PYTHONPROFILEIMPORTTIME=1`, the imports that cost the most.

Python subjects run without `PYTHONDONTWRITEBYTECODE`, after one untimed round that
writes their `.pyc` files, as an installed agent runs. It is a report: nothing here
asserts a time. Linux and macOS only (select on pipes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from codex_peer import codex_command, codex_env, find_codex  # noqa: E402

from tests.support.fake_provider import (  # noqa: E402
    Exchange,
    FakeProviderServer,
    openai_chunk,
    openai_responses_stream,
    sse_data,
)

RESPONSE_TIMEOUT_S = 30.0
EXIT_TIMEOUT_S = 30.0
#: How long after the `session/new` answer a person's first prompt arrives.
PERSON_PAUSE_S = 1.0
#: The fake model's reply to every prompt, in the pieces it streams.
REPLY = ("Ready.", " Here is", " the answer.")
RELAY = Path(__file__).resolve().parent / "acp_relay.py"


class AgentFailed(Exception):
    """A subject did not answer or exit as ACP requires; the message says how."""


@dataclass
class Subject:
    """An agent the rounds spawn: its command, its environment, how it speaks to the model."""

    name: str
    command: list[str]
    env: Callable[[Path], dict[str, str]]
    #: Measure stdin closed -> exit (codex-acp does not exit when its stdin closes).
    exits_on_eof: bool = True


@dataclass
class Session:
    """One spawn's times, in seconds from its own events."""

    initialize_s: float  # spawn -> initialize answer
    new_round_trip_s: float  # session/new sent -> answered
    new_s: float  # spawn -> session/new answer
    first_s: float  # first prompt -> its first chunk
    second_s: float  # second prompt -> its first chunk
    peak_rss_kib: int | None  # up to the session/new answer
    exit_after_eof_s: float | None

    @property
    def waited_s(self) -> float:
        """Spawn -> the first chunk, less any pause before the first prompt."""
        return self.new_s + self.first_s


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
    """A scratch home per subject and an absolute cwd for the sessions."""

    root: Path
    cwd: Path = field(init=False)

    def __post_init__(self) -> None:
        self.cwd = self.root / "workspace"
        self.cwd.mkdir()

    def home(self, name: str) -> Path:
        home = self.root / "homes" / name
        home.mkdir(parents=True, exist_ok=True)
        return home


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


def is_reply_chunk(message: dict[str, Any]) -> bool:
    """Whether `message` is an `agent_message_chunk` of the model's reply (not, say, a
    warning an agent shows as a message)."""
    update = (message.get("params") or {}).get("update") or {}
    if update.get("sessionUpdate") != "agent_message_chunk":
        return False
    text = (update.get("content") or {}).get("text") or ""
    return bool(text) and "".join(REPLY).startswith(text)


def first_chunk_after(
    proc: subprocess.Popen[bytes], reader: LineReader, session_id: str, request_id: int
) -> float:
    """Send a prompt; seconds until the first chunk of its reply, then read to its answer."""
    assert proc.stdin is not None
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "Go"}]}
    sent_at = time.perf_counter()
    proc.stdin.write(request(request_id, "session/prompt", prompt))
    deadline = sent_at + RESPONSE_TIMEOUT_S
    chunk_at: float | None = None
    while True:
        message = json.loads(reader.readline(deadline))
        if chunk_at is None and is_reply_chunk(message):
            chunk_at = time.perf_counter()
        if message.get("id") == request_id:
            if chunk_at is None:
                raise AgentFailed(f"the prompt was answered without a reply chunk: {message}")
            return chunk_at - sent_at


def stderr_tail(stderr_path: Path, lines: int = 15) -> str:
    text = stderr_path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:]) or "(stderr was empty)"


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a subject that does not exit by itself (SIGTERM, then SIGKILL)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_session(
    subject: Subject,
    workspace: Workspace,
    *,
    pause_s: float,
    extra_env: dict[str, str] | None = None,
) -> Session:
    """Spawn `subject`; initialize, session/new, (pause), two prompts; close its stdin."""
    home = workspace.home(subject.name)
    stderr_path = home / "stderr.log"
    env = {**subject.env(home), **(extra_env or {})}
    with stderr_path.open("wb") as stderr:
        started_at = time.perf_counter()
        proc = subprocess.Popen(
            subject.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=workspace.cwd,
            env=env,
            bufsize=0,
        )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        reader = LineReader(proc.stdout)
        proc.stdin.write(request(1, "initialize", {"protocolVersion": 1}))
        read_response(reader, 1, "initialize")
        initialized_at = time.perf_counter()
        proc.stdin.write(request(2, "session/new", {"cwd": str(workspace.cwd), "mcpServers": []}))
        session_id = read_response(reader, 2, "session/new")["result"]["sessionId"]
        answered_at = time.perf_counter()
        rss_kib = peak_rss_kib(proc.pid)
        if pause_s:
            time.sleep(pause_s)
        first = first_chunk_after(proc, reader, session_id, 3)
        second = first_chunk_after(proc, reader, session_id, 4)
        proc.stdin.close()
        exit_after_eof = None
        if subject.exits_on_eof:
            eof_at = time.perf_counter()
            try:
                code = proc.wait(timeout=EXIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise AgentFailed(f"did not exit within {EXIT_TIMEOUT_S:.0f} s of EOF") from None
            exit_after_eof = time.perf_counter() - eof_at
            if code != 0:
                raise AgentFailed(f"exited with code {code} after stdin was closed")
    except (AgentFailed, BrokenPipeError, TimeoutError, EOFError) as exc:
        raise AgentFailed(
            f"{subject.name}: {exc!r}\n--- stderr (tail) ---\n{stderr_tail(stderr_path)}"
        ) from exc
    finally:
        stop(proc)
        proc.stdout.close()
        if not proc.stdin.closed:
            proc.stdin.close()
    return Session(
        initialize_s=initialized_at - started_at,
        new_round_trip_s=answered_at - initialized_at,
        new_s=answered_at - started_at,
        first_s=first,
        second_s=second,
        peak_rss_kib=rss_kib,
        exit_after_eof_s=exit_after_eof,
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


# --- the fake model ---------------------------------------------------------------------


def chat_reply() -> Exchange:
    """The reply in the Chat Completions format, each event its own HTTP chunk."""
    events = [sse_data(openai_chunk({"content": piece})) for piece in REPLY]
    events.append(sse_data(openai_chunk({}, "stop")) + b"data: [DONE]\n\n")
    return Exchange(chunks=events)


def reply_for(body: Any) -> Exchange:
    """The reply in the format the request asks in (Responses bodies carry `input`)."""
    if isinstance(body, dict) and "input" in body:
        return Exchange(chunks=openai_responses_stream(*REPLY))
    return chat_reply()


class EndlessFake(FakeProviderServer):
    """The fake provider answering every model request with `REPLY`, however many come."""

    def _next_exchange(self, body: bytes) -> Exchange:
        return reply_for(json.loads(body))


# --- the subjects -----------------------------------------------------------------------


def python_env(home: Path, **extra: str) -> dict[str, str]:
    """This environment for a Python subject: .pyc files are written and read."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}


def agent_subject(name: str, agent: str, base_url: str) -> Subject:
    def env(home: Path) -> dict[str, str]:
        # Only the home is the benchmark's: the mode, code intelligence and the rest
        # are a person's defaults.
        scrubbed = {
            k: v
            for k, v in python_env(home).items()
            if not k.startswith(("OPENAI_", "ANTHROPIC_", "ACP_AGENT_"))
        }
        return {
            **scrubbed,
            "ACP_AGENT_HOME": str(home),
            "OPENAI_BASE_URL": f"{base_url}/v1",
            "OPENAI_API_KEY": "sk-fake",
            "ACP_AGENT_MODEL": "openai/gpt-fake",
        }

    return Subject(name, [agent], env)


def relay_subject(python: str, base_url: str) -> Subject:
    def env(home: Path) -> dict[str, str]:
        return python_env(home, OPENAI_BASE_URL=f"{base_url}/v1", OPENAI_API_KEY="sk-fake")

    return Subject("relay", [python, str(RELAY)], env)


#: How long the app server may take to say it listens.
SERVER_START_TIMEOUT_S = 30.0


def bridge_subject(agent: str, base_url: str) -> Subject:
    """`acp-agent --connect`: a bridge to the app server `AppServer` runs in the same home."""
    base = agent_subject("bridge", agent, base_url)
    return Subject("bridge", [agent, "--connect"], base.env)


class AppServer:
    """`acp-agent server` for the bridge's rounds: started once, stopped at the end."""

    def __init__(self, agent: str, subject: Subject, workspace: Workspace) -> None:
        home = workspace.home(subject.name)
        self.log = home / "server.log"
        with self.log.open("wb") as stderr:
            self.proc = subprocess.Popen(
                [agent, "server"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                cwd=workspace.cwd,
                env=subject.env(home),
            )
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while "listening on unix:" not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AgentFailed(f"the app server did not start:\n{stderr_tail(self.log)}")
            time.sleep(0.05)

    def stop(self) -> None:
        stop(self.proc)


def codex_subject(binary: Path, base_url: str) -> Subject:
    return Subject(
        "codex-acp",
        codex_command(binary, f"{base_url}/v1"),
        codex_env,
        exits_on_eof=False,
    )


# --- the report -------------------------------------------------------------------------


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


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def p90(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=10, method="inclusive")[8]


@dataclass
class Row:
    name: str
    pick: Callable[[Session], float]


SCRIPT_ROWS = (
    Row("session/new round trip", lambda s: s.new_round_trip_s),
    Row("spawn -> first chunk", lambda s: s.waited_s),
    Row("first prompt -> first chunk", lambda s: s.first_s),
    Row("second prompt -> first chunk", lambda s: s.second_s),
)
PERSON_ROWS = (
    Row("session/new round trip", lambda s: s.new_round_trip_s),
    Row("spawn -> first chunk, less the pause", lambda s: s.waited_s),
    Row("first prompt -> first chunk", lambda s: s.first_s),
    Row("second prompt -> first chunk", lambda s: s.second_s),
)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:7.1f} ms"


def ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:6.2f}x" if baseline > 0 else "     -"


def print_way(
    title: str,
    rows: Sequence[Row],
    runs: dict[str, list[Session]],
    others: Sequence[str],
    subject: str = "acp-agent",
) -> None:
    """One way's table: `subject`'s median, then each other subject's and the ratio."""
    width = max(len(row.name) for row in rows) + 2
    head = f"{title:<{width}}{subject:>11} {'p90':>10}"
    for other in others:
        head += f" {other:>11} {'ratio':>7}"
    print(head)
    print("-" * len(head))
    for row in rows:
        agent = [row.pick(s) for s in runs[subject]]
        line = f"{row.name:<{width}}{ms(median(agent)):>11} {ms(p90(agent)):>10}"
        for other in others:
            theirs = median([row.pick(s) for s in runs[other]])
            line += f" {ms(theirs):>11} {ratio(median(agent), theirs):>7}"
        print(line)


def print_paired(script: dict[str, list[Session]], person: dict[str, list[Session]]) -> None:
    """`before` -> acp-agent round by round: each round runs both, minutes apart at most,
    so the machine's drift (on the 2-core machine up to 1.6x from one minute to the
    next) cancels out of each difference, which the medians of whole runs keep."""
    rows = [("spawn -> initialize answer", lambda s: s.initialize_s, script)]
    rows += [(f"a script: {row.name}", row.pick, script) for row in SCRIPT_ROWS]
    rows += [(f"a person: {row.name}", row.pick, person) for row in PERSON_ROWS]
    width = max(len(name) for name, _, _ in rows) + 2
    title = "before -> acp-agent, paired by round"
    head = f"{title:<{width}}{'median change':>15} {'faster in':>10}"
    print(head)
    print("-" * len(head))
    for name, pick, runs in rows:
        pairs = list(zip(runs["acp-agent"], runs["before"], strict=True))
        changes = [pick(now) - pick(before) for now, before in pairs]
        faster = sum(change < 0 for change in changes)
        change_ms = median(changes) * 1e3
        print(f"{name:<{width}}{change_ms:>+12.1f} ms {f'{faster}/{len(pairs)}':>10}")


def print_startup(
    floors: list[Floor], runs: dict[str, list[Session]], names: Sequence[str]
) -> None:
    floor_s = median([f.exit_s for f in floors])
    header = f"{'spawn -> initialize answer':<36}{'median':>11} {'p90':>10} {'/floor':>8}"
    print(header)
    print("-" * len(header))
    floor_values = [f.exit_s for f in floors]
    print(
        f"{'python -c pass, spawn -> exit':<36}{ms(floor_s):>11} {ms(p90(floor_values)):>10}"
        f" {ratio(floor_s, floor_s):>8}"
    )
    for name in names:
        values = [s.initialize_s for s in runs[name]]
        print(
            f"{name:<36}{ms(median(values)):>11} {ms(p90(values)):>10}"
            f" {ratio(median(values), floor_s):>8}"
        )
    for name in names:
        values = [s.new_s for s in runs[name]]
        print(
            f"{name + ': spawn -> session/new':<36}{ms(median(values)):>11} "
            f"{ms(p90(values)):>10} {ratio(median(values), floor_s):>8}"
        )
    for name in names:
        exits = [s.exit_after_eof_s for s in runs[name] if s.exit_after_eof_s is not None]
        if exits:
            print(
                f"{name + ': stdin closed -> exit':<36}{ms(median(exits)):>11} {ms(p90(exits)):>10}"
            )


def print_memory(floors: list[Floor], runs: dict[str, list[Session]], names: Sequence[str]) -> None:
    floor_kib = [f.peak_rss_kib for f in floors if f.peak_rss_kib is not None]
    if not floor_kib:
        print("peak RSS: not available (needs /proc)")
        return
    floor_median = statistics.median(floor_kib)
    header = f"{'peak RSS up to session/new (VmHWM)':<36}{'median':>11} {'/floor':>8}"
    print(header)
    print("-" * len(header))
    print(f"{'python -c: a bare interpreter':<36}{floor_median / 1024:7.1f} MiB {1.0:7.2f}x")
    for name in names:
        kib = [s.peak_rss_kib for s in runs[name] if s.peak_rss_kib is not None]
        if kib:
            value = statistics.median(kib)
            print(f"{name:<36}{value / 1024:7.1f} MiB {value / floor_median:7.2f}x")


def print_import_costs(costs: list[ImportCost], top: int = 5) -> None:
    if not costs:
        print("no import timings found on stderr (PYTHONPROFILEIMPORTTIME ignored?)")
        return
    top_level_us = sum(c.cumulative_us for c in costs if c.depth == 0)
    ours = [c for c in costs if c.module.split(".")[0] in {"acp_agent", "jsonbounds", "protocol"}]
    print(
        f"imports of a script's session: {len(costs)} modules, {top_level_us / 1e3:.1f} ms in "
        f"total ({len(ours)} of them ours); -X importtime inflates these somewhat"
    )
    # A module can be reported twice (a package's __init__ imports its own submodule,
    # then the outer import statement finishes); keep its larger figure.
    by_module: dict[str, ImportCost] = {}
    for cost in costs:
        known = by_module.get(cost.module)
        if known is None or cost.cumulative_us > known.cumulative_us:
            by_module[cost.module] = cost
    print(f"top {top} by cumulative time (a parent includes its children)")
    for cost in sorted(by_module.values(), key=lambda c: c.cumulative_us, reverse=True)[:top]:
        cumulative, own = cost.cumulative_us / 1e3, cost.self_us / 1e3
        print(f"  {cumulative:7.1f} ms  (self {own:5.1f} ms)  {cost.module}")
    print(f"top {top} by self time")
    for cost in sorted(costs, key=lambda c: c.self_us, reverse=True)[:top]:
        print(f"  {cost.self_us / 1e3:7.1f} ms  {cost.module}")


# --- the run ----------------------------------------------------------------------------


def find_agent(explicit: str | None) -> str:
    if explicit:
        path = shutil.which(explicit) or explicit
        if not Path(path).is_file():
            sys.exit(f"error: {explicit!r} is not an executable file")
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


def build_arguments(description: str) -> argparse.ArgumentParser:
    """A command line with what every start-up benchmark takes: `--runs`, `--agent` and
    `--before` (`parse_rounds` checks them)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=15, help="interleaved rounds (default 15)")
    parser.add_argument(
        "--agent", help="the acp-agent executable (default: next to this python, then PATH)"
    )
    parser.add_argument("--before", help="another acp-agent executable, run in the same rounds")
    return parser


def parse_rounds(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """`argv` parsed by `parser` (of `build_arguments`), at least one round asked."""
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    parser = build_arguments(__doc__.splitlines()[0])
    parser.add_argument(
        "--peer",
        choices=("auto", "off"),
        default="auto",
        help="run codex-acp 0.16 beside it when installed (default auto)",
    )
    parser.add_argument(
        "--install-peer", action="store_true", help="install codex-acp 0.16 with npm if missing"
    )
    parser.add_argument(
        "--bridge",
        choices=("on", "off"),
        default="on",
        help="run `acp-agent --connect` to an app server beside it (default on)",
    )
    args = parse_rounds(parser, argv)

    python = sys.executable
    agent = find_agent(args.agent)
    peer: Path | str = "off (--peer off)"
    if args.peer == "auto":
        peer = find_codex(install=args.install_peer)

    with tempfile.TemporaryDirectory(prefix="acp-agent-bench-") as scratch, EndlessFake() as fake:
        workspace = Workspace(Path(scratch))
        subjects = [
            relay_subject(python, fake.base_url),
            agent_subject("acp-agent", agent, fake.base_url),
        ]
        if args.before:
            subjects.append(agent_subject("before", find_agent(args.before), fake.base_url))
        if isinstance(peer, Path):
            subjects.append(codex_subject(peer, fake.base_url))
        server: AppServer | None = None
        if args.bridge == "on":
            bridge = bridge_subject(agent, fake.base_url)
            try:
                server = AppServer(agent, bridge, workspace)
            except AgentFailed as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            subjects.append(bridge)
        names = [s.name for s in subjects]
        script: dict[str, list[Session]] = {name: [] for name in names}
        person: dict[str, list[Session]] = {name: [] for name in names}
        floors: list[Floor] = []
        try:
            # One untimed round: fills the page cache and writes .pyc files.
            run_floor(python)
            for subject in subjects:
                run_session(subject, workspace, pause_s=0.0)
            for round_index in range(args.runs):
                floors.append(run_floor(python))
                # The order turns each round, so no subject always follows another.
                turn = round_index % len(subjects)
                for subject in subjects[turn:] + subjects[:turn]:
                    script[subject.name].append(run_session(subject, workspace, pause_s=0.0))
                    person[subject.name].append(
                        run_session(subject, workspace, pause_s=PERSON_PAUSE_S)
                    )
            agent_subject_ = subjects[1]
            run_session(
                agent_subject_, workspace, pause_s=0.0, extra_env={"PYTHONPROFILEIMPORTTIME": "1"}
            )
        except AgentFailed as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        finally:
            if server is not None:
                server.stop()
        costs = parse_import_times(
            (workspace.home("acp-agent") / "stderr.log").read_text(errors="replace")
        )

    others = [name for name in names if name not in ("acp-agent", "bridge")]
    print(
        f"acp-agent start-up: {args.runs} interleaved rounds; acp-agent at {agent}"
        + (f"; before: {args.before}" if args.before else "")
    )
    print(
        f"python {platform.python_version()} ({python}), {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs; the model: a fake provider on 127.0.0.1"
    )
    print("codex-acp 0.16: " + (f"{peer}" if isinstance(peer, Path) else f"not measured: {peer}"))
    print()
    print_startup(floors, script, names)
    print()
    print_way("a script", SCRIPT_ROWS, script, others)
    print()
    print_way(f"a person (prompt {PERSON_PAUSE_S:.0f} s later)", PERSON_ROWS, person, others)
    print()
    if server is not None:
        bridged = [name for name in others if name != "before"]
        print_way("a script, bridged", SCRIPT_ROWS, script, bridged, subject="bridge")
        print()
        print_way("a person, bridged", PERSON_ROWS, person, bridged, subject="bridge")
        print()
    print(
        "ratio: acp-agent's (bridged: the bridge's) median over that column's "
        "(the relay: the protocol's floor)"
    )
    print()
    if args.before:
        print_paired(script, person)
        print()
    # The bridge's own peak would hide the server's runtime: it is left out.
    print_memory(floors, script, [name for name in names if name != "bridge"])
    print()
    print_import_costs(costs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
