"""The stdio command as a bridge (`--connect`, `[server] connect = true`): no server, or
one it starts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol import methods, types
from tests.support import EditorClient, agent_env, connected, write_script
from tests.support.app_server import bridge_command, running_server
from tests.support.processes import alive
from tests.test_readme import readme_block

pytestmark = pytest.mark.e2e


async def test_with_no_server_the_bridge_says_how_to_start_one(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acp_agent",
        "--home",
        str(tmp_path / "home"),
        "--connect",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=agent_env(),
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(b""), 30)

    assert process.returncode == 1
    assert stdout == b""
    assert b"no server listens on" in stderr
    assert b"acp-agent server" in stderr


async def test_a_configured_editor_command_starts_the_server_and_bridges_to_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    # The set-up docs/server.md shows: plain `acp-agent` bridges, and starts the server.
    language, config = readme_block("server-config")
    assert language == "toml"
    (home / "config" / "config.toml").write_text(config)
    script = write_script(tmp_path / "script.json", [{"text": "Hello from the server."}])
    # Plain `acp-agent`, as an editor launches it: the config makes it a bridge.
    command = [sys.executable, "-m", "acp_agent", "--home", str(home), "--script", str(script)]
    pid_file = home / "state" / "server" / "server.pid"
    try:
        async with connected(EditorClient(), command, env=agent_env()) as editor:
            await editor.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1))
            session_id = await editor.new_session(tmp_path)
            response = await editor.prompt(session_id, "Hi")
            assert response.stop_reason == types.StopReason.END_TURN
            [chunk] = [
                u for u in editor.updates_for(session_id) if isinstance(u, types.AgentMessageChunk)
            ]
            assert chunk.content == types.TextContent(text="Hello from the server.")
        server_pid = int(pid_file.read_text())
        # The editor is gone; the server it started runs on (its sessions with it).
        assert alive(server_pid)
    finally:
        if pid_file.exists():
            server_pid = int(pid_file.read_text())
            os.kill(server_pid, signal.SIGTERM)
            for _ in range(100):
                if not alive(server_pid):
                    break
                await asyncio.sleep(0.1)
    assert not alive(server_pid)
    assert not (home / "state" / "server" / "acp.sock").exists()


@contextlib.contextmanager
def byte_server(path: Path, *, echo: bool = True, close_on_eof: bool = True) -> Iterator[None]:
    """A Unix socket that echoes what each client sends (`echo`) and closes when the
    client stops sending (`close_on_eof`; else it stays open), or closes each
    connection at once (not `echo`): the ends a bridge sees."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()
    held: list[socket.socket] = []

    def serve(connection: socket.socket) -> None:
        while echo and (chunk := connection.recv(65536)):
            connection.sendall(chunk)
        if close_on_eof:
            connection.close()
        else:
            held.append(connection)

    def accept() -> None:
        with contextlib.suppress(OSError):  # closed: the test is over
            while True:
                connection, _ = listener.accept()
                threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        for connection in held:
            connection.close()


def bridge(
    tmp_path: Path, path: Path, data: bytes, *flags: str
) -> subprocess.CompletedProcess[bytes]:
    """The bridge to the socket at `path`, sent `data` then the end of its input."""
    command = [sys.executable, *flags, "-m", "acp_agent", "--home", str(tmp_path / "home")]
    return subprocess.run(
        [*command, "--connect", "--socket", str(path)],
        input=data,
        capture_output=True,
        env=agent_env(),
        timeout=30,
    )


def test_a_bridge_whose_editor_leaves_passes_on_the_last_answers_and_ends_with_0(
    tmp_path: Path,
) -> None:
    path = tmp_path / "b.sock"
    # The server answers, then closes as soon as the editor's side ends: the bridge's
    # two threads race to notice, run often enough to lose it without the fix.
    with byte_server(path):
        ends = [bridge(tmp_path, path, b'{"line": %d}\n' % i) for i in range(20)]
    assert [(e.returncode, e.stderr) for e in ends] == [(0, b"")] * 20
    assert [e.stdout for e in ends] == [b'{"line": %d}\n' % i for i in range(20)]


def test_a_server_that_stays_after_the_editor_left_is_not_waited_for_long(
    tmp_path: Path,
) -> None:
    path = tmp_path / "b.sock"
    with byte_server(path, close_on_eof=False):
        done = bridge(tmp_path, path, b"{}\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"{}\n", b"")


async def test_requests_piped_through_a_bridge_are_all_answered(tmp_path: Path) -> None:
    # A script that writes its requests and closes its input, as to the stdio agent.
    home = tmp_path / "home"
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(tmp_path), "mcpServers": []},
        },
    ]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    async with running_server(home):
        process = await asyncio.create_subprocess_exec(
            *bridge_command(home),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=agent_env(),
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(data), 30)
    answers = {a["id"]: a for a in map(json.loads, stdout.splitlines())}
    assert (process.returncode, stderr) == (0, b"")
    assert answers.keys() == {1, 2}
    assert answers[1]["result"]["protocolVersion"] == 1
    assert "error" not in answers[2], answers[2]


def test_a_server_that_closes_first_is_reported_with_status_1(tmp_path: Path) -> None:
    path = tmp_path / "b.sock"
    with (
        byte_server(path, echo=False),
        subprocess.Popen(
            [*bridge_command(tmp_path / "home"), "--socket", str(path)],
            stdin=subprocess.PIPE,  # the editor stays: its input never ends
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=agent_env(),
        ) as process,
    ):
        status = process.wait(timeout=30)
        stdout, stderr = process.communicate()
    assert (status, stdout) == (1, b"")
    assert stderr == b"acp-agent: the server closed the connection\n"


def test_the_bridge_loads_neither_attrs_nor_an_event_loop(tmp_path: Path) -> None:
    # An editor times the bridge's spawn -> `initialize` too: it is a byte pump, and
    # attrs alone costs about as much as the interpreter's own start.
    path = tmp_path / "b.sock"
    with byte_server(path):
        done = bridge(tmp_path, path, b"{}\n", "-X", "importtime")
    assert (done.returncode, done.stdout) == (0, b"{}\n")
    loaded = re.findall(rb"^import time:\s+\d+ \|\s+\d+ \| +([\w.]+)$", done.stderr, re.M)
    # (`-X importtime` times `import` statements: not the lazy face's `import_module`.)
    assert b"acp_agent.adapters.server._places" in loaded
    heavy = (b"attr", b"attrs", b"cattrs", b"asyncio", b"anyio", b"protocol")
    assert [m for m in loaded if m.split(b".")[0] in heavy] == []
