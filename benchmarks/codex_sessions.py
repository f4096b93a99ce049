"""codex-acp 0.16's `session/load`, for `load.py`'s peer column.

codex keeps a session as its own rollout file under `CODEX_HOME/sessions`, which
nothing but codex writes, so `build` makes one the way a person would: it starts
codex-acp against the fake model (`codex_peer.codex_command`) and prompts it
`turns` times, each prompt answered with a reply streamed in seven pieces (the
chat shape of `load.py`: a prompt and a streamed reply per turn). `load_once`
then starts a fresh codex-acp on a copy of that home, initializes it, waits as
`load.py` does, and times `session/load` from the request written to the answer
read, counting the `session/update`s before it. A thousand turns take about a
minute to build; `load.py` builds the sizes up to `--peer-max-turns`.

It is a report: nothing here asserts a time.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_peer import codex_command, codex_env
from startup import LineReader, request

from tests.support.fake_provider import (
    Exchange,
    FakeProviderServer,
    openai_chunk,
    openai_responses_stream,
    sse_data,
)

__all__ = ("CodexLoad", "ReplyFake", "build", "load_once")

#: How long any one answer may take.
TIMEOUT_S = 60.0


class ReplyFake(FakeProviderServer):
    """The fake model answering every request with `pieces`, however many come: the
    Responses stream for codex, Chat Completions otherwise."""

    def __init__(self, pieces: list[str]) -> None:
        super().__init__()
        self._pieces = pieces

    def _next_exchange(self, body: bytes) -> Exchange:
        if "input" in json.loads(body):
            return Exchange(chunks=openai_responses_stream(*self._pieces))
        events = [sse_data(openai_chunk({"content": piece})) for piece in self._pieces]
        events.append(sse_data(openai_chunk({}, "stop")) + b"data: [DONE]\n\n")
        return Exchange(chunks=events)


class _Codex:
    """codex-acp over pipes on `home` (`startup.py`'s line reader and request lines)."""

    def __init__(self, binary: Path, base_url: str, home: Path, workspace: Path) -> None:
        self.process = subprocess.Popen(
            codex_command(binary, f"{base_url}/v1"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=codex_env(home),
            cwd=workspace,
            bufsize=0,
        )
        assert self.process.stdout is not None
        self._reader = LineReader(self.process.stdout)
        self._ids = 0

    def send(self, method: str, params: dict[str, Any]) -> int:
        assert self.process.stdin is not None
        self._ids += 1
        self.process.stdin.write(request(self._ids, method, params))
        return self._ids

    def message(self) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(self._reader.readline(time.perf_counter() + TIMEOUT_S))
        return decoded

    def answer(self, msg_id: int) -> tuple[dict[str, Any], int]:
        """The answer to `msg_id` and how many `session/update`s came before it."""
        updates = 0
        while True:
            message = self.message()
            if message.get("id") == msg_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"codex-acp answered an error: {message['error']}")
                return message, updates
            if message.get("method") == "session/update":
                updates += 1

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.answer(self.send(method, params))[0]

    def stop(self) -> None:
        # codex-acp does not end when its stdin closes.
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def build(binary: Path, base_url: str, home: Path, workspace: Path, turns: int) -> str:
    """A codex session of `turns` prompts and replies in `home`; its id."""
    codex = _Codex(binary, base_url, home, workspace)
    try:
        codex.request("initialize", {"protocolVersion": 1})
        new = codex.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        session_id = str(new["result"]["sessionId"])
        for turn in range(turns):
            prompt = [{"type": "text", "text": f"Please look at the parser ({turn})."}]
            codex.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
        return session_id
    finally:
        codex.stop()


@dataclass
class CodexLoad:
    """One codex `session/load`."""

    load_s: float
    updates: int


def load_once(
    binary: Path, base_url: str, home: Path, workspace: Path, session_id: str, pause_s: float
) -> CodexLoad:
    """Start codex-acp on `home`, initialize, wait `pause_s`, and time loading the session."""
    codex = _Codex(binary, base_url, home, workspace)
    try:
        codex.request("initialize", {"protocolVersion": 1})
        time.sleep(pause_s)
        load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
        sent_at = time.monotonic()
        msg_id = codex.send("session/load", load)
        _, updates = codex.answer(msg_id)
        return CodexLoad(time.monotonic() - sent_at, updates)
    finally:
        codex.stop()
