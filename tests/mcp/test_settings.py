"""Servers from config files, and the trust rule: a project cannot enable its own servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.mcp import (
    ConfiguredServers,
    DisabledServer,
    HttpServerConfig,
    McpOrigin,
    SseServerConfig,
    StdioServerConfig,
    declaration_hash,
    enablement_entry,
    load_configured_servers,
    with_editor_servers,
)

PROJECT_SERVER = """
[mcp_servers.lint]
command = "lint-mcp"
args = ["--stdio"]
env = { LEVEL = "strict" }
"""


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    path = tmp_path / "config"
    path.mkdir()
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    (path / ".acp-agent").mkdir(parents=True)
    return path


def write_project(workspace: Path, text: str) -> None:
    (workspace / ".acp-agent" / "config.toml").write_text(text)


def write_user(config_dir: Path, text: str) -> None:
    (config_dir / "config.toml").write_text(text)


def lint_server() -> StdioServerConfig:
    return StdioServerConfig(
        name="lint",
        origin=McpOrigin.PROJECT,
        command="lint-mcp",
        args=("--stdio",),
        env=(("LEVEL", "strict"),),
    )


def test_user_servers_are_enabled_by_default(config_dir: Path, workspace: Path) -> None:
    write_user(
        config_dir,
        """
        [mcp_servers.github]
        command = "github-mcp"
        args = ["stdio"]
        cwd = "/srv"
        startup_timeout_s = 10
        tool_timeout_s = 120

        [mcp_servers.docs]
        url = "https://example.com/mcp"
        headers = { Authorization = "Bearer t" }

        [mcp_servers.legacy]
        url = "https://example.com/sse"
        transport = "sse"

        [mcp_servers.off]
        command = "off-mcp"
        enabled = false
        """,
    )
    configured = load_configured_servers(config_dir, workspace)
    off = StdioServerConfig(name="off", command="off-mcp")
    assert configured == ConfiguredServers(
        servers=(
            StdioServerConfig(
                name="github",
                command="github-mcp",
                args=("stdio",),
                cwd="/srv",
                startup_timeout_s=10.0,
                tool_timeout_s=120.0,
            ),
            HttpServerConfig(
                name="docs",
                url="https://example.com/mcp",
                headers=(("Authorization", "Bearer t"),),
            ),
            SseServerConfig(name="legacy", url="https://example.com/sse"),
        ),
        disabled=(DisabledServer(off, f"disabled in {config_dir / 'config.toml'}"),),
    )


def test_a_project_server_stays_disabled_until_the_user_enables_it(
    config_dir: Path, workspace: Path
) -> None:
    write_project(workspace, PROJECT_SERVER)

    before = load_configured_servers(config_dir, workspace)
    assert before.servers == ()
    assert [entry.config for entry in before.disabled] == [lint_server()]
    assert before.disabled[0].reason == (
        "declared by the project; not enabled in the user config file"
    )

    write_user(config_dir, enablement_entry(workspace.resolve(), lint_server()))
    after = load_configured_servers(config_dir, workspace)
    assert after.servers == (lint_server(),)
    assert after.disabled == ()


def test_the_disabled_status_carries_the_entry_that_enables_it(
    config_dir: Path, workspace: Path
) -> None:
    write_project(workspace, PROJECT_SERVER)
    entry = load_configured_servers(config_dir, workspace).disabled[0].enable_with
    assert entry == (
        "[[mcp.enabled_project_servers]]\n"
        f'project = "{workspace.resolve()}"\n'
        'name = "lint"\n'
        f'hash = "{declaration_hash(lint_server())}"\n'
    )
    write_user(config_dir, entry)
    assert load_configured_servers(config_dir, workspace).servers == (lint_server(),)


def test_a_changed_declaration_needs_enabling_again(config_dir: Path, workspace: Path) -> None:
    write_project(workspace, PROJECT_SERVER)
    write_user(config_dir, enablement_entry(workspace.resolve(), lint_server()))
    assert load_configured_servers(config_dir, workspace).servers == (lint_server(),)

    write_project(workspace, PROJECT_SERVER.replace('"--stdio"', '"--stdio", "--fix"'))
    changed = load_configured_servers(config_dir, workspace)
    assert changed.servers == ()
    assert changed.disabled[0].reason.startswith(
        "declared by the project; its declaration changed since it was enabled"
    )


def test_the_same_declaration_in_another_project_is_not_enabled(
    config_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other / ".acp-agent").mkdir(parents=True)
    write_project(workspace, PROJECT_SERVER)
    write_project(other, PROJECT_SERVER)
    write_user(config_dir, enablement_entry(workspace.resolve(), lint_server()))

    assert load_configured_servers(config_dir, other).servers == ()


def test_a_project_file_that_claims_to_enable_itself_is_ignored(
    config_dir: Path, workspace: Path
) -> None:
    write_project(
        workspace,
        PROJECT_SERVER.replace("[mcp_servers.lint]", "[mcp_servers.lint]\nenabled = true")
        + "\n"
        + enablement_entry(workspace.resolve(), lint_server()),
    )
    configured = load_configured_servers(config_dir, workspace)
    assert configured.servers == ()
    assert configured.disabled[0].reason == (
        "declared by the project; not enabled in the user config file "
        "(its own `enabled = true` cannot enable it)"
    )
    assert configured.problems == (
        f"{workspace / '.acp-agent' / 'config.toml'}: the [mcp] table is ignored; project "
        "servers are enabled in the user config file only",
    )


def test_a_project_may_turn_its_own_enabled_server_off(config_dir: Path, workspace: Path) -> None:
    write_project(
        workspace,
        PROJECT_SERVER.replace("[mcp_servers.lint]", "[mcp_servers.lint]\nenabled = false"),
    )
    write_user(config_dir, enablement_entry(workspace.resolve(), lint_server()))
    assert load_configured_servers(config_dir, workspace).servers == ()


def test_invalid_declarations_are_reported_and_the_rest_is_used(
    config_dir: Path, workspace: Path
) -> None:
    write_user(
        config_dir,
        """
        [mcp_servers.both]
        command = "x"
        url = "https://example.com"

        [mcp_servers.typo]
        comand = "x"

        [mcp_servers.fine]
        command = "fine-mcp"
        """,
    )
    configured = load_configured_servers(config_dir, workspace)
    assert configured.servers == (StdioServerConfig(name="fine", command="fine-mcp"),)
    where = config_dir / "config.toml"
    assert configured.problems[0] == (
        f"{where}: [mcp_servers.both]: give either command (stdio) or url (HTTP), not both"
    )
    assert configured.problems[1].startswith(f"{where}: [mcp_servers.typo]: unknown key 'comand'")


def test_an_unreadable_config_file_is_a_problem_not_a_failure(
    config_dir: Path, workspace: Path
) -> None:
    write_user(config_dir, "[mcp_servers.broken\n")
    configured = load_configured_servers(config_dir, workspace)
    assert configured.servers == ()
    assert configured.problems[0].startswith(f"cannot read {config_dir / 'config.toml'}")


def test_the_editors_server_wins_a_name_over_the_projects_and_the_users(
    config_dir: Path, workspace: Path
) -> None:
    write_user(config_dir, '[mcp_servers.lint]\ncommand = "user-lint"\n')
    editor = StdioServerConfig(name="lint", origin=McpOrigin.EDITOR, command="/bin/editor-lint")

    session = with_editor_servers([editor], load_configured_servers(config_dir, workspace))

    assert session.servers == (editor,)
    assert session.disabled == (
        DisabledServer(
            StdioServerConfig(name="lint", command="user-lint"),
            "the editor's server of the same name is used instead",
        ),
    )


def test_the_hash_covers_the_whole_declaration_but_not_its_origin() -> None:
    server = lint_server()
    assert declaration_hash(server) == declaration_hash(
        StdioServerConfig(
            name="lint",
            origin=McpOrigin.USER,
            command="lint-mcp",
            args=["--stdio"],
            env={"LEVEL": "strict"},
        )
    )
    assert declaration_hash(server) != declaration_hash(
        StdioServerConfig(
            name="lint",
            origin=McpOrigin.PROJECT,
            command="lint-mcp",
            args=("--stdio",),
            env=(("LEVEL", "lenient"),),
        )
    )
    assert declaration_hash(server).startswith("sha256:")


def test_the_user_config_file_with_mcp_tables_still_configures_models(
    config_dir: Path, workspace: Path
) -> None:
    from acp_agent.models import load_models_config

    write_user(
        config_dir,
        'default_model = "ollama/qwen3"\n'
        '[mcp_servers.github]\ncommand = "github-mcp"\n'
        + enablement_entry(workspace, StdioServerConfig(name="x", command="x")),
    )
    models = load_models_config(config_dir / "config.toml", {})
    assert models.default_model == "ollama/qwen3"
    assert load_configured_servers(config_dir, workspace).servers == (
        StdioServerConfig(name="github", command="github-mcp"),
    )
