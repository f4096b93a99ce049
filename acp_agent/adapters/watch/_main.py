"""`acp-agent watch [SESSION]`: list the server's sessions, or follow one (and steer it).

    acp-agent watch                       the server's sessions, most recent first
    acp-agent watch SESSION [--control] [--plain] [--replay start|none]

Follows a session of the running app server (`acp-agent server`) on its Unix
socket: attaches as an observer (or, `--control`, a controller), replays the
session and follows it live. As a controller, what the person types is:
a question's answer (its option's number, `y` or `n`) while one waits;
`/cancel` to cancel the turn; `/quit`; anything else a message to the
session, sent as `session/prompt` (it waits behind a turn that runs; it
does not steer it yet). When the server goes away, watch reconnects and
resumes after the last cursor it got, for `--reconnect-s` seconds.
SESSION may be the start of an id, when only one session's id starts so.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Final, TextIO, cast

import anyio

from acp_agent.adapters.watch._client import WatchClient
from acp_agent.adapters.watch._show import PlainShower, Shower, TerminalShower
from acp_agent.stdout_guard import LeavableStdout, silence_stdout
from protocol import methods, types
from protocol.errors import AcpError, PeerDisconnected

__all__ = ("main",)

#: How often a lost server is tried again.
_RETRY_S: Final = 0.3
_TITLE_CHARS: Final = 36
#: Whoever read stdout went away (`watch | head -1`): 128 + SIGPIPE, as a shell reports
#: a tool that signal ended (and as `exec` and `sessions` do).
_EXIT_READER_GONE: Final = 141


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-agent watch",
        description="Follow a session of the app server (acp-agent server) from a terminal.",
    )
    parser.add_argument("session", nargs="?", help="the session (the start of its id will do)")
    parser.add_argument("--control", action="store_true", help="attach as a controller")
    parser.add_argument("--plain", action="store_true", help="one line per event")
    parser.add_argument(
        "--replay",
        choices=("start", "none"),
        default="start",
        help="show the session from its start (default) or only what happens from now",
    )
    parser.add_argument("--socket", type=Path, default=None, help="the server's Unix socket")
    parser.add_argument("--home", type=Path, default=None, help="the agent's home folder")
    parser.add_argument(
        "--reconnect-s",
        type=float,
        default=120.0,
        help="how long to try again when the server goes away (default 120)",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """Run `acp-agent watch`; its exit status."""
    args = _parser().parse_args(argv)
    socket = _socket(args.socket, args.home)
    out = LeavableStdout(sys.stdout)
    shown = cast(TextIO, out)  # what the showers write to: a text stream's two methods
    plain = args.plain or not sys.stdout.isatty()
    shower: Shower = PlainShower(shown) if plain else TerminalShower(shown)
    try:
        status = asyncio.run(_run(args, str(socket), shower, out))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        silence_stdout()
        return _EXIT_READER_GONE
    return _EXIT_READER_GONE if out.gone.is_set() else status


def _socket(named: Path | None, home: Path | None) -> Path:
    """The server's socket: `--socket`, else the one the server and the bridge use."""
    if named is not None:
        return named
    # Straight from the two modules that say where the server listens: the package's face
    # names the server's parts too, and watch imports none of the runtime.
    from acp_agent.adapters.server._bridge import server_settings
    from acp_agent.adapters.server._places import default_socket
    from acp_agent.paths import resolve_paths

    paths = resolve_paths(home)
    chosen = server_settings(paths.config_dir / "config.toml").socket
    return Path(chosen) if chosen else default_socket(paths.state_dir)


async def _run(args: argparse.Namespace, socket: str, shower: Shower, out: LeavableStdout) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    # Whoever read stdout went away: stop following as a signal would have it.
    out.on_gone = partial(loop.call_soon_threadsafe, stop.set)
    if args.session is None:
        return await _list(socket)
    session_id = await _which(socket, args.session)
    if session_id is None:
        return 1
    follower = _Follower(args, socket, shower, session_id)
    runner = asyncio.create_task(follower.run())
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({runner, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if not runner.done():
        follower.quit()  # it leaves its connection itself: the task that opened it
        return await runner
    return runner.result()


async def _connected(socket: str, shower: Shower, session_id: str) -> WatchClient | None:
    client = WatchClient(shower, session_id)
    try:
        await client.open(socket)
    except (OSError, AcpError, PeerDisconnected):
        await client.leave()
        return None
    return client


async def _sessions(socket: str) -> list[types.SessionInfo] | None:
    client = await _connected(socket, PlainShower(), "")
    if client is None:
        print(
            f"acp-agent watch: no server listens on {socket} (start one: acp-agent server)",
            file=sys.stderr,
        )
        return None
    found: list[types.SessionInfo] = []
    cursor: str | None = None
    try:
        while True:
            page: types.ListSessionsResponse = await client.request(
                methods.SESSION_LIST, types.ListSessionsRequest(cursor=cursor)
            )
            found.extend(page.sessions)
            cursor = page.next_cursor
            if not cursor:
                return found
    finally:
        await client.leave()


async def _list(socket: str) -> int:
    """Print the server's sessions, a line each: id, last activity, title, folder."""
    sessions = await _sessions(socket)
    if sessions is None:
        return 1
    for info in sessions:
        title = (info.title or "(untitled)").replace("\n", " ")
        if len(title) > _TITLE_CHARS:
            title = title[: _TITLE_CHARS - 1] + "…"
        updated = (info.updated_at or "")[:16].replace("T", " ")
        print(f"{info.session_id}  {updated}  {title:<{_TITLE_CHARS}}  {info.cwd}")
    # Now, not at exit: a reader that went away is then found here (`main`).
    sys.stdout.flush()
    if not sessions:
        print("no sessions", file=sys.stderr)
    return 0


async def _which(socket: str, named: str) -> str | None:
    """The session `named` (a whole id, or the start of exactly one)."""
    sessions = await _sessions(socket)
    if sessions is None:
        return None
    ids = [str(info.session_id) for info in sessions]
    if named in ids:
        return named
    matching = [sid for sid in ids if sid.startswith(named)]
    if len(matching) == 1:
        return matching[0]
    if not matching:
        # Not listed (another folder's, say): the server says whether it is one.
        return named
    print(f"acp-agent watch: {named!r} starts {len(matching)} session ids", file=sys.stderr)
    return None


class _Follower:
    """Follows one session across connections, and takes the person's lines."""

    def __init__(
        self, args: argparse.Namespace, socket: str, shower: Shower, session_id: str
    ) -> None:
        self._args = args
        self._socket = socket
        self._shower = shower
        self._session_id = session_id
        self._client: WatchClient | None = None
        self._cursor: str | None = None
        self._child_cursors: dict[str, str] = {}
        self._quit = asyncio.Event()

    async def run(self) -> int:
        if self._args.control:
            _read_lines(self._line)
        replay = self._args.replay
        while True:
            client = await self._connect()
            if client is None:
                return 0 if self._quit.is_set() else 1
            self._client = client
            try:
                answer = await client.attach(control=self._args.control, replay=replay)
            except AcpError as exc:
                self._shower.note(f"cannot attach: {exc.message}")
                await client.leave()
                return 1
            except PeerDisconnected:
                await client.leave()
                continue
            self._shower.note(
                f"attached to {self._session_id} as {answer.get('role')} "
                f"({answer.get('clientId')}), ready at {answer.get('cursor')}"
            )
            # Until the server goes away or the person quits, whichever comes first.
            async with anyio.create_task_group() as waiting:

                async def until(event: Callable[[], Awaitable[object]]) -> None:
                    await event()
                    waiting.cancel_scope.cancel()

                waiting.start_soon(until, client.wait_ended)
                waiting.start_soon(until, self._quit.wait)
            self._cursor = client.cursor
            self._child_cursors = dict(client.child_cursors)
            self._client = None
            await client.leave()
            if self._quit.is_set():
                return 0
            replay = "cursor" if self._cursor is not None else replay
            self._shower.note(f"the server went away; reconnecting after {self._cursor}")

    async def _connect(self) -> WatchClient | None:
        deadline = time.monotonic() + self._args.reconnect_s
        first = self._cursor is None
        while not self._quit.is_set():
            client = await _connected(self._socket, self._shower, self._session_id)
            if client is not None:
                client.cursor = self._cursor
                client.child_cursors = dict(self._child_cursors)
                return client
            if first or time.monotonic() > deadline:
                self._shower.note(f"no server listens on {self._socket}")
                return None
            await asyncio.sleep(_RETRY_S)
        return None

    def quit(self) -> None:
        """Stop following: `run` leaves its connection and returns 0."""
        self._quit.set()

    def _line(self, line: str | None) -> None:
        """A line the person typed (None: their input ended)."""
        client = self._client
        if line is None:
            return
        text = line.strip()
        if not text:
            return
        if text == "/quit":
            self._quit.set()
            return
        if client is None:
            self._shower.note("not connected; try again when watch has reconnected")
            return
        if text == "/cancel":
            client.cancel()
            self._shower.note("cancel sent")
            return
        # The oldest question not answered yet (one just answered is still listed until
        # its answer is sent).
        pending = next((q for q in client.questions if not q.answer.done()), None)
        if pending is not None:
            chosen = pending.choose(text)
            if chosen is None:
                self._shower.note("answer the question first: its option's number, y or n")
            else:
                pending.answer.set_result(chosen)
            return
        # The connection's own group runs it: it ends with the connection.
        client.start_soon(partial(self._send, client, text), name="watch message")

    async def _send(self, client: WatchClient, text: str) -> None:
        self._shower.note("message sent")
        try:
            stop_reason = await client.send(text)
        except (AcpError, PeerDisconnected) as exc:
            self._shower.note(f"the message was not taken: {exc}")
            return
        self._shower.note(f"your turn ended: {stop_reason.value}")


def _read_lines(take: Callable[[str | None], None]) -> None:
    """Read the person's lines on a thread of its own (stdin may be a terminal, a pipe or
    a file; a blocked read never holds the exit) and hand each to `take` in the loop."""
    loop = asyncio.get_running_loop()

    def read() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(take, line)
        with contextlib.suppress(RuntimeError):  # the loop closed first
            loop.call_soon_threadsafe(take, None)

    threading.Thread(target=read, name="watch-input", daemon=True).start()
