"""Commands run through the local command path (`run_local`, `LocalJob`) in real bubblewrap:
what they can and cannot do, against the same commands with no sandbox."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_agent.process_groups import GroupRegistry, process_groups, use_process_groups
from acp_agent.sandbox import Sandbox, places_in_tmp
from acp_agent.tools._background import LocalJob
from acp_agent.tools._process import LocalExit, run_local
from tests.sandbox.conftest import Play
from tests.support.processes import command_lines

pytestmark = pytest.mark.anyio


async def run(play: Play, command: str, sandbox: Sandbox | None) -> tuple[LocalExit, str]:
    """`bash -c command` in the workspace, as the shell tool runs it locally."""
    output = bytearray()

    async def keep(chunk: bytes) -> None:
        output.extend(chunk)

    ended = await run_local(
        ["bash", "-c", command],
        cwd=play.workspace,
        env=dict(os.environ),
        timeout_s=30,
        on_output=keep,
        sandbox=sandbox,
    )
    return ended, output.decode()


async def test_it_writes_in_the_workspace_and_its_temp_folder(play: Play) -> None:
    ended, output = await run(
        play, 'echo made > made.txt && echo tmp > "$TMPDIR/t" && echo $TMPDIR', play.sandbox()
    )

    assert (ended.exit_code, output) == (0, f"{play.temp}\n")
    assert (play.workspace / "made.txt").read_text() == "made\n"
    assert (play.temp / "t").read_text() == "tmp\n"


async def test_it_cannot_write_outside_the_roots_and_without_a_sandbox_it_can(
    play: Play,
) -> None:
    command = f"echo escaped > {play.outside}/x"

    ended, output = await run(play, command, play.sandbox())
    assert ended.exit_code == 1
    assert "Read-only file system" in output
    assert not (play.outside / "x").exists()

    ended, output = await run(play, command, None)
    assert (ended.exit_code, output) == (0, "")
    assert (play.outside / "x").read_text() == "escaped\n"


async def test_it_cannot_read_the_store_or_a_secret_and_without_a_sandbox_it_can(
    play: Play,
) -> None:
    store = play.agent.data_dir / "sessions.sqlite3"
    key = play.home / ".ssh" / "id_ed25519"
    netrc = play.home / ".netrc"
    command = f"cat {store}; cat {key}; cat {netrc}; ls {play.home / '.ssh'}"

    ended, output = await run(play, command, play.sandbox())
    assert ended.exit_code != 0
    for secret in ("the store\n", "PRIVATE KEY\n", "hunter2\n", "\nid_ed25519\n"):
        assert secret not in output
    assert f"cat: {store}: No such file or directory" in output
    assert f"cat: {netrc}: Permission denied" in output

    ended, output = await run(play, command, None)
    assert ended.exit_code == 0
    for secret in ("the store\n", "PRIVATE KEY\n", "hunter2\n", "\nid_ed25519\n"):
        assert secret in output


@pytest.fixture
def loopback_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 answering `hello` to each connection; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"hello\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


async def test_it_cannot_reach_a_server_on_loopback_unless_the_network_is_on(
    play: Play, loopback_server: int
) -> None:
    command = (
        "python3 -c 'import socket; "
        f's = socket.create_connection(("127.0.0.1", {loopback_server}), timeout=5); '
        "print(s.recv(10).decode().strip())'"
    )

    ended, output = await run(play, command, play.sandbox())
    assert ended.exit_code == 1
    assert "Connection refused" in output

    for sandbox in (None, play.sandbox(network=True)):
        ended, output = await run(play, command, sandbox)
        assert (ended.exit_code, output) == (0, "hello\n")


@pytest.fixture
def token() -> Iterator[str]:
    """A `sleep` duration no other process uses, to find the sleep from outside; any
    process left with it is killed afterwards (a failed test leaves none behind)."""
    token = f"{1000 + secrets.randbelow(1000)}.{secrets.randbelow(10**6)}"
    yield token
    for pid in _with_token(token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _with_token(token: str) -> list[int]:
    return [pid for pid, argv in command_lines().items() if token in argv]


async def _gone(token: str) -> bool:
    for _ in range(250):
        if not _with_token(token):
            return True
        await anyio.sleep(0.02)
    return False


async def test_what_it_starts_cannot_outlive_it_even_in_a_session_of_its_own(
    play: Play, token: str
) -> None:
    # `setsid` leaves the command's group: without a sandbox the sleep survives the
    # group kill; in one, the sandbox's end (its pid namespace) takes it along.
    command = f"setsid sleep {token} </dev/null >/dev/null 2>&1 & sleep 0.2; echo started"

    ended, output = await run(play, command, play.sandbox())
    assert (ended.exit_code, output) == (0, "started\n")
    assert await _gone(token)

    ended, output = await run(play, command, None)
    assert (ended.exit_code, output, len(_with_token(token))) == (0, "started\n", 1)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[GroupRegistry]:
    """A registry noting each group on disk, as the agent's (no reaper)."""
    before = process_groups()
    registry = GroupRegistry(tmp_path / "notes")
    use_process_groups(registry)
    try:
        yield registry
    finally:
        use_process_groups(before)


def _group_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])


async def test_a_sandboxed_job_stays_in_its_registered_group_and_stopping_it_ends_it(
    play: Play, registry: GroupRegistry, tmp_path: Path, token: str
) -> None:
    job = await LocalJob.spawn(
        ["bash", "-c", f"sleep {token}"],
        cwd=play.workspace,
        env=dict(os.environ),
        sandbox=play.sandbox(),
    )
    ended: list[tuple[int | None, str | None]] = []
    async with anyio.create_task_group() as group:

        async def wait() -> None:
            exited = await job.wait()
            ended.append((exited.exit_code, exited.signal))

        group.start_soon(wait)
        for _ in range(250):
            if _with_token(token):
                break
            await anyio.sleep(0.02)
        [sleeper] = _with_token(token)
        assert _group_of(sleeper) == job.pgid  # the group registered, and killed on stop
        assert len(list((tmp_path / "notes").iterdir())) == 1
        with anyio.fail_after(10):
            await job.stop()
    assert await _gone(token)
    assert ended == [(None, "SIGTERM")]
    assert list((tmp_path / "notes").iterdir()) == []


async def test_killing_bwrap_alone_ends_the_command_it_sandboxes(play: Play, token: str) -> None:
    job = await LocalJob.spawn(
        ["bash", "-c", f"setsid sleep {token}; sleep {token}"],
        cwd=play.workspace,
        env=dict(os.environ),
        sandbox=play.sandbox(),
    )
    try:
        for _ in range(250):
            if _with_token(token):
                break
            await anyio.sleep(0.02)
        assert job.pgid is not None
        assert _with_token(token)
        os.kill(job.pgid, signal.SIGKILL)  # bwrap itself, not its group
        assert await _gone(token)
    finally:
        await job.release()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root keeps capabilities in bwrap by default")
async def test_root_in_the_sandbox_cannot_remount_or_unhide_anything(play: Play) -> None:
    ssh = play.home / ".ssh"
    command = (
        f"mount -o remount,rw / && echo remounted; umount {ssh} && echo unmounted; "
        f"touch {play.outside}/x && echo wrote; cat {ssh}/id_ed25519"
    )

    ended, output = await run(play, command, play.sandbox())

    assert ended.exit_code != 0
    for done in ("remounted", "unmounted", "wrote", "PRIVATE KEY"):
        assert done not in output
    assert not (play.outside / "x").exists()


async def test_git_commits_but_its_hooks_and_config_stay_read_only(play: Play) -> None:
    await anyio.run_process(["git", "init", "-q", str(play.workspace)])
    command = (
        "git -c user.name=A -c user.email=a@example.com commit -q --allow-empty -m one "
        "&& git log --format=%s; "
        "echo 'echo pwned' > .git/hooks/pre-commit; git config core.hooksPath /x"
    )

    ended, output = await run(play, command, play.sandbox())

    assert output.startswith("one\n")
    assert ".git/hooks/pre-commit: Read-only file system" in output
    assert ended.exit_code != 0  # git config could not write
    assert not (play.workspace / ".git" / "hooks" / "pre-commit").exists()
    assert "hooksPath" not in (play.workspace / ".git" / "config").read_text()


async def test_a_socket_in_a_hidden_place_cannot_be_reached(play: Play) -> None:
    path = play.outside / "engine.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    command = (
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); "
        f's.connect("{path}"); print("connected")\''
    )
    try:
        ended, output = await run(play, command, play.sandbox(hidden=(path,)))
        assert ended.exit_code == 1
        assert "connected" not in output

        ended, output = await run(play, command, None)
        assert (ended.exit_code, output) == (0, "connected\n")
    finally:
        server.close()


async def test_a_root_inside_a_hidden_folder_stays_usable_and_the_rest_hidden(
    play: Play,
) -> None:
    inner = play.home / ".ssh" / "project"
    inner.mkdir()
    sandbox = Sandbox(play.policy(), (inner,))

    output = bytearray()

    async def keep(chunk: bytes) -> None:
        output.extend(chunk)

    ended = await run_local(
        ["bash", "-c", "echo ok > made && cat made; cat ../id_ed25519; ls .."],
        cwd=inner,
        env=dict(os.environ),
        timeout_s=30,
        on_output=keep,
        sandbox=sandbox,
    )

    assert output.decode().startswith("ok\n")
    assert "PRIVATE KEY" not in output.decode()
    assert ended.exit_code != 0
    assert (inner / "made").read_text() == "ok\n"


async def test_ordinary_tools_work_inside(play: Play) -> None:
    (play.workspace / "test_one.py").write_text("def test_one():\n    assert True\n")
    ruff = Path(sys.executable).parent / "ruff"
    command = (
        "python3 -m venv --without-pip .venv && .venv/bin/python -c 'print(42)' && "
        f"{sys.executable} -m pytest -q -p no:xdist test_one.py && {ruff} check ."
    )

    ended, output = await run(play, command, play.sandbox())

    assert ended.exit_code == 0, output
    assert output.startswith("42\n")
    assert "1 passed" in output
    assert output.endswith("All checks passed!\n")
    assert (play.workspace / ".pytest_cache").is_dir()
    assert (play.workspace / ".ruff_cache").is_dir()


async def test_programs_run_from_tmp_stay_visible_read_only(
    play: Play, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A clone or a venv under /tmp (CI's checkout, say): its programs still run inside,
    # though /tmp itself is an empty one per command, and they cannot be changed there.
    tools = Path(tempfile.mkdtemp(prefix="acp-agent-tools-", dir="/tmp"))
    try:
        hello = tools / "hello"
        hello.write_text("#!/bin/sh\necho hello from tmp\n")
        hello.chmod(0o755)
        (Path("/tmp") / tools.name).with_suffix(".stray").write_text("not a program place")
        monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")

        ended, output = await run(
            play,
            f"hello && ! ls /tmp/{tools.name}.stray 2>/dev/null && ! echo x > {hello}",
            play.sandbox(),
        )

        assert ended.exit_code == 0, output
        assert output.startswith("hello from tmp\n")
        assert hello.read_text() == "#!/bin/sh\necho hello from tmp\n"
    finally:
        shutil.rmtree(tools)
        (Path("/tmp") / tools.name).with_suffix(".stray").unlink(missing_ok=True)


async def test_a_program_named_by_path_under_tmp_is_shown_only_when_asked(play: Play) -> None:
    # An MCP server's script under /tmp (a clone there): shown read-only with its folder
    # when the wrap is asked to (as the MCP client does), hidden by the empty /tmp else.
    scripts = Path(tempfile.mkdtemp(prefix="acp-agent-server-", dir="/tmp"))
    try:
        script = scripts / "server.sh"
        script.write_text("echo served\n")
        (scripts / "sibling.sh").write_text("echo sibling\n")
        sandbox = play.sandbox()
        argv = ["bash", str(script)]

        assert places_in_tmp(["bash", str(script), "-v", "/etc/hostname"]) == [scripts]
        hidden = await anyio.run_process(sandbox.wrap(argv, cwd=play.workspace), check=False)
        shown = await anyio.run_process(
            sandbox.wrap(argv, cwd=play.workspace, show=places_in_tmp(argv)), check=False
        )

        assert hidden.returncode != 0
        assert (shown.returncode, shown.stdout) == (0, b"served\n")
    finally:
        shutil.rmtree(scripts)
