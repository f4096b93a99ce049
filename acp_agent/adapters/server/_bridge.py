"""`acp-agent --connect`: the stdio command as a thin bridge to a running app server.

An editor launches a stdio command; with `--connect` (or `[server] connect =
true` in config.toml) that command hosts nothing: it connects to the app
server's Unix socket and copies bytes both ways, so the editor is one more
client of the server, sharing its sessions with every other client. It
parses nothing (the server frames and answers every line) and imports none
of the runtime, so it starts in a few milliseconds and adds about a system
call's worth of latency to each message (`benchmarks/server_bridge.py`).

When its editor closes its input, the bridge closes its side of the socket,
passes on the answers the server still sends (every request gets one, as
from the stdio agent) and exits with status 0 once the server closes (at
most a few seconds later): the server sees a client leave, and the sessions
and their work go on there. When the server goes away, the bridge exits with
status 1. With no server running, it starts one (`acp-agent server`, in a
session of its own, with the same flags) when `[server] start = true` or
`ACP_AGENT_SERVER_START=1` says so, and otherwise says how to start one.
"""

from __future__ import annotations

import contextlib
import os
import socket as sockets
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NamedTuple

__all__ = (
    "ServerSettings",
    "run_bridge",
    "server_arguments",
    "server_settings",
    "server_socket",
    "start_server",
)

#: How long a bridge waits for a server it started to listen.
_START_BUDGET_S: Final = 20.0
_CHUNK: Final = 64 * 1024
#: How long a bridge whose editor's input ended waits for the server's last answers.
_LEAVE_BUDGET_S: Final = 5.0


class ServerSettings(NamedTuple):
    """The `[server]` table of config.toml (a named tuple: the bridge loads no attrs)."""

    #: Plain `acp-agent` is a bridge to the server.
    connect: bool = False
    #: A bridge starts the server when none runs.
    start: bool = False
    #: The server's socket (default: the state folder's).
    socket: str | None = None


def server_settings(config_file: Path) -> ServerSettings:
    """The `[server]` table (its defaults where the file or the table is missing or wrong)."""
    try:
        table = tomllib.loads(config_file.read_text()).get("server")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return ServerSettings()
    if not isinstance(table, dict):
        return ServerSettings()
    socket = table.get("socket")
    return ServerSettings(
        connect=table.get("connect") is True,
        start=table.get("start") is True,
        socket=socket if isinstance(socket, str) and socket else None,
    )


def server_socket(home: Path | None, socket: str | None) -> tuple[Path, bool]:
    """The server's socket (`socket`, else config.toml's, else the state folder's) and
    whether a client may start a server there when none runs (`[server] start = true`
    or `ACP_AGENT_SERVER_START=1`)."""
    from acp_agent.adapters.server._places import default_socket
    from acp_agent.paths import resolve_paths

    paths = resolve_paths(home)
    settings = server_settings(paths.config_dir / "config.toml")
    path = Path(socket or settings.socket or default_socket(paths.state_dir))
    return path, settings.start or os.environ.get("ACP_AGENT_SERVER_START") == "1"


def server_arguments(words: Sequence[str]) -> list[str]:
    """The flags a server a client starts should get: the client's, less `--connect` and
    `--socket` (the socket is passed apart)."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word == "--connect":
            continue
        if word == "--socket":
            skip = True
            continue
        if word.startswith("--socket="):
            continue
        kept.append(word)
    return kept


def start_server(path: Path, start_args: Sequence[str]) -> bool:
    """Start `acp-agent server` on `path` (it outlives the caller); whether it listens."""
    connection = _start_server(path, start_args)
    if connection is None:
        return False
    connection.close()
    return True


def run_bridge(home: Path | None, *, socket: str | None, start_args: Sequence[str]) -> int:
    """Bridge stdin and stdout to the server's socket until either side ends."""
    path, may_start = server_socket(home, socket)
    connection = _connect(path)
    if connection is None:
        if not may_start:
            print(
                f"acp-agent: no server listens on {path}; start one with `acp-agent server` "
                "(or set [server] start = true in config.toml to have the bridge start it)",
                file=sys.stderr,
            )
            return 1
        connection = _start_server(path, start_args)
        if connection is None:
            print(f"acp-agent: the server started for {path} did not listen", file=sys.stderr)
            return 1
    return _pump(connection)


def _connect(path: Path) -> sockets.socket | None:
    connection = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    try:
        connection.connect(str(path))
    except OSError:
        connection.close()
        return None
    return connection


def _start_server(path: Path, start_args: Sequence[str]) -> sockets.socket | None:
    """Start `acp-agent server` on `path`, detached (it outlives this bridge), and connect."""
    command = [sys.executable, "-m", "acp_agent", "server", *start_args, "--socket", str(path)]
    subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    deadline = time.monotonic() + _START_BUDGET_S
    while time.monotonic() < deadline:
        connection = _connect(path)
        if connection is not None:
            return connection
        time.sleep(0.05)
    return None


def _pump(connection: sockets.socket) -> int:
    """Copy stdin to the socket (a thread) and the socket to stdout (here) until the
    server closes; exit 0 when the editor's input ended first, else 1."""
    editor_gone = threading.Event()

    def upward() -> None:
        try:
            while chunk := os.read(0, _CHUNK):
                connection.sendall(chunk)
        except OSError:
            pass
        # Said before the server can hear it, so its close that follows is no failure.
        editor_gone.set()
        with contextlib.suppress(OSError):
            connection.shutdown(sockets.SHUT_WR)
        # The server answers what it was asked, then closes; one that does not is not
        # waited for long (its sessions go on there either way).
        time.sleep(_LEAVE_BUDGET_S)
        os._exit(0)

    threading.Thread(target=upward, name="bridge-up", daemon=True).start()
    try:
        while chunk := connection.recv(_CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(1, view) :]
    except BrokenPipeError:
        os._exit(0)  # the editor closed its end: nobody is left to tell
    except OSError:
        pass
    if editor_gone.is_set():
        os._exit(0)
    print("acp-agent: the server closed the connection", file=sys.stderr)
    sys.stderr.flush()
    os._exit(1)
