"""How long `session/load` of a long session takes, what it sends, and how quick the next prompt is.

Usage (from the repository root, with the virtual environment that has acp-agent
installed):

    .venv/bin/python benchmarks/load.py [--turns 10,100,1000,5000] [--rounds N]
                                        [--shapes chat,tools,compacted] [--python PATH]

For each shape of turn and each size it builds a session of that many turns
through the store (not by prompting: 5,000 prompts take minutes): the real agent
makes the session (`session/new`), then the benchmark appends the turns to its
timeline through `Timeline.append`, batch by batch as a live turn records them.
Three shapes of turn:

- chat: the person's prompt and a reply streamed in seven chunks (four of them
  merged in one event, as a group commit merges them): 8 events, 9 updates if
  every event's updates were replayed as the live stream sent them;
- tools: the prompt, a reply in five chunks proposing a `read`, the call
  admitted, started and its result recorded, an answer in three chunks: 18
  events, 14 updates;
- compacted: tools turns, every 100th followed by a compaction that keeps the
  last 20 turns (as a long session in use is compacted): the model's view is
  then built from the last compaction on, and the prompt after the load waits
  for that.

Then, `--rounds` times (default 3), interleaved, each on a fresh copy of the store:

- relay (the floor): a minimal ACP agent of the standard library alone (this
  file, `--relay`): it answers `session/load` by reading the same rows from the
  same SQLite file with `sqlite3`, decoding each payload with `json`, and writing
  one update per message and one per tool call (its final state), and a prompt
  with one chunk and its answer. No projection, no checks: what any agent must
  at least do to show the history;
- agent: a real `acp-agent` process (`--script`, the scripted model, so no
  network is timed) is initialized and, a second later (the start-up's warm-up is
  `startup.py`'s), `session/load` is timed from request written to answer read,
  its `session/update`s before the answer counted; then a prompt, sent at once
  (as a script would), is timed from written to its first `agent_message_chunk`.
  The session keeps its replay's lines, as one the live stream followed does
  (`adapters/acp/_replay_kept.py`: a chunk per turn; here one chunk, kept by a load
  of the built session before the rounds);
- agent, a person: the same, the prompt sent a second after the load's answer;
- agent, nothing kept: the load of the session as built, every event translated
  (a session an older version wrote, or whose kept lines a change of code retired).

- codex-acp 0.16 (the Rust build, `codex_peer.py`; chat turns only, sizes up to
  `--peer-max-turns`, default 1,000): a session of as many turns made by prompting it
  against the fake model, each reply streamed in the same seven pieces
  (`codex_sessions.py`: codex keeps sessions in its own files), loaded the same way,
  a second after `initialize`. `--peer off` leaves it out; `--install-peer` installs it.

Besides wall time, the CPU time the process's threads ran meanwhile (Linux,
`/proc/<pid>/task/*/schedstat`): on a busy machine a wall time also counts the
waits for a core. The tables show medians, each with its ratio to the relay's
(the load), or to the same path after the smallest session (the prompt after it).
`--python PATH` runs the agent with another interpreter, one whose environment has
another version installed (before and after a change, with the same benchmark).
Targets (issue 39): a 1,000-turn load under 250 ms; a 100-turn load at most 1.5x
codex-acp's; the first chunk after 1,000 turns as quick as after 10.

It is a report: nothing here asserts a time. Linux and macOS (pipes, threads).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 120.0
PROMPT = "Please look at the parser and fix the off-by-one in its tokenizer."
REPLY = ["I will ", "read the parser first, ", "then fix ", "the tokenizer's ", "bound."]
ANSWER = ["The bound ", "was off by one; ", "it is fixed."]
CHAT_REPLY = [
    "The tokenizer ",
    "counts from one ",
    "where the parser ",
    "counts from zero, ",
    "so the last token ",
    "is cut short: ",
    "start both at zero.",
]
FILE_TEXT = "def position(x):\n    return x + 1\n" * 8
#: The kinds of turn, as the report names them.
SHAPES: dict[str, str] = {
    "chat": "a prompt and a reply streamed in 7 chunks: 8 events, 9 updates live",
    "tools": "a prompt, a reply proposing a read, its result, an answer: 18 events, 14 updates",
    "compacted": "tools turns, a compaction keeping the last 20 after every 100th",
}
#: The compacted shape: a compaction after every this many turns, keeping this many.
COMPACT_EVERY, COMPACT_KEEPS = 100, 20
#: How long after `initialize` the load is sent: a person picks the session to open.
WARM_UP_S = 1.0
#: How long after the load's answer a person sends the next prompt (they read, they type).
PERSON_PAUSE_S = 1.0
#: The paths measured: the agent as a script prompts it (at once) and as a person does,
#: and the relay; each a command, the pause before the prompt, and whether the session's
#: replay lines are kept, as the live stream keeps them turn by turn (else the agent
#: translates the whole history: a session an older version wrote).
PATHS: dict[str, tuple[str, float, bool]] = {
    "relay": ("relay", 0.0, False),
    "agent": ("agent", 0.0, True),
    "agent, a person": ("agent", PERSON_PAUSE_S, True),
    "agent, nothing kept": ("agent", 0.0, False),
}


# --- building a session through the store ---------------------------------------------------


def script_file(directory: Path) -> Path:
    """The scripted model's replies for the prompt after the load: text, then the end. Its
    window holds the longest session whole: a history past the window is compacted on the
    next prompt, loaded or not, which is not what is measured here."""
    path = directory / "load.json"
    replies = [[{"text": "Loaded. "}, {"text": "Next?"}]]
    path.write_text(json.dumps({"replies": replies, "context_window": 10_000_000}))
    return path


def turn_drafts(turn: int, model: str, shape: str) -> list[list[Any]]:
    """One turn's batches of event drafts, as a live turn records them (see the module
    docstring for the chat and tools shapes)."""
    from acp_agent.content import Location, TextContent
    from acp_agent.core import (
        CallId,
        EventDraft,
        ModelRequestFinished,
        ModelRequestStarted,
        ModelStopReason,
        ModelTextDelta,
        ToolCallAdmitted,
        ToolCallCompleted,
        ToolCallRequested,
        ToolCallStarted,
        ToolResultRecorded,
        TurnEnded,
        TurnId,
        TurnStopReason,
        Usage,
        UserInputAdopted,
    )

    def one(producer: str, *payloads: Any) -> list[Any]:
        return [EventDraft(payload, producer) for payload in payloads]

    def streamed(request: str, pieces: Sequence[str], merged: int) -> list[list[Any]]:
        """`pieces` as delta events, the first `merged` of them in one (a group commit)."""
        head = [ModelTextDelta(request, "".join(pieces[:merged]), list(pieces[:merged]))]
        rest = [ModelTextDelta(request, piece) for piece in pieces[merged:]]
        return [one("capabilities.loop", delta) for delta in head + rest]

    turn_id = TurnId(f"turn_{turn}")
    first, second, call_id = f"req_{turn}_a", f"req_{turn}_b", CallId(f"call_{turn}")
    used = Usage(input_tokens=2000 + 40 * turn, output_tokens=30)
    prompt = one("core", UserInputAdopted(turn_id, (TextContent(f"{PROMPT} ({turn})"),)))
    if shape == "chat":
        return [
            prompt,
            one("capabilities.loop", ModelRequestStarted(first, turn_id, model)),
            *streamed(first, CHAT_REPLY, merged=4),
            one(
                "capabilities.loop",
                ModelRequestFinished(first, ModelStopReason.END_TURN, used),
                TurnEnded(turn_id, TurnStopReason.END_TURN),
            ),
        ]
    path = "/work/src/parser.py"
    return [
        prompt,
        one("capabilities.loop", ModelRequestStarted(first, turn_id, model)),
        *streamed(first, REPLY, merged=2),
        one(
            "capabilities.loop",
            ModelRequestFinished(first, ModelStopReason.TOOL_USE, used),
            ToolCallRequested(
                first, call_id, "read", {"path": path}, "Read parser.py", "read", (Location(path),)
            ),
        ),
        one("capabilities.tools", ToolCallAdmitted(call_id), ToolCallStarted(call_id)),
        one(
            "capabilities.tools",
            ToolCallCompleted(call_id, True),
            ToolResultRecorded(call_id, first, (TextContent(f"```\n{FILE_TEXT}```"),), False),
        ),
        one("capabilities.loop", ModelRequestStarted(second, turn_id, model)),
        *streamed(second, ANSWER, merged=1),
        one(
            "capabilities.loop",
            ModelRequestFinished(second, ModelStopReason.END_TURN, used),
            TurnEnded(turn_id, TurnStopReason.END_TURN),
        ),
    ]


async def append_turns(database: Path, session_id: str, turns: int, shape: str) -> None:
    """Append `turns` turns to the session's main timeline, through the store."""
    from acp_agent.core import (
        CompactionRecorded,
        ConfigurationAdopted,
        EventDraft,
        Seq,
        open_runtime,
    )
    from acp_agent.store import SqliteStore

    store = await SqliteStore.open(database, synchronous="NORMAL")
    try:
        async with open_runtime(store) as runtime:
            session = await runtime.load_session(session_id)  # type: ignore[arg-type]
            timeline = session.main.timeline
            model = "scripted/load"
            for event in await timeline.read():
                if isinstance(event.payload, ConfigurationAdopted):
                    model = str(event.payload.values.get("model", model))
            ends: list[int] = []  # the seq each turn ended at
            for turn in range(turns):
                for drafts in turn_drafts(turn, model, "chat" if shape == "chat" else "tools"):
                    batch = await timeline.append(drafts)
                ends.append(int(batch.events[-1].seq))
                if shape == "compacted" and (turn + 1) % COMPACT_EVERY == 0:
                    covers_lte = Seq(ends[turn - COMPACT_KEEPS])
                    summary = f"The parser's tokenizer was fixed in turns up to {turn}."
                    compaction = CompactionRecorded(f"cmp_{turn}", covers_lte, summary)
                    await timeline.append([EventDraft(compaction, "capabilities.context")])
    finally:
        await store.aclose()


def build(
    directory: Path, workspace: Path, script: Path, turns: int, shape: str
) -> tuple[Path, str]:
    """A home whose store holds one session of `turns` turns of `shape`; the home and the
    session id."""
    import anyio

    home = directory / f"home-{shape}-{turns}"
    agent = Client(agent_command(home, script))
    try:
        agent.request("initialize", {"protocolVersion": 1})
        new = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        session_id = new["result"]["sessionId"]
    finally:
        agent.close()
    anyio.run(append_turns, database_of(home), session_id, turns, shape)
    return home, session_id


def keep_lines(
    directory: Path,
    home: Path,
    workspace: Path,
    script: Path,
    session_id: str,
    python: str | None = None,
) -> Path:
    """A copy of `home` whose session keeps its replay lines, as a session the live stream
    followed does (there a chunk per turn; here the one chunk a load keeps of all it
    translated, which it writes once the load is answered), kept by the agent `python`
    runs: lines are kept per build (their key names the code), so each build loads a
    copy it primed itself."""
    kept = directory / f"{home.name}-kept{'-before' if python else ''}"
    shutil.copytree(home, kept)
    agent = Client(agent_command(kept, script, python))
    try:
        agent.request("initialize", {"protocolVersion": 1})
        load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
        agent.request("session/load", load)
        deadline = time.monotonic() + TIMEOUT_S
        while not _keeps_lines(kept, session_id):
            if time.monotonic() > deadline:
                raise TimeoutError("the load kept no replay lines")
            time.sleep(0.05)
    finally:
        agent.close()
    return kept


def _keeps_lines(home: Path, session_id: str) -> bool:
    with contextlib.closing(sqlite3.connect(database_of(home))) as db:
        row = db.execute(
            "SELECT count(*) FROM session_outputs WHERE session_id = ? AND key LIKE 'replay/%'",
            (session_id,),
        ).fetchone()
    return bool(row[0])


def database_of(home: Path) -> Path:
    return home / "data" / "sessions.sqlite3"


# --- talking to an agent -----------------------------------------------------------------------


#: The interpreter the agent runs with (`--python`): this one, or one with another version.
AGENT_PYTHON: list[str] = [sys.executable]


#: Another interpreter whose environment has the build to compare with (`--before`).
BEFORE_PYTHON: list[str] = []


def agent_command(home: Path, script: Path, python: str | None = None) -> list[str]:
    agent = python or AGENT_PYTHON[0]
    return [agent, "-m", "acp_agent", "--home", str(home), "--script", str(script)]


def relay_command(home: Path) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--relay", str(database_of(home))]


class Client:
    """An ACP agent as a subprocess; a thread notes when each stdout line arrives."""

    def __init__(self, command: list[str]) -> None:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "ANTHROPIC_", "ACP_AGENT_"))
        }
        env["ACP_AGENT_LSP"] = "0"
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            # Not the repository: `-m` would import the checkout there, not the version
            # the interpreter has installed.
            cwd=tempfile.gettempdir(),
        )
        self.lines: list[tuple[float, bytes]] = []
        self._arrived = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._ids = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            now = time.monotonic()
            with self._arrived:
                self.lines.append((now, line))
                self._arrived.notify_all()

    def send(self, method: str, params: dict[str, Any]) -> tuple[int, float]:
        """Write a request; its id and when it was written."""
        self._ids += 1
        assert self.process.stdin is not None
        message = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        data = json.dumps(message).encode() + b"\n"
        sent_at = time.monotonic()
        self.process.stdin.write(data)
        self.process.stdin.flush()
        return self._ids, sent_at

    def wait_for(self, found: Any, start: int) -> tuple[int, float, bytes]:
        """The first line from index `start` that `found(line)` accepts: index, time, line."""
        deadline = time.monotonic() + TIMEOUT_S
        seen = start
        with self._arrived:
            while True:
                for index in range(seen, len(self.lines)):
                    at, line = self.lines[index]
                    if found(line):
                        return index, at, line
                seen = len(self.lines)
                if not self._arrived.wait(timeout=max(0.0, deadline - time.monotonic())):
                    raise TimeoutError(f"nothing awaited arrived within {TIMEOUT_S} s")

    def answer(self, msg_id: int, start: int) -> tuple[int, float, dict[str, Any]]:
        def found(line: bytes) -> bool:
            if b'"method"' in line:
                return False
            return bool(json.loads(line).get("id") == msg_id)

        index, at, line = self.wait_for(found, start)
        decoded = json.loads(line)
        if "error" in decoded:
            raise RuntimeError(f"request {msg_id} failed: {decoded['error']}")
        return index, at, decoded

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        start = len(self.lines)
        msg_id, _ = self.send(method, params)
        return self.answer(msg_id, start)[2]

    def cpu(self) -> dict[str, int] | None:
        """Nanoseconds each of the process's threads ran so far (Linux: `schedstat`); None
        elsewhere. On a busy machine the wall time counts the waits for a core; this not."""
        ran = {}
        try:
            for task in Path(f"/proc/{self.process.pid}/task").iterdir():
                with contextlib.suppress(FileNotFoundError):  # a thread that just ended
                    ran[task.name] = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return ran

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


@dataclass
class Run:
    """One load and the prompt after it."""

    load_s: float
    #: CPU the agent's threads used from the request written to the answer read.
    load_cpu_s: float | None
    updates: int
    first_chunk_s: float
    first_chunk_cpu_s: float | None


def run_once(command: list[str], session_id: str, workspace: Path, pause_s: float) -> Run:
    """Load the session, then (after `pause_s`) prompt it."""
    client = Client(command)
    try:
        client.request("initialize", {"protocolVersion": 1})
        time.sleep(WARM_UP_S)  # the start-up's warm-up is another benchmark's (startup.py)
        start = len(client.lines)
        load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
        cpu = client.cpu()
        msg_id, sent_at = client.send("session/load", load)
        index, answered_at, _ = client.answer(msg_id, start)
        load_cpu = _spent(cpu, client.cpu())
        updates = sum(1 for _, line in client.lines[start:index] if b'"session/update"' in line)
        time.sleep(pause_s)
        start = len(client.lines)
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "Go on"}]}
        cpu = client.cpu()
        msg_id, prompted_at = client.send("session/prompt", prompt)
        _, chunk_at, _ = client.wait_for(lambda line: b'"agent_message_chunk"' in line, start)
        chunk_cpu = _spent(cpu, client.cpu())
        client.answer(msg_id, start)
        return Run(answered_at - sent_at, load_cpu, updates, chunk_at - prompted_at, chunk_cpu)
    finally:
        client.close()


def _spent(before: dict[str, int] | None, after: dict[str, int] | None) -> float | None:
    """CPU seconds the threads ran between two samples (a thread that ended in between
    counts nothing: a little less than it was)."""
    if before is None or after is None:
        return None
    return sum(ran - before.get(tid, 0) for tid, ran in after.items()) / 1e9


def median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


@dataclass
class Peer:
    """codex-acp 0.16 and the fake model it answers from."""

    binary: Path
    base_url: str


def measure(
    directory: Path,
    workspace: Path,
    script: Path,
    turns: int,
    shape: str,
    rounds: int,
    peer: Peer | None = None,
) -> dict[str, Any]:
    """Median figures of the agent, the relay and (given) codex-acp for a session of
    `turns` turns."""
    import codex_sessions

    home, session_id = build(directory, workspace, script, turns, shape)
    kept_home = keep_lines(directory, home, workspace, script, session_id)
    before_home = None
    if BEFORE_PYTHON:
        before_home = keep_lines(directory, home, workspace, script, session_id, BEFORE_PYTHON[0])
    codex_home = directory / f"codex-{turns}"
    codex_id = None
    if peer is not None:
        codex_id = codex_sessions.build(peer.binary, peer.base_url, codex_home, workspace, turns)
    runs: dict[str, list[Run]] = {path: [] for path in PATHS}
    before: list[Run] = []
    codex_runs: list[codex_sessions.CodexLoad] = []
    copy = directory / f"copy-{turns}"
    for _ in range(rounds):
        for path, (commands, pause_s, kept) in PATHS.items():  # interleaved: the same noise
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(kept_home if kept else home, copy)
            command = agent_command(copy, script) if commands == "agent" else relay_command(copy)
            runs[path].append(run_once(command, session_id, workspace, pause_s))
        if before_home is not None:  # the script's path, right after the agent's in the round
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(before_home, copy)
            command = agent_command(copy, script, BEFORE_PYTHON[0])
            before.append(run_once(command, session_id, workspace, 0.0))
        if peer is not None and codex_id is not None:
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(codex_home, copy)
            codex_runs.append(
                codex_sessions.load_once(
                    peer.binary, peer.base_url, copy, workspace, codex_id, WARM_UP_S
                )
            )
    shutil.rmtree(home)
    shutil.rmtree(kept_home)
    if before_home is not None:
        shutil.rmtree(before_home)
    shutil.rmtree(copy, ignore_errors=True)
    shutil.rmtree(codex_home, ignore_errors=True)
    row: dict[str, Any] = {"turns": turns, "shape": shape}
    if before:
        row["paired"] = {
            what: [pick(now) - pick(then) for now, then in zip(runs["agent"], before, strict=True)]
            for what, pick in (
                ("load_s", lambda run: run.load_s),
                ("first_chunk_s", lambda run: run.first_chunk_s),
            )
        }
    if codex_runs:
        row["codex"] = {
            "load_s": median([r.load_s for r in codex_runs]),
            "updates": median([r.updates for r in codex_runs]),
        }
    for path, done in runs.items():
        row[path] = {
            "load_s": median([r.load_s for r in done]),
            "load_cpu_s": median([r.load_cpu_s for r in done]),
            "updates": median([r.updates for r in done]),
            "first_chunk_s": median([r.first_chunk_s for r in done]),
            "first_chunk_cpu_s": median([r.first_chunk_cpu_s for r in done]),
        }
    return row


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.1f}"


def _ratio(ours: float | None, floor: float | None) -> str:
    return "-" if ours is None or not floor else f"{ours / floor:.1f}x"


def report(rows: list[dict[str, Any]]) -> None:
    """The tables of one shape of turn (see the module docstring)."""
    print(f"{rows[0]['shape']} turns ({SHAPES[rows[0]['shape']]})")
    print("session/load (request written -> answer read), and the updates replayed before it;")
    print("agent: the replay's lines kept (as the live stream keeps them); nothing kept: all")
    print("translated (a session an older version wrote)")
    peer = any("codex" in row for row in rows)
    print(
        f"{'turns':>6} | {'agent ms':>9} {'cpu ms':>8} {'nothing kept':>12} |"
        f" {'relay ms':>9} {'cpu ms':>8} |"
        f" {'ratio':>6} {'cpu':>6} | {'updates':>8} {'/turn':>6} {'relay':>7}"
        + (f" | {'codex ms':>9} {'ratio':>6} {'updates':>8}" if peer else "")
    )
    for row in rows:
        agent, relay = row["agent"], row["relay"]
        translated = row["agent, nothing kept"]
        codex = row.get("codex")
        print(
            f"{row['turns']:>6} | {_ms(agent['load_s']):>9} {_ms(agent['load_cpu_s']):>8}"
            f" {_ms(translated['load_s']):>12} |"
            f" {_ms(relay['load_s']):>9} {_ms(relay['load_cpu_s']):>8} |"
            f" {_ratio(agent['load_s'], relay['load_s']):>6}"
            f" {_ratio(agent['load_cpu_s'], relay['load_cpu_s']):>6} |"
            f" {agent['updates']:>8.0f} {agent['updates'] / row['turns']:>6.1f}"
            f" {relay['updates']:>7.0f}"
            + (
                f" | {_ms(codex['load_s']):>9} {_ratio(agent['load_s'], codex['load_s']):>6}"
                f" {codex['updates']:>8.0f}"
                if codex
                else (f" | {'-':>9} {'-':>6} {'-':>8}" if peer else "")
            )
        )
    print()
    print("the next prompt -> its first agent_message_chunk (vs. after the smallest session)")
    print(
        f"{'turns':>6} | {'script ms':>9} {'cpu ms':>8} {'ratio':>6} |"
        f" {'person ms':>9} {'cpu ms':>8} {'ratio':>6} | {'relay ms':>8}"
    )
    first = rows[0]
    for row in rows:
        script, person, relay = row["agent"], row["agent, a person"], row["relay"]
        print(
            f"{row['turns']:>6} | {_ms(script['first_chunk_s']):>9}"
            f" {_ms(script['first_chunk_cpu_s']):>8}"
            f" {_ratio(script['first_chunk_s'], first['agent']['first_chunk_s']):>6} |"
            f" {_ms(person['first_chunk_s']):>9} {_ms(person['first_chunk_cpu_s']):>8}"
            f" {_ratio(person['first_chunk_s'], first['agent, a person']['first_chunk_s']):>6} |"
            f" {_ms(relay['first_chunk_s']):>8}"
        )


def report_paired(rows: list[dict[str, Any]]) -> None:
    """`--before` -> this build, paired by round: both load the same copy in every round,
    so the machine's drift (which moves whole runs' medians by tens of ms on the 2-core
    machine) cancels out of each difference."""
    print("before -> acp-agent, paired by round (a script: load, then the next prompt)")
    faster = "faster in"
    print(f"{'turns':>6} | {'load change':>12} {faster:>10} | {'prompt change':>14} {faster:>10}")
    for row in rows:
        load, prompt = row["paired"]["load_s"], row["paired"]["first_chunk_s"]
        print(
            f"{row['turns']:>6} | {statistics.median(load) * 1e3:>+9.1f} ms"
            f" {_faster(load):>10} | {statistics.median(prompt) * 1e3:>+11.1f} ms"
            f" {_faster(prompt):>10}"
        )


def _faster(changes: list[float]) -> str:
    return f"{sum(change < 0 for change in changes)}/{len(changes)}"


# --- the relay: the floor ------------------------------------------------------------------------


def relay(database: Path) -> None:
    """A minimal ACP agent over stdio (see the module docstring): the standard library only."""
    out = sys.stdout.buffer

    def write(message: dict[str, Any]) -> None:
        out.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def update(session_id: str, body: dict[str, Any]) -> None:
        write(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": session_id, "update": body},
            }
        )

    for line in sys.stdin.buffer:
        request = json.loads(line)
        method, params, msg_id = (
            request.get("method"),
            request.get("params") or {},
            request.get("id"),
        )
        result: dict[str, Any] = {}
        if method == "initialize":
            result = {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}
        elif method == "session/load":
            replay(database, params["sessionId"], update)
        elif method == "session/prompt":
            chunk = {"type": "text", "text": "Loaded. Next?"}
            update(params["sessionId"], {"sessionUpdate": "agent_message_chunk", "content": chunk})
            result = {"stopReason": "end_turn"}
        write({"jsonrpc": "2.0", "id": msg_id, "result": result})
        out.flush()


def replay(database: Path, session_id: str, update: Any) -> None:
    """One update per message (deltas of one reply joined) and per tool call (final state)."""
    with sqlite3.connect(database) as db:
        (branch_id,) = db.execute(
            "SELECT main_branch_id FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        rows = db.execute(
            "SELECT kind, payload FROM events WHERE branch_id = ? ORDER BY seq", (branch_id,)
        ).fetchall()
    shown: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    text_of: str | None = None
    for kind, payload in rows:
        data = json.loads(payload)
        if kind == "user_input.adopted":
            for block in data["content"]:
                shown.append({"sessionUpdate": "user_message_chunk", "content": block})
        elif kind == "model_request.text_delta":
            if text_of == data["request_id"]:
                shown[-1]["content"]["text"] += data["text"]
                continue
            content = {"type": "text", "text": data["text"]}
            shown.append({"sessionUpdate": "agent_message_chunk", "content": content})
        elif kind == "tool_call.requested":
            call = {
                "sessionUpdate": "tool_call",
                "toolCallId": data["call_id"],
                "title": data["title"],
                "kind": data["tool_kind"],
                "status": "pending",
                "rawInput": data["arguments"],
            }
            calls[data["call_id"]] = call
            shown.append(call)
        elif kind == "tool_call.result" and data["call_id"] in calls:
            call = calls.pop(data["call_id"])
            call["status"] = "failed" if data["is_error"] else "completed"
            call["content"] = [{"type": "content", "content": c} for c in data["content"]]
        text_of = data["request_id"] if kind == "model_request.text_delta" else None
    for body in shown:
        update(session_id, body)


# --- the report ----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", default="10,100,1000,5000", help="session sizes, in turns")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--shapes", default="chat,tools,compacted", help="kinds of turn: chat, tools, compacted"
    )
    parser.add_argument(
        "--python",
        help="the interpreter to run the agent with (one whose environment has another "
        "version installed: before and after a change)",
    )
    parser.add_argument(
        "--before",
        help="an interpreter whose environment has the build to compare with: it loads the "
        "same sessions in every round, reported paired by round",
    )
    parser.add_argument(
        "--peer", choices=("auto", "off"), default="auto", help="codex-acp 0.16 beside (chat)"
    )
    parser.add_argument(
        "--install-peer", action="store_true", help="install codex-acp 0.16 with npm if missing"
    )
    parser.add_argument(
        "--peer-max-turns",
        type=int,
        default=1000,
        help="the largest codex session built, by prompting (1,000 turns: about a minute)",
    )
    parser.add_argument("--relay", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.relay is not None:
        relay(args.relay)
        return 0
    if args.python is not None:
        AGENT_PYTHON[0] = args.python
    if args.before is not None:
        BEFORE_PYTHON.append(args.before)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from codex_peer import find_codex
    from codex_sessions import ReplyFake

    sizes = [int(n) for n in args.turns.split(",")]
    peer: Path | str = "off (--peer off)"
    if args.peer == "auto":
        peer = find_codex(install=args.install_peer)
    with (
        tempfile.TemporaryDirectory(prefix="acp-agent-load-") as temporary,
        ReplyFake(CHAT_REPLY) as fake,
    ):
        directory = Path(temporary)
        workspace = directory / "workspace"
        workspace.mkdir()
        script = script_file(directory)
        for shape in args.shapes.split(","):
            rows = []
            for turns in sizes:
                codex = None
                if isinstance(peer, Path) and shape == "chat" and turns <= args.peer_max_turns:
                    codex = Peer(peer, fake.base_url)
                rows.append(measure(directory, workspace, script, turns, shape, args.rounds, codex))
                print(f"measured {turns} {shape} turns", file=sys.stderr)
            report(rows)
            if BEFORE_PYTHON:
                print()
                report_paired(rows)
            if shape == "chat":
                print(
                    "codex-acp 0.16: "
                    + (f"{peer}" if isinstance(peer, Path) else f"not measured: {peer}")
                )
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
