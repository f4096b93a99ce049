"""The terminal commands on a PostgreSQL store: `exec`, `sessions` and `doctor` with `--store URL`.

Real commands as subprocesses, one database of the test process's throwaway
cluster (`tests.support.postgres`; skipped saying why without PostgreSQL).
`exec --store` makes a session there, `sessions --store list` lists it, a
session held by another live process is refused naming it (exit 4), and
`doctor --store` reads the server, the schema version and the lease table.
A URL's password is never printed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_agent.paths import resolve_paths
from acp_agent.store import PG_MIGRATIONS
from tests.adapters.doctor.support import run_doctor
from tests.support import agent_env, write_script
from tests.support.postgres import PostgresCluster, fresh_database, skip_without_postgres

pytestmark = pytest.mark.e2e

CRASH_WRITER = Path(__file__).parents[1] / "store" / "crash_writer.py"
TIMEOUT_S = 90
PASSWORD = "pg-secret-pass-0123"


@pytest.fixture
def database() -> Iterator[str]:
    cluster: PostgresCluster = skip_without_postgres(pytest.skip)
    with fresh_database(cluster) as url:
        yield url


def acp_agent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_agent", *args],
        capture_output=True,
        text=True,
        env=agent_env(),
        timeout=TIMEOUT_S,
        check=False,
    )


def test_exec_sessions_and_doctor_work_against_a_postgresql_store(
    tmp_path: Path, database: str
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    script = write_script(tmp_path / "hello.json", [{"text": "Hello."}])
    # The trust-authenticated test server ignores the password; it must never be shown.
    url = database.replace("postgresql:///", f"postgresql://postgres:{PASSWORD}@/", 1)
    store = ("--home", str(home), "--store", url)

    made = acp_agent("exec", *store, "--script", str(script), "--cwd", str(workspace), "Hi")
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "Hello."
    listed = acp_agent("sessions", *store, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [session] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert session["cwd"] == str(workspace.resolve())
    assert not (home / "data" / "sessions.sqlite3").exists()  # nothing went to SQLite

    holder = subprocess.Popen(
        [sys.executable, str(CRASH_WRITER), "hold", url, session["sessionId"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == f"held {holder.pid}"
        shown = acp_agent("sessions", *store, "show", session["sessionId"])
        doctor = run_doctor(
            home, "--store", url, "--script", str(script), "--json", env=agent_env()
        )
    finally:
        holder.kill()
        holder.communicate()

    assert shown.returncode == 4, shown.stderr
    assert f"pid {holder.pid}" in shown.stderr
    assert doctor.returncode == 0, doctor.stdout
    check = doctor.check("store")
    assert check["status"] == "ok", check
    assert check["summary"].startswith("1 session on PostgreSQL ")
    assert f", schema {PG_MIGRATIONS[-1].version}, 1 leased" in check["summary"]
    [holding] = check["details"]["lease holders"]
    assert holding.startswith(f"pid {holder.pid} on ")
    assert check["details"]["url"].startswith("postgresql://***@/")
    for output in (made, listed, shown):
        assert PASSWORD not in output.stdout + output.stderr
    assert PASSWORD not in doctor.stdout + doctor.stderr
    logs = [path.read_text() for path in home.rglob("*.log")]
    assert logs  # the agents logged (the store's URL among it), and never the password
    assert all(PASSWORD not in text for text in logs)


def test_doctor_names_an_unreachable_postgresql_store_without_its_password(
    tmp_path: Path,
) -> None:
    url = f"postgresql://alice:{PASSWORD}@127.0.0.1:1/team"
    script = write_script(tmp_path / "hello.json", [{"text": "Hello."}])
    report = run_doctor(
        tmp_path / "home", "--script", str(script), "--json", env=agent_env(ACP_AGENT_STORE=url)
    )

    check = report.check("store")
    assert (report.returncode, check["status"]) == (1, "problem")
    assert check["summary"].startswith("cannot be read: ")
    assert check["details"] == {
        "url": "postgresql://***@127.0.0.1:1/team",
        "from": "ACP_AGENT_STORE",
    }
    assert PASSWORD not in report.stdout + report.stderr


def test_store_migrate_copies_a_persons_sessions_once_and_verifies_them(
    tmp_path: Path, database: str
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    script = write_script(tmp_path / "hello.json", [{"text": "Hello."}])
    for prompt in ("First", "Second"):
        made = acp_agent(
            "exec", "--home", str(home), "--script", str(script), "--cwd", str(workspace), prompt
        )
        assert made.returncode == 0, made.stderr
    url = database.replace("postgresql:///", f"postgresql://postgres:{PASSWORD}@/", 1)
    sqlite_path = resolve_paths(home).data_dir / "sessions.sqlite3"

    first = acp_agent("store", "migrate", "--from", f"sqlite:{sqlite_path}", "--to", url)
    again = acp_agent("store", "migrate", "--home", str(home), "--to", url, "--json")
    on_sqlite = acp_agent("sessions", "--home", str(home), "list", "--json")
    on_postgres = acp_agent("sessions", "--home", str(home), "--store", url, "list", "--json")

    assert first.returncode == 0, first.stderr
    assert "  2 sessions copied (" in first.stdout
    assert "Verified: 2 sessions, 2 branches, " in first.stdout
    assert again.returncode == 0, again.stderr
    outcome = json.loads(again.stdout)
    assert (outcome["copied"], len(outcome["present"]), outcome["events"]) == ([], 2, 0)
    assert outcome["verified"]["differences"] == []
    assert outcome["to"].startswith("postgresql://***@/")
    listed = [json.loads(line)["sessionId"] for line in on_sqlite.stdout.splitlines()]
    assert [json.loads(line)["sessionId"] for line in on_postgres.stdout.splitlines()] == listed
    for output in (first, again):
        assert PASSWORD not in output.stdout + output.stderr
