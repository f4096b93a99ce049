"""Whether an edit's new problems reach its result, and how long that takes, cold and warm.

Usage (with the virtual environment that has acp-agent installed):

    .venv/bin/python benchmarks/lsp.py [--rounds N] [--edits N] [--settle S]

Two parts, both on the real language servers (ruff's, and basedpyright when the
`types` extra is installed):

1. Through the agent. Each round runs `python -m acp_agent --script ...` (a home of
   its own, the session in `accept-edits` mode) twice, interleaved: code
   intelligence on (`ACP_AGENT_LSP=1`, the default bound unless `--settle` sets
   `ACP_AGENT_LSP_SETTLE_S`) and off (`ACP_AGENT_LSP=0`, the baseline). In one prompt
   the scripted model makes `--edits` `write` calls to a Python file that exists and
   was read, alternately breaking it (an undefined name for ruff, a wrong return type
   for basedpyright) and mending it. For the breaking edits, the first of the session
   (its servers still starting) and the later ones, it reports the share whose result
   named every server's problem, the share that said a server had not finished (its
   problems may be missing) and the share that did neither (problems lost silently:
   there should be none); and the time from the call's `tool_call` to its completed
   update, median and slowest, next to the same edit with code intelligence off.

2. Per server, in this process: a `CodeIntelligence` with that server alone and no
   bound to speak of reviews the same edits; the time from the edit to its problems
   for the first edit (the server starting: spawn, initialize, the file's problems
   before and after) and for later ones. This is what the bound (`DEFAULT_SETTLE_S`)
   is measured against.

It is a report: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import anyio

from acp_agent.capabilities.session import ChangedFile
from acp_agent.lsp import DEFAULT_SETTLE_S, CodeIntelligence, ServerSpec, default_servers

ANSWER_TIMEOUT_S = 120.0
CLEAN = "def total(items: list[int]) -> int:\n    return sum(items)\n"
BROKEN = "def total(items: list[int]) -> str:\n    return sum(itemz)\n"
#: What each server says of BROKEN, as the result shows it.
EXPECTED = {"ruff": "[ruff F821]", "basedpyright": "[basedpyright reportReturnType]"}
MISSING = "has not finished checking"


class Agent:
    """The agent over its stdin and stdout, read synchronously; notes each call's times."""

    def __init__(self, home: str, script: Path, *, lsp: bool, settle_s: float | None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
        env["ACP_AGENT_LSP"] = "1" if lsp else "0"
        if settle_s is not None:
            env["ACP_AGENT_LSP_SETTLE_S"] = str(settle_s)
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


def one_run(edits: int, *, lsp: bool, settle_s: float | None) -> list[tuple[float, str]]:
    """(seconds, the result's text) for each edit, in order."""
    calls = [
        [
            {
                "tool_call": {
                    "id": f"edit_{i}",
                    "name": "write",
                    "arguments": {"path": "calc.py", "content": BROKEN if i % 2 == 0 else CLEAN},
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
        (root / "calc.py").write_text(CLEAN)
        path = Path(home) / "script.json"
        path.write_text(json.dumps(script))
        agent = Agent(home, path, lsp=lsp, settle_s=settle_s)
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
        timings.append((ended - started, text))
    return timings


def verdict(text: str, servers: Sequence[str]) -> str:
    """`reported` (every server's problem named), `may be missing` (a server said not
    to have finished) or `lost` (neither: problems missing without a word)."""
    if all(EXPECTED[name] in text for name in servers):
        return "reported"
    if MISSING in text:
        return "may be missing"
    return "lost"


def per_server(spec: ServerSpec, edits: int) -> tuple[float, list[float]]:
    """(seconds to the first edit's problems, seconds to each later breaking edit's) with
    `spec` alone, reviewed as a session does, without a bound that matters."""
    with tempfile.TemporaryDirectory() as workspace:
        root = Path(workspace).resolve()
        (root / "calc.py").write_text(CLEAN)
        times = asyncio.run(reviewed(spec, root / "calc.py", edits))
    return times[0], times[1:]


async def reviewed(spec: ServerSpec, module: Path, edits: int) -> list[float]:
    """The seconds each breaking edit of `module` took to come back with its problem."""
    intel = CodeIntelligence(lambda: [module.parent], servers=[spec], settle_s=120.0)
    times: list[float] = []
    text = CLEAN
    try:
        for i in range(edits):
            before, text = text, BROKEN if i % 2 == 0 else CLEAN
            await anyio.Path(module).write_text(text)
            started = time.monotonic()
            said = await intel.review([ChangedFile(module, before.encode(), text.encode())])
            took = time.monotonic() - started
            if i % 2 == 0:
                if said is None or EXPECTED[spec.name] not in said:
                    raise RuntimeError(f"{spec.name} did not report edit {i}: {said}")
                times.append(took)
    finally:
        await intel.aclose()
    return times


def seconds(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.2f} s (max {max(values):.2f} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--edits", type=int, default=7)
    parser.add_argument("--settle", type=float, default=None, help="ACP_AGENT_LSP_SETTLE_S")
    args = parser.parse_args(argv)
    servers = [spec.name for spec in default_servers() if spec.name in EXPECTED]
    bound = DEFAULT_SETTLE_S if args.settle is None else args.settle
    #: edit kind ("first", "later") -> lsp on? -> seconds of each breaking edit
    times: dict[str, dict[bool, list[float]]] = {
        kind: {True: [], False: []} for kind in ("first", "later")
    }
    verdicts: dict[str, list[str]] = {"first": [], "later": []}
    for round_number in range(args.rounds):
        for lsp in (True, False):
            timings = one_run(args.edits, lsp=lsp, settle_s=args.settle)
            for i, (took, text) in enumerate(timings):
                if i % 2:
                    continue  # a mending edit: nothing to report
                kind = "first" if i == 0 else "later"
                times[kind][lsp].append(took)
                if lsp:
                    verdicts[kind].append(verdict(text, servers))
            print(
                f"round {round_number + 1} lsp {'on ' if lsp else 'off'}: first edit "
                f"{timings[0][0]:.2f} s",
                file=sys.stderr,
            )
    print(
        f"{args.rounds} rounds of {args.edits} edits through the agent "
        f"(servers: {', '.join(servers)}; bound {bound:g} s)\n"
    )
    print("| breaking edit | reported | may be missing | lost | time, on | off | on / off |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in ("first", "later"):
        shares = [verdicts[kind].count(v) for v in ("reported", "may be missing", "lost")]
        on, off = times[kind][True], times[kind][False]
        ratio = statistics.median(on) / statistics.median(off)
        total = len(verdicts[kind])
        print(
            f"| {kind} | {shares[0]}/{total} | {shares[1]}/{total} | {shares[2]}/{total} "
            f"| {seconds(on)} | {seconds(off)} | {ratio:.1f}x |"
        )
    print("\nPer server, time from an edit to its problems (no bound; median, max):\n")
    print("| server | first edit (cold) | later edits (warm) | cold max / bound |")
    print("|---|---:|---:|---:|")
    for spec in default_servers():
        if spec.name not in EXPECTED:
            continue
        colds: list[float] = []
        warms: list[float] = []
        for _ in range(args.rounds):
            cold, warm = per_server(spec, args.edits)
            colds.append(cold)
            warms.extend(warm)
        print(f"| {spec.name} | {seconds(colds)} | {seconds(warms)} | {max(colds) / bound:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
