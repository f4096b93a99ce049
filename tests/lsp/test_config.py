"""Language servers from the person's `config.toml`: added, built-ins switched off, bad
entries left out with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.lsp import RUFF, load_servers


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_without_a_file_the_built_in_servers_serve(tmp_path: Path) -> None:
    configured = load_servers(tmp_path / "missing.toml")

    assert RUFF in configured.servers
    assert configured.settle_s is None


def test_a_configured_server_is_added_and_a_built_in_one_switched_off(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        """
[lsp]
settle_s = 2.5

[lsp.servers.rust-analyzer]
command = ["rust-analyzer"]
args = ["--log-file", "/tmp/ra.log"]
extensions = [".rs", "toml"]
language = "rust"
navigates = true
settings = { "rust-analyzer" = { checkOnSave = false } }

[lsp.servers.ruff]
enabled = false
""",
    )

    configured = load_servers(config)

    by_name = {spec.name: spec for spec in configured.servers}
    assert "ruff" not in by_name
    rust = by_name["rust-analyzer"]
    assert rust.command == ("rust-analyzer", "--log-file", "/tmp/ra.log")
    assert rust.suffixes == (".rs", ".toml")
    assert rust.handles(Path("src/main.rs"))
    assert rust.language_id == "rust"
    assert rust.navigates
    assert rust.settings == {"rust-analyzer": {"checkOnSave": False}}
    assert configured.settle_s == 2.5


def test_a_malformed_entry_is_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = write(
        tmp_path,
        """
[lsp.servers.broken]
command = 42
extensions = [".x"]

[lsp.servers.fine]
command = "fine-ls"
extensions = [".fine"]
""",
    )

    configured = load_servers(config)

    names = [spec.name for spec in configured.servers]
    assert "broken" not in names
    assert "fine" in names
    assert "[lsp.servers.broken] is ignored" in caplog.text


def test_an_unreadable_file_leaves_the_built_ins(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    configured = load_servers(write(tmp_path, "[lsp\nbroken"))

    assert RUFF in configured.servers
    assert "could not be read" in caplog.text
