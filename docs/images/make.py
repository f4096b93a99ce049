"""Makes the README's pictures again: the web page with branch lanes, and `acp-agent watch`.

Usage, from the repository's root (the dev extra installed: Playwright and pyte; Debian's
Chromium at /usr/bin/chromium):

    .venv/bin/python docs/images/make.py [--out docs/images]

Nothing here is drawn by hand. It runs what a person runs: `acp-agent server --web`
playing a scripted session (the scripted model, in the `ask` mode), an editor-like
client (the tests' socket client) that prompts and allows what it is asked,
`acp-agent watch SESSION` in a pseudo-terminal of 100 x 48, and the web page in
headless Chromium at 1200 x 800, both attached as observers. The session: the main
line starts two branches (one reads and searches, one runs the project's tests) and
writes a file meanwhile.

- `web-page.png`: the page once one branch has reported while the other still works.
- `watch.png`: watch's screen once the turn is over, as pyte (a VT100 terminal
  emulator) holds it from watch's own output, written out as HTML (a cell a
  character, with its colours and boldness) and shot in Chromium. pyte does not
  model SGR 2 (faint): watch's dimmed lines show at full brightness.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import html
import os
import pty
import re
import struct
import sys
import tempfile
import termios
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the tests' launcher and client

from tests.support import write_script  # noqa: E402
from tests.support.app_server import running_server, socket_client  # noqa: E402
from tests.support.editor_client import allow_all  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
COLUMNS, ROWS = 100, 48
PAGE = {"width": 1200, "height": 800}
#: What one wait may take (a loaded 2-core machine).
WAIT_S = 60

CALC = """\
def add(a, b):
    return a + b


def mean(values):
    return sum(values) / len(values) if values else 0.0  # an empty list has no mean, say 0.0
"""
TESTS = """\
import time
import unittest

from calc import add, mean


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mean(self):
        time.sleep(3)  # a slow suite: the picture catches it running
        self.assertEqual(mean([1, 2, 3]), 2)

    def test_mean_of_nothing(self):
        self.assertEqual(mean([]), 0.0)
"""


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments}}


MAIN = [
    [
        {"text": "I'll check the style and run the tests in two branches, "},
        {"text": "and document calc.py meanwhile."},
        tool("branch", task="Check calc.py for lines over 79 characters", title="style"),
        tool("branch", task="Run the unit tests and say how they went", title="tests"),
        tool("read", path="calc.py"),
    ],
    [tool("write", path="calc.py", content='"""Small sums."""\n\n\n' + CALC)],
    [tool("branch_wait", all=True, timeout_s=60)],
    [
        {"text": "Both branches are done: one line of calc.py is too long (line 6), "},
        {"text": "and the 3 tests pass. calc.py has its docstring."},
    ],
]
BRANCHES = [
    {
        "title": "style",
        "replies": [
            [{"text": "Reading calc.py."}, tool("read", path="calc.py")],
            [{"text": "Looking for long lines."}, tool("grep", pattern=".{80,}", path=".")],
            [{"text": "calc.py:6 is 89 characters long; everything else is within 79."}],
        ],
    },
    {
        "title": "tests",
        "replies": [
            [
                {"text": "Running the tests."},
                tool("shell", command="python3 -m unittest -v test_calc"),
            ],
            [{"text": "3 tests ran, all pass (3.0 s)."}],
        ],
    },
]


class Terminal:
    """`acp-agent watch` in a pseudo-terminal, its output fed to a pyte screen."""

    def __init__(self, screen: Any, process: asyncio.subprocess.Process) -> None:
        self.screen = screen
        self.process = process
        #: Set (and replaced) each time watch's output reaches the screen.
        self.fed = asyncio.Event()

    def text(self) -> str:
        return "\n".join(self.screen.display)

    async def wait_for(self, wanted: str) -> None:
        """Until `wanted` shows on the screen (a line of it: a long one wraps)."""
        try:
            async with asyncio.timeout(WAIT_S):
                # Rows are padded to the full width: joined, a wrapped line reads whole.
                while wanted not in "".join(self.screen.display):
                    fed = self.fed
                    await fed.wait()
        except TimeoutError:
            raise TimeoutError(f"{wanted!r} never showed; the screen:\n{self.text()}") from None


@contextlib.asynccontextmanager
async def watching(socket: Path, session_id: str) -> AsyncIterator[Terminal]:
    import pyte

    screen = pyte.Screen(COLUMNS, ROWS)
    stream = pyte.ByteStream(screen)
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acp_agent",
        "watch",
        session_id,
        "--socket",
        str(socket),
        stdin=child,
        stdout=child,
        stderr=child,
        env=env,
        start_new_session=True,
    )
    os.close(child)
    loop = asyncio.get_running_loop()
    terminal = Terminal(screen, process)

    def readable() -> None:
        try:
            data = os.read(main, 65536)
        except OSError:  # the terminal's other end closed
            data = b""
        if data:
            stream.feed(data)
            terminal.fed.set()
            terminal.fed = asyncio.Event()
        else:
            loop.remove_reader(main)

    loop.add_reader(main, readable)
    try:
        yield terminal
    finally:
        loop.remove_reader(main)
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 10)
        os.close(main)


#: pyte's colour names -> a dark terminal's palette.
PALETTE = {
    "black": "#1e1e1e",
    "red": "#f14c4c",
    "green": "#23d18b",
    "brown": "#e5e510",
    "yellow": "#e5e510",
    "blue": "#3b8eea",
    "magenta": "#d670d6",
    "cyan": "#29b8db",
    "white": "#e5e5e5",
}
FOREGROUND, BACKGROUND = "#d4d4d4", "#1e1e1e"


def colour(name: str, default: str) -> str:
    if name == "default":
        return default
    if re.fullmatch(r"[0-9a-fA-F]{6}", name):
        return f"#{name}"
    return PALETTE.get(name.removeprefix("bright"), default)


def screen_html(screen: Any) -> str:
    """The screen as HTML: each run of cells with one look a span."""
    rows = []
    for y in range(screen.lines):
        line = screen.buffer[y]
        spans: list[str] = []
        run: tuple[str, str, bool] | None = None
        text = ""
        for x in range(screen.columns):
            cell = line[x]
            fg, bg = colour(cell.fg, FOREGROUND), colour(cell.bg, BACKGROUND)
            if cell.reverse:
                fg, bg = bg, fg
            look = (fg, bg, bool(cell.bold))
            if look != run:
                if run is not None:
                    spans.append(_span(run, text))
                run, text = look, ""
            text += cell.data
        if run is not None:
            spans.append(_span(run, text))
        rows.append("".join(spans))
    body = "\n".join(rows)
    return f"""<!doctype html><meta charset="utf-8">
<style>
  body {{ margin: 0; background: #888; }}
  #terminal {{ display: inline-block; margin: 0; padding: 12px 14px; background: {BACKGROUND};
    color: {FOREGROUND}; font: 14px/1.3 "DejaVu Sans Mono", monospace; white-space: pre; }}
</style>
<pre id="terminal">{body}</pre>"""


def _span(look: tuple[str, str, bool], text: str) -> str:
    fg, bg, bold = look
    style = f"color:{fg}" + (f";background:{bg}" if bg != BACKGROUND else "")
    style += ";font-weight:bold" if bold else ""
    return f'<span style="{style}">{html.escape(text)}</span>'


async def make(out: Path) -> None:
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory(prefix="acp-agent-pictures-") as scratch:
        home, work = Path(scratch) / "home", Path(scratch) / "project"
        work.mkdir()
        (work / "calc.py").write_text(CALC)
        (work / "test_calc.py").write_text(TESTS)
        script = write_script(Path(scratch) / "script.json", *MAIN, branches=BRANCHES)
        async with (
            running_server(home, script=script, args=["--web"]) as server,
            socket_client(server.socket, decide=allow_all) as editor,
            async_playwright() as playwright,
        ):
            link = re.search(r"this link works once\): (http://\S+)", "".join(server.stderr))
            assert link is not None, "the server printed no link"
            session_id = await editor.new_session(work)
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox"], headless=True
            )
            try:
                async with watching(server.socket, session_id) as terminal:
                    await terminal.wait_for("attached to")
                    page = await browser.new_page(viewport=PAGE)
                    await page.goto(link.group(1))
                    await page.locator(f'nav .session[data-id="{session_id}"]').click()
                    await page.wait_for_selector(f'body[data-attached="{session_id}"]')

                    asked = "Check calc.py's style, run its tests, and document it"
                    turn = asyncio.create_task(editor.prompt(session_id, asked))
                    # One branch has reported, the other still works.
                    await page.locator("#lanes > .lane.idle .report").first.wait_for(
                        timeout=WAIT_S * 1000
                    )
                    await page.locator("#lanes > .lane.running .step").first.wait_for(
                        timeout=WAIT_S * 1000
                    )
                    await page.screenshot(path=out / "web-page.png")
                    await asyncio.wait_for(turn, WAIT_S)
                    await terminal.wait_for("calc.py has its docstring.")
                    shot = await browser.new_page()
                    await shot.set_content(screen_html(terminal.screen))
                    await shot.locator("#terminal").screenshot(path=out / "watch.png")
            finally:
                await browser.close()
    for name in ("web-page.png", "watch.png"):
        size = (out / name).stat().st_size
        print(f"{out / name}: {size / 1024:.0f} KiB", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(make(args.out))


if __name__ == "__main__":
    main()
