"""What big inputs cost: tool results and prompts of 1, 4 and 16 MB, next to the floor.

Usage (with the virtual environment that has acp-agent installed, from the
repository root, since it uses the test suite's MCP server):

    .venv/bin/python benchmarks/big_inputs.py [--sizes 1,4,16] [--runs N] [--kinds ...]

For each kind and size it starts a fresh `python -m acp_agent` with a home of
its own and the scripted model (a context window of 10M tokens, so no prompt
is refused), opens a session and makes one warm-up exchange, then times one
more:

- `mcp`: a tool call to the test server's `dump` tool, which returns that many
  MB of log lines (as SDK servers send a string: as text and again as
  structured content), through to the prompt's answer;
- `prompt`: a prompt whose one text block is that many MB, through to its answer;
- `shell`: a `shell` call printing that many MB of the same log lines;
- `read`: a `read` call of a file of that many MB of them.

It reports the median time and the growth of peak RSS: the agent's high-water
mark is reset just before the timed exchange (`/proc/PID/clear_refs`; where
that is refused, the mark before is subtracted instead, which can read low),
and its growth is VmHWM after minus VmRSS before. Beside it, the floor for the
same input, measured in the same run the same way: a bare Python process that
reads the same message and decodes it, no more:

- `mcp`: the `tools/call` answer line the same server sends (captured from it
  in this run), read from a pipe as the MCP stdio transport delivers it, one
  JSON-RPC line, and decoded with `json.loads`;
- `prompt`: the `session/prompt` request line the agent is sent, the same way;
- `shell`: the command's output, read from a pipe to its end and decoded as UTF-8;
- `read`: the file, read and decoded as UTF-8.

The last column is the agent's growth over the floor's (the target for tool
results is 1.5x at most). Nothing here asserts a number.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

# The agent's debug request, which says where its background warm-up is (`Agent.settle`).
from acp_agent.adapters.acp._debug import MODULES_METHOD

SERVER = Path(__file__).resolve().parents[1] / "tests" / "mcp" / "servers" / "tools_server.py"
TIMEOUT_S = 600.0
KINDS = ("mcp", "prompt", "shell", "read")
#: One line of the log the inputs are made of (the test server's `dump` writes the same).
LOG_LINE = "2026-12-01T10:00:00Z INFO worker[7]: request served in 3 ms, all is well"
#: The id in the floor's copy of the timed prompt's line (one digit, as the agent's).
PROMPT_ID = 4

#: The floor: reads the message on stdin (`json`: one line, `json.loads`; `text`: to the
#: end, decoded as UTF-8) and prints its peak RSS growth in KiB.
FLOOR = r"""
import json, sys
from pathlib import Path

def status(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    raise RuntimeError(key)

try:
    Path("/proc/self/clear_refs").write_text("5")
    before = status("VmRSS:")
except OSError:
    before = status("VmHWM:")
if sys.argv[1] == "json":
    value = json.loads(sys.stdin.buffer.readline())
else:
    value = sys.stdin.buffer.read().decode("utf-8")
print(status("VmHWM:") - before)
"""


def request_line(msg_id: int, method: str, params: dict[str, Any]) -> bytes:
    """A JSON-RPC request as one line, exactly as the agent is sent it."""
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
    return json.dumps(message).encode() + b"\n"


def _status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} for {pid}")


def reset_peak(pid: int) -> int:
    """Reset `pid`'s peak RSS to its RSS now; the KiB its growth is counted from."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return _status_kib(pid, "VmHWM:")
    return _status_kib(pid, "VmRSS:")


class Agent:
    """One agent process over pipes; requests in, answers out."""

    def __init__(self, home: Path, script: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "acp_agent", "--home", str(home), "--script", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            # The debug request below says where the background warm-up is.
            env={**os.environ, "ACP_AGENT_DEBUG": "1"},
        )
        self._ids = 0

    def settle(self) -> None:
        """Wait until the background warm-up has imported what it imports once per
        process (a tool's modules, among them): its memory is not the input's."""
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            state = self.request(MODULES_METHOD, {})["result"]["warmup"]
            if state in ("done", "off"):
                return
            time.sleep(0.05)
        raise RuntimeError("the warm-up did not finish")

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        msg_id = self._ids
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(request_line(msg_id, method, params))
        stdin.flush()
        return self._answer(stdout, msg_id)

    def _answer(self, stdout: IO[bytes], msg_id: int) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            line = stdout.readline()
            if not line:
                raise RuntimeError("the agent closed stdout")
            message: dict[str, Any] = json.loads(line)
            if "method" in message:
                if message["method"] == "session/request_permission":
                    self._allow(message)
                continue
            if message.get("id") == msg_id:
                if "error" in message:
                    raise RuntimeError(f"the agent answered an error: {message['error']}")
                return message
        raise RuntimeError(f"no answer to request {msg_id}")

    def _allow(self, question: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        option = next(o for o in question["params"]["options"] if o["kind"] == "allow_always")
        answer = {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
        self.process.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": question["id"], "result": answer}).encode() + b"\n"
        )
        self.process.stdin.flush()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _call(name: str, call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments, "id": call_id}}


def _print_command(megabytes: float) -> str:
    """A command printing `megabytes` MB of log lines."""
    return f"yes '{LOG_LINE}' | head -c {int(megabytes * 1_000_000)}"


def _log_file(root: Path, megabytes: float) -> Path:
    line = LOG_LINE + "\n"
    path = root / "big.log"
    path.write_text(line * max(1, int(megabytes * 1_000_000 / len(line))))
    return path


def _replies(kind: str, megabytes: int) -> list[list[dict[str, Any]]]:
    """The scripted model's replies: a warm-up exchange, then the timed one."""
    if kind == "prompt":
        return [[{"text": "Warm."}], [{"text": "Done."}]]
    big: dict[str, Any]
    if kind == "mcp":
        warm = _call("mcp__tools__dump", "warm", {"megabytes": 0.01})
        big = _call("mcp__tools__dump", "big", {"megabytes": megabytes})
    elif kind == "shell":
        warm = _call("shell", "warm", {"command": _print_command(0.01)})
        big = _call("shell", "big", {"command": _print_command(megabytes)})
    else:
        warm = _call("read", "warm", {"path": "warm.log"})
        big = _call("read", "big", {"path": "big.log"})
    return [[warm], [{"text": "Warm."}], [big], [{"text": "Done."}]]


def _prompt_text(kind: str, megabytes: int) -> str:
    return "z" * (megabytes * 1_000_000) if kind == "prompt" else "Go."


def one(kind: str, megabytes: int) -> tuple[float, float]:
    """Seconds and MiB of peak RSS growth of one timed exchange."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        work = root / "work"  # the session's folder, beside the agent's home, not above it
        work.mkdir()
        if kind == "read":
            _log_file(work, megabytes)
            (work / "warm.log").write_text(LOG_LINE + "\n")
        script = root / "script.json"
        replies = _replies(kind, megabytes)
        script.write_text(json.dumps({"replies": replies, "context_window": 10_000_000}))
        agent = Agent(root / "home", script)
        try:
            agent.request("initialize", {"protocolVersion": 1})
            servers = []
            if kind == "mcp":
                servers = [
                    {"name": "tools", "command": sys.executable, "args": [str(SERVER)], "env": []}
                ]
            session = agent.request("session/new", {"cwd": str(work), "mcpServers": servers})
            session_id = session["result"]["sessionId"]
            agent.request(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": "Warm up."}]},
            )
            agent.settle()
            text = _prompt_text(kind, megabytes)
            before = reset_peak(agent.process.pid)
            started = time.monotonic()
            agent.request(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
            )
            took = time.monotonic() - started
            grown = (_status_kib(agent.process.pid, "VmHWM:") - before) / 1024
        finally:
            agent.close()
    return took, grown


# --- the floor --------------------------------------------------------------------------


def _floor(mode: str, stdin: Any, message: bytes | None = None) -> float:
    """MiB of peak RSS growth of the bare process reading `message` (or `stdin`)."""
    floor = subprocess.run(
        [sys.executable, "-c", FLOOR, mode],
        input=message,
        stdin=stdin if message is None else None,
        capture_output=True,
        check=True,
        timeout=TIMEOUT_S,
    )
    return int(floor.stdout) / 1024


def mcp_answer_line(megabytes: float) -> bytes:
    """The line the test server sends for a `dump` of `megabytes` (captured from it)."""
    server = subprocess.Popen(
        [sys.executable, str(SERVER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    stdin, stdout = server.stdin, server.stdout
    assert stdin is not None
    assert stdout is not None
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "big_inputs", "version": "1"},
        }
        stdin.write(request_line(1, "initialize", hello))
        stdin.flush()
        stdout.readline()
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        stdin.write(json.dumps(initialized).encode() + b"\n")
        call = {"name": "dump", "arguments": {"megabytes": megabytes}}
        stdin.write(request_line(2, "tools/call", call))
        stdin.flush()
        return stdout.readline()
    finally:
        stdin.close()
        server.wait(timeout=60)


def floor_of(kind: str, megabytes: int) -> float:
    """MiB of peak RSS growth of the floor for `kind` at `megabytes`."""
    if kind == "mcp":
        return _floor("json", None, mcp_answer_line(megabytes))
    if kind == "prompt":
        params = {
            "sessionId": "sess_0123456789abcdef",
            "prompt": [{"type": "text", "text": _prompt_text(kind, megabytes)}],
        }
        return _floor("json", None, request_line(PROMPT_ID, "session/prompt", params))
    if kind == "shell":
        command = subprocess.Popen(["sh", "-c", _print_command(megabytes)], stdout=subprocess.PIPE)
        try:
            return _floor("text", command.stdout)
        finally:
            with contextlib.suppress(subprocess.TimeoutExpired):
                command.wait(timeout=60)
    with tempfile.TemporaryDirectory() as folder, _log_file(Path(folder), megabytes).open() as f:
        return _floor("text", f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="1,4,16")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print("| input | MB | time | time ratio | peak RSS growth | floor | growth / floor |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for kind in args.kinds.split(","):
        previous: float | None = None
        for size in sizes:
            agent_runs: list[tuple[float, float]] = []
            floor_runs: list[float] = []
            for _ in range(args.runs):  # interleaved, so drift hits both alike
                agent_runs.append(one(kind, size))
                floor_runs.append(floor_of(kind, size))
            took = statistics.median(run[0] for run in agent_runs)
            grown = statistics.median(run[1] for run in agent_runs)
            floor = statistics.median(floor_runs)
            step = "" if previous is None else f"{took / previous:.1f}x"
            ratio = f"{grown / floor:.2f}x" if floor > 0 else ""
            print(
                f"| {kind} | {size} | {took:.2f} s | {step} | {grown:.0f} MiB "
                f"| {floor:.0f} MiB | {ratio} |",
                flush=True,
            )
            previous = took


if __name__ == "__main__":
    main()
