"""The web page's render latency: a chunk written by the server -> its text in the page's DOM.

Usage (with the virtual environment that has acp-agent and Playwright installed, and
Debian's Chromium at /usr/bin/chromium):

    .venv/bin/python benchmarks/web_render.py [--chunks N] [--rate PER_S]

It starts `acp-agent server --web` with a scripted reply of N text chunks
(default 2,000) paced at about PER_S a second (default 1,000), opens the page in
headless Chromium (logged in with the one-time link), attaches it as an
observer, and attaches a raw socket observer beside it. A socket client
prompts. The page notes when each chunk's text enters the DOM (a
MutationObserver, wall clock); the socket observer notes when each chunk's line
arrives (wall clock, the same machine): the difference, chunk by chunk, is what
the page adds to the server's write (WebSocket, parsing, the DOM). Also
reported: the same to the next animation frame after it (what the person can
see), and the chunk rate the model achieved.

It is a report: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHUNK_MARK = b'"sessionUpdate":"agent_message_chunk"'
CHROMIUM = "/usr/bin/chromium"

#: Notes when each text node enters the agent's messages, and the frame after.
WATCH_DOM = """
() => {
  window.__seen = [];
  window.__framed = [];
  const now = () => performance.timeOrigin + performance.now();
  new MutationObserver((records) => {
    const at = now();
    let added = 0;
    for (const record of records) {
      // A chunk's text is a text node appended to its message (made empty just before).
      if (record.target.classList && record.target.classList.contains("agent")) {
        for (const node of record.addedNodes) if (node.nodeType === 3) added++;
      }
    }
    for (let i = 0; i < added; i++) window.__seen.push(at);
    if (added) {
      const count = added;
      requestAnimationFrame(() => {
        const framed = now();
        for (let i = 0; i < count; i++) window.__framed.push(framed);
      });
    }
  }).observe(document.getElementById("conversation"), { childList: true, subtree: true });
}
"""


class Observer:
    """A raw socket client: requests, and when each chunk's line arrived (wall clock)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.ids = 0
        self.answers: dict[int, dict[str, Any]] = {}
        self.arrived: list[float] = []
        self._answered = asyncio.Event()
        self._task = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, socket: Path) -> Observer:
        reader, writer = await asyncio.open_unix_connection(str(socket), limit=1 << 26)
        return cls(reader, writer)

    async def _read(self) -> None:
        while line := await self.reader.readline():
            if CHUNK_MARK in line:
                self.arrived.append(time.time() * 1000)
            elif line.startswith(b'{"jsonrpc":"2.0","id"'):
                message = json.loads(line)
                if "method" not in message:
                    self.answers[message["id"]] = message
                    self._answered.set()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        ident = self.ids
        line = json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        self.writer.write(line.encode() + b"\n")
        while ident not in self.answers:
            self._answered.clear()
            await self._answered.wait()
        return self.answers.pop(ident)

    async def close(self) -> None:
        self.writer.close()
        self._task.cancel()


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return (
        f"median {statistics.median(ordered):6.2f} ms, p95 {p95:6.2f} ms, max {ordered[-1]:6.2f} ms"
    )


async def run(args: argparse.Namespace, root: Path) -> None:
    from playwright.async_api import async_playwright

    steps: list[dict[str, Any]] = []
    per_ms = max(1, round(args.rate / 1000))
    for i in range(args.chunks):
        steps.append({"text": f"c{i} "})
        if i % per_ms == per_ms - 1:
            steps.append({"sleep_ms": 1})
    script = root / "script.json"
    script.write_text(json.dumps({"replies": [steps]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_"))}
    env.update(ACP_AGENT_LSP="0", ACP_AGENT_MODE="ask")
    home = root / "home"
    server = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "acp_agent", "server", "--web"),
        *("--home", str(home), "--script", str(script)),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert server.stderr is not None
    said = b""
    while b"listening on unix:" not in said:
        line = await server.stderr.readline()
        if not line:
            raise SystemExit("the server did not start")
        said += line
    found = re.search(rb"works once\): (http://\S+)", said)
    assert found is not None
    socket = home / "state" / "server" / "acp.sock"
    try:
        owner = await Observer.open(socket)
        await owner.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = await owner.request("session/new", {"cwd": str(root), "mcpServers": []})
        session_id = session["result"]["sessionId"]
        watcher = await Observer.open(socket)
        await watcher.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        await watcher.request(
            "_acp-agent/attach", {"sessionId": session_id, "role": "observer", "replay": "none"}
        )
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox"], headless=True
            )
            page = await browser.new_page()
            await page.goto(found.group(1).decode())
            await page.click(f'nav .session[data-id="{session_id}"]')
            await page.wait_for_selector(f'body[data-attached="{session_id}"]')
            await page.evaluate(WATCH_DOM)
            start = time.perf_counter()
            answer = await owner.request(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": "Go"}]},
            )
            model_s = time.perf_counter() - start
            assert answer["result"]["stopReason"] == "end_turn", answer
            await page.wait_for_function(f"() => window.__framed.length >= {args.chunks}")
            seen: list[float] = await page.evaluate("window.__seen")
            framed: list[float] = await page.evaluate("window.__framed")
            await browser.close()
        arrived = watcher.arrived
        count = min(len(arrived), len(seen), args.chunks)
        print(
            f"{args.chunks} chunks paced at about {args.rate}/s: the model streamed "
            f"{args.chunks / model_s:.0f} chunks/s"
        )
        in_dom = [seen[i] - arrived[i] for i in range(count)]
        in_frame = [framed[i] - arrived[i] for i in range(count)]
        print(f"server write -> in the page's DOM:   {_ms(in_dom)}")
        print(f"server write -> the next frame:      {_ms(in_frame)}")
        await owner.close()
        await watcher.close()
    finally:
        server.terminate()
        await server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--rate", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acp-web-render-") as root:
        asyncio.run(run(args, Path(root)))


if __name__ == "__main__":
    main()
