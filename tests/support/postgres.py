"""A throwaway PostgreSQL server for the tests: its own folder, a private socket, no TCP.

`shared_cluster()` starts one per test process (each xdist worker has its own)
on first use, in about a second: `initdb` into a new folder under /tmp, then
`postgres` listening only on a unix socket in that folder. Each test takes a
database of its own (`fresh_database()`, dropped after) so tests never see
each other's sessions. The server is this process's child and dies with it
(a parent-death signal), so a killed test run leaves no server behind; at exit
it is stopped and its folder removed.

`initdb` and `postgres` refuse to run as root: as root they run as the
`postgres` user, which owns the folder. Without the server programs, that
user, or psycopg, `PostgresUnavailable` says which is missing and the tests
that need a server skip saying so (CI installs Debian's `postgresql`).

`fsync` is off: the tests kill clients and restart the server, never the
machine, and PostgreSQL's log survives both in the page cache. The benchmark
asks for it on (`fsync=True`).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = (
    "PostgresCluster",
    "PostgresUnavailable",
    "fresh_database",
    "shared_cluster",
    "unavailable_reason",
)

#: How long a starting server may take to accept connections.
_READY_TIMEOUT_S = 30.0
_PR_SET_PDEATHSIG = 1


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says what is missing."""


def _server_programs() -> Path:
    """The folder holding initdb and postgres: on PATH, else Debian's newest version."""
    found = shutil.which("initdb")
    if found is not None:
        folder = Path(found).resolve().parent
        if (folder / "postgres").exists():
            return folder
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: int(Path(path).parts[-3]) if Path(path).parts[-3].isdigit() else 0,
    )
    if not candidates:
        raise PostgresUnavailable(
            "PostgreSQL's server programs (initdb, postgres) are not installed: "
            "apt-get install postgresql"
        )
    return Path(candidates[-1]).parent


def _run_as() -> tuple[str | None, int | None]:
    """The user to run the server as (None: ourselves) and its uid."""
    if os.geteuid() != 0:
        return None, None
    try:
        entry = pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable(
            "running as root, and initdb refuses root, but there is no postgres user to run "
            "it as (apt-get install postgresql creates one)"
        ) from None
    return "postgres", entry.pw_uid


def _dies_with_parent() -> None:
    """In the child, after it became the server's user: SIGQUIT when the test process ends
    (SIGQUIT is the server's immediate shutdown: its backends go with it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGQUIT, 0, 0, 0)


class PostgresCluster:
    """One PostgreSQL server in a folder of its own; `start()` makes and starts it."""

    def __init__(self, folder: Path, programs: Path, user: str | None, *, fsync: bool) -> None:
        self.folder = folder
        self.data = folder / "data"
        self.programs = programs
        self.user = user
        self.fsync = fsync
        self.process: subprocess.Popen[bytes] | None = None
        self.superuser = "postgres"

    @classmethod
    def start(cls, *, fsync: bool = False) -> PostgresCluster:
        """A new cluster, started; `PostgresUnavailable` if that cannot be done here."""
        try:
            import psycopg  # noqa: F401 - the tests talk to it through psycopg
        except ImportError:
            raise PostgresUnavailable(
                "psycopg is not installed (pip install -e '.[dev]')"
            ) from None
        programs = _server_programs()
        user, uid = _run_as()
        folder = Path(tempfile.mkdtemp(prefix="acp-pg-"))
        if uid is not None:
            os.chown(folder, uid, -1)
        cluster = cls(folder, programs, user, fsync=fsync)
        try:
            cluster._initdb()
            cluster.start_server()
        except BaseException:
            cluster.close()
            raise
        return cluster

    # --- the server -----------------------------------------------------------------------

    def _spawn(self, *args: str, **kwargs: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [str(self.programs / args[0]), *args[1:]],
            user=self.user,
            group=self.user,
            cwd=self.folder,
            preexec_fn=_dies_with_parent,
            stdin=subprocess.DEVNULL,
            **kwargs,
        )

    def _initdb(self) -> None:
        initdb = self._spawn(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            self.superuser,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
            "--no-instructions",
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        output, _ = initdb.communicate(timeout=120)
        if initdb.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {output.decode(errors='replace')[-500:]}")

    def start_server(self) -> None:
        """Start the server on the existing data folder and wait until it accepts connections."""
        assert self.process is None or self.process.poll() is not None, "already running"
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - the server keeps it
        with log:
            self.process = self._spawn(
                "postgres",
                "-D",
                str(self.data),
                "-k",
                str(self.folder),
                "-c",
                "listen_addresses=",
                "-c",
                f"fsync={'on' if self.fsync else 'off'}",
                "-c",
                f"full_page_writes={'on' if self.fsync else 'off'}",
                "-c",
                "max_connections=200",
                "-c",
                "shared_buffers=32MB",
                stdout=log,
                stderr=log,
            )
        self._wait_ready()

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + _READY_TIMEOUT_S
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise PostgresUnavailable(f"postgres exited: {self.log_tail()}")
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise PostgresUnavailable(
                        f"postgres did not start in {_READY_TIMEOUT_S} s: {self.log_tail()}"
                    ) from None
                time.sleep(0.02)

    def stop_server(self, *, immediate: bool = False) -> None:
        """Stop the server: a fast shutdown (SIGINT), or an immediate one (SIGQUIT: a crash,
        as far as the data is concerned, recovered from the log at the next start)."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGQUIT if immediate else signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self, *, immediate: bool = False) -> None:
        """Stop and start the server again: every connection to it is cut."""
        self.stop_server(immediate=immediate)
        self.start_server()

    def log_tail(self) -> str:
        try:
            return (self.folder / "server.log").read_text(errors="replace")[-800:]
        except OSError:
            return "(no log)"

    def close(self) -> None:
        """Stop the server and remove its folder."""
        self.stop_server(immediate=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    # --- databases -----------------------------------------------------------------------

    def url(self, database: str) -> str:
        """The URL of `database` on this server (over its private socket)."""
        return f"postgresql:///{database}?host={self.folder}&user={self.superuser}"

    def create_database(self) -> str:
        """A new, empty database; returns its name."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        self.execute(f"CREATE DATABASE {name}")
        return name

    def drop_database(self, name: str) -> None:
        self.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def execute(self, statement: str, database: str = "postgres") -> list[tuple[Any, ...]]:
        """Run one statement as the superuser (autocommit); its rows, if any."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as connection:
            cursor = connection.execute(statement)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description is not None else []


_shared: PostgresCluster | None = None
_unavailable: str | None = None


def shared_cluster() -> PostgresCluster:
    """This test process's cluster, started on first use; `PostgresUnavailable` if none can be."""
    global _shared, _unavailable
    if _unavailable is not None:
        raise PostgresUnavailable(_unavailable)
    if _shared is None:
        try:
            _shared = PostgresCluster.start()
        except PostgresUnavailable as exc:
            _unavailable = str(exc)
            raise
        atexit.register(_shared.close)
    elif _shared.process is None or _shared.process.poll() is not None:
        _shared.start_server()  # a test stopped it and failed before starting it again
    return _shared


def unavailable_reason() -> str | None:
    """Why no cluster can be started here (None: one can, or is running)."""
    try:
        shared_cluster()
    except PostgresUnavailable as exc:
        return str(exc)
    return None


@contextlib.contextmanager
def fresh_database(cluster: PostgresCluster | None = None) -> Iterator[str]:
    """A database of its own on the shared cluster for one test: yields its URL, drops it after."""
    cluster = cluster or shared_cluster()
    name = cluster.create_database()
    try:
        yield cluster.url(name)
    finally:
        if cluster.process is not None and cluster.process.poll() is None:
            cluster.drop_database(name)


def skip_without_postgres(skip: Callable[[str], Any]) -> PostgresCluster:
    """The shared cluster, or `skip(reason)` (pytest.skip) when none can be started."""
    try:
        return shared_cluster()
    except PostgresUnavailable as exc:
        return skip(f"no PostgreSQL server for this test: {exc}")  # type: ignore[no-any-return]
