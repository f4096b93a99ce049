"""A server that cannot start says why in one line, with no traceback, and leaves nothing.

Each test starts a real `acp-agent server` that must fail: a `--listen` port out of
range or in use, a socket whose folder is a file or cannot be made, a session store
that cannot be opened. Each says on stderr, in one line starting `acp-agent server:`,
what failed and what to do; exits 2 for a place or an address that cannot be used,
1 for a store that cannot be opened (the environment's); and leaves no socket, no
`server.pid` and no token file behind.
"""

from __future__ import annotations

import asyncio
import socket as sockets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import agent_env

pytestmark = pytest.mark.e2e

#: What a server may leave in its folder after a failed start: the lock it took (the
#: lock file stays by design; the lock itself ended with the process).
_LEFT_BY_DESIGN = {"server.lock"}


async def failed_start(home: Path, *args: str) -> tuple[int, list[str]]:
    """Start a server of `home` with `args`; its exit status and stderr lines once it ended."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "acp_agent", "server", "--home", str(home), *args),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=agent_env(),
    )
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), 45)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, stderr.decode("utf-8", "replace").splitlines()


def left_in(folder: Path) -> set[str]:
    """The files in `folder` beyond those left by design."""
    if not folder.exists():
        return set()
    return {path.name for path in folder.iterdir()} - _LEFT_BY_DESIGN


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    with sockets.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


async def test_a_port_out_of_range_is_said_to_be(tmp_path: Path) -> None:
    status, stderr = await failed_start(tmp_path / "home", "--listen", "ws://127.0.0.1:99999")
    assert status == 2
    assert stderr == [
        "acp-agent server: --listen ws://127.0.0.1:99999: the port 99999 is out of range (0-65535)"
    ]


async def test_a_port_in_use_is_told_in_one_line_and_leaves_nothing(
    tmp_path: Path, busy_port: int
) -> None:
    home = tmp_path / "home"
    status, stderr = await failed_start(home, "--listen", f"ws://127.0.0.1:{busy_port}")
    assert status == 2
    assert stderr == [
        f"acp-agent server: address 127.0.0.1:{busy_port} is in use: stop what listens there "
        "or choose another port"
    ]
    # It listened on its socket (and wrote its token) before the port failed it.
    assert left_in(home / "state" / "server") == set()


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("file/acp.sock", "{tmp}/file is not a folder"),
        ("file/sub/acp.sock", "the folder {tmp}/file/sub cannot be made (Not a directory)"),
        ("/proc/no-such-folder/acp.sock", "the folder /proc/no-such-folder cannot be made"),
    ],
    ids=["folder-is-a-file", "parent-is-a-file", "folder-cannot-be-made"],
)
async def test_a_socket_folder_that_cannot_be_used_is_told_in_one_line(
    tmp_path: Path, where: str, said: str
) -> None:
    (tmp_path / "file").touch()
    status, stderr = await failed_start(tmp_path / "home", "--socket", str(tmp_path / where))
    assert status == 2
    [line] = stderr
    assert line.startswith("acp-agent server: " + said.format(tmp=tmp_path)), line
    assert line.endswith("; name another place for the socket with --socket or ACP_AGENT_SOCKET")


async def test_a_folder_others_may_enter_is_refused_not_made_private(tmp_path: Path) -> None:
    # `--socket ~/acp.sock` made the person's home 0700 behind their back.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    status, stderr = await failed_start(tmp_path / "home", "--socket", str(shared / "acp.sock"))
    assert status == 2
    [line] = stderr
    assert line.startswith(f"acp-agent server: others may enter {shared} (mode 755)"), line
    assert shared.stat().st_mode & 0o777 == 0o755
    assert list(shared.iterdir()) == []


async def test_a_store_that_cannot_be_opened_is_told_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    status, stderr = await failed_start(home, "--store", "sqlite:/proc/no-such-folder/s.db")
    assert status == 1
    [line] = stderr
    assert line.startswith("acp-agent server: the session store could not be opened: "), line
    assert "name another store (--store, ACP_AGENT_STORE, or [store] url in " in line
    assert left_in(home / "state" / "server") == set()


async def test_an_unreachable_postgres_store_is_told_without_its_password(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    home = tmp_path / "home"
    # Nothing listens on port 1: the store tries again for its 10 s, then gives up.
    status, stderr = await failed_start(
        home, "--store", "postgresql://bob:secret-pw@127.0.0.1:1/db", "--listen", "ws://127.0.0.1:0"
    )
    assert status == 1
    # The store's attempts are warned of while they last; the end is one line.
    assert stderr[-1].startswith("acp-agent server: the session store could not be opened: ")
    assert "postgresql://***@127.0.0.1:1/db is unreachable" in stderr[-1]
    assert not [line for line in stderr if "Traceback" in line or " ERROR " in line]
    log = (home / "logs" / "acp-agent.log").read_text()
    assert "secret-pw" not in "\n".join(stderr) + log
    assert left_in(home / "state" / "server") == set()
