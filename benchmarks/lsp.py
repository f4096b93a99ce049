"""What code intelligence costs an edit: the language servers' wait, next to no servers.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/lsp.py [--rounds N] [--edits N]

Each round runs the real agent (`python -m acp_agent --script ...`, a home of its
own, the session in `accept-edits` mode) twice, interleaved: once with code
intelligence on (`ACP_AGENT_LSP=1`: ruff's server, and basedpyright when the
`types` extra is installed) and once with it off (`ACP_AGENT_LSP=0`). In one
prompt the scripted model makes `--edits` `write` calls to one Python file, each
alternately bringing in an undefined name and taking it out again. For each call
the client notes the time from its `tool_call` to its completed `tool_call_update`:

- the first edit, which starts the servers (its wait is bounded by the settle
  time, `ACP_AGENT_LSP_SETTLE_S`, 1.5 s by default);
- every later edit, each of which waits for the servers' diagnostics.

The table shows medians over the rounds, and each as a ratio to the same edit with
code intelligence off, measured in the same run; and how many of the later edits
came back with the new problem (they all should, once the servers run).

It is a report: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

ANSWER_TIMEOUT_S = 120.0
BROKEN = "def total(items: list[int]) -> int:\n    return sum(itemz)\n"
FIXED = "def total(items: list[int]) -> int:\n    return sum(items)\n"


class Agent:
    """The agent over its stdin and stdout, read synchronously; notes each call's times."""

    def __init__(self, home: str, script: Path, *, lsp: bool) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
        env["ACP_AGENT_LSP"] = "1" if lsp else "0"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "acp_agent", "--home", home, "--script", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._ids = 0
        #: call id -> (proposed at, completed at, the completed update's text)
        self.calls: dict[str, list[Any]] = {}

    def request(self, method: str, params: dict[str, Any]) -> Any:
        assert self.process.stdin is not None
        self._ids += 1
        request_id = self._ids
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        stdout: IO[bytes] | None = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while time.monotonic() < deadline:
            line = stdout.readline()
            if not line:
                raise RuntimeError("the agent closed stdout")
            now = time.monotonic()
            decoded = json.loads(line)
            if decoded.get("id") == request_id and "method" not in decoded:
                if "error" in decoded:
                    raise RuntimeError(f"the agent answered an error: {decoded['error']}")
                return decoded["result"]
            self._note(decoded.get("params", {}).get("update", {}), now)
        raise RuntimeError(f"no answer to {method}")

    def _note(self, update: dict[str, Any], now: float) -> None:
        call_id = update.get("toolCallId")
        if call_id is None:
            return
        if update.get("sessionUpdate") == "tool_call":
            self.calls[call_id] = [now, None, ""]
        elif update.get("status") in ("completed", "failed") and call_id in self.calls:
            texts = [
                part.get("content", {}).get("text", "")
                for part in update.get("content") or []
                if part.get("type") == "content"
            ]
            ended = now if update["status"] == "completed" else None
            self.calls[call_id][1:] = [ended, "\n".join(texts)]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=ANSWER_TIMEOUT_S)


def one_run(edits: int, *, lsp: bool) -> list[tuple[float, bool]]:
    """(seconds, whether the result named the new problem) for each edit, in order."""
    calls = [
        [
            {
                "tool_call": {
                    "id": f"edit_{i}",
                    "name": "write",
                    "arguments": {"path": "calc.py", "content": BROKEN if i % 2 == 0 else FIXED},
                }
            }
        ]
        for i in range(edits)
    ]
    # Read first: a file is written over only once this line of work has read it.
    read = [{"tool_call": {"id": "read", "name": "read", "arguments": {"path": "calc.py"}}}]
    script = {"replies": [read, *calls, [{"text": "Done."}]]}
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as workspace:
        root = Path(workspace).resolve()
        (root / "calc.py").write_text(FIXED)
        path = Path(home) / "script.json"
        path.write_text(json.dumps(script))
        agent = Agent(home, path, lsp=lsp)
        try:
            agent.request("initialize", {"protocolVersion": 1})
            session = agent.request("session/new", {"cwd": str(root), "mcpServers": []})
            session_id = session["sessionId"]
            agent.request("session/set_mode", {"sessionId": session_id, "modeId": "accept-edits"})
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "Go"}]}
            agent.request("session/prompt", prompt)
        finally:
            agent.close()
    timings = []
    for i in range(edits):
        started, ended, text = agent.calls[f"edit_{i}"]
        if ended is None:
            raise RuntimeError(f"edit {i} did not complete: {text or 'no result'}")
        timings.append((ended - started, "itemz" in text))
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--edits", type=int, default=9)
    args = parser.parse_args(argv)
    first: dict[bool, list[float]] = {True: [], False: []}
    later: dict[bool, list[float]] = {True: [], False: []}
    reported = 0
    broken_later = 0
    for round_number in range(args.rounds):
        for lsp in (True, False):
            timings = one_run(args.edits, lsp=lsp)
            first[lsp].append(timings[0][0])
            later[lsp].extend(t for t, _ in timings[1:])
            if lsp:
                broken = [named for i, (_, named) in enumerate(timings) if i > 0 and i % 2 == 0]
                broken_later += len(broken)
                reported += sum(broken)
            print(
                f"round {round_number + 1} lsp {'on ' if lsp else 'off'}: first "
                f"{1000 * timings[0][0]:.1f} ms, later median "
                f"{1000 * statistics.median(t for t, _ in timings[1:]):.1f} ms",
                file=sys.stderr,
            )
    print(f"{args.rounds} rounds of {args.edits} edits; medians\n")
    print("| edit | code intelligence off | on | on / off |")
    print("|------|---------------------:|---:|---------:|")
    for label, values in (("first (starts the servers)", first), ("later", later)):
        off, on = statistics.median(values[False]), statistics.median(values[True])
        print(f"| {label} | {1000 * off:.1f} ms | {1000 * on:.1f} ms | {on / off:.1f}x |")
    print(
        "\nlater edits that brought in the undefined name and were told so: "
        f"{reported}/{broken_later}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
