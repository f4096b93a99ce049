"""Which store the agent opens: the flag, then ACP_AGENT_STORE, then `[store] url`, then SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.store import StoreLocation, StoreUrlInvalid, redact_store_url, store_location

PG = "postgresql://alice:s3cret@db.example:5432/team?sslmode=require"


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_with_nothing_configured_it_is_the_sqlite_file_in_the_data_folder(tmp_path: Path) -> None:
    location = store_location(flag=None, env={}, config_file=None, data_dir=tmp_path / "data")
    assert location == StoreLocation("sqlite", str(tmp_path / "data" / "sessions.sqlite3"))


def test_the_flag_wins_over_the_environment_which_wins_over_the_config(tmp_path: Path) -> None:
    file = config(tmp_path, '[store]\nurl = "sqlite:from-config.sqlite3"\nlease_timeout_s = 12\n')
    env = {"ACP_AGENT_STORE": PG}
    chosen = [
        store_location(flag=flag, env=given, config_file=file, data_dir=tmp_path)
        for flag, given in ((f"sqlite:{tmp_path}/flag.sqlite3", env), (None, env), (None, {}))
    ]
    assert [(c.kind, c.source) for c in chosen] == [
        ("sqlite", "--store"),
        ("postgresql", "ACP_AGENT_STORE"),
        ("sqlite", f"{file} [store] url"),
    ]
    assert chosen[0].path == tmp_path / "flag.sqlite3"
    assert chosen[1].lease_timeout_s == 12.0
    assert chosen[2].path == tmp_path / "from-config.sqlite3"  # beside the config file


def test_a_url_is_shown_without_its_credentials() -> None:
    location = store_location(flag=PG, env={}, config_file=None, data_dir=Path("/d"))
    assert location.target == PG
    assert location.shown == "postgresql://***@db.example:5432/team?sslmode=require"
    assert "s3cret" not in repr(location)
    assert redact_store_url("postgres:///team?password=hunter22&host=/run") == (
        "postgres:///team?password=***&host=/run"
    )


@pytest.mark.parametrize(
    ("flag", "env", "text", "message"),
    [
        ("mysql://alice:pw@db/x", {}, "", "is not a store URL"),
        ("sqlite:", {}, "", "needs a file path"),
        (None, {"ACP_AGENT_STORE_LEASE_TIMEOUT_S": "soon"}, "", "positive number"),
        (None, {}, '[store]\nurl = "postgresql:///x"\nwho = 1\n', "unknown key 'who'"),
    ],
)
def test_a_store_it_cannot_use_is_refused_saying_why(
    tmp_path: Path, flag: str | None, env: dict[str, str], text: str, message: str
) -> None:
    file = config(tmp_path, text) if text else None
    with pytest.raises(StoreUrlInvalid, match=message) as refused:
        store_location(flag=flag, env=env, config_file=file, data_dir=tmp_path)
    assert "pw@" not in str(refused.value)
