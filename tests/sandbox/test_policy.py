"""The policy (defaults, the person's `[sandbox]`, the agent's folders) and the bwrap command
line it becomes: which places are mounted how, in which order."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.models._config import load_models_config
from acp_agent.paths import resolve_paths
from acp_agent.sandbox import (
    DEFAULT_HIDDEN,
    DEFAULT_HIDDEN_ENV,
    DEFAULT_TOOL_CACHES,
    Sandbox,
    SandboxPolicy,
    SandboxSettings,
    bwrap_argv,
    load_sandbox_settings,
    sandbox_policy,
)


def test_the_defaults_hide_credentials_and_the_agents_folders_and_open_tool_caches(
    tmp_path: Path,
) -> None:
    agent = resolve_paths(tmp_path / "agent")
    home = tmp_path / "home"
    env = {"XDG_RUNTIME_DIR": "/run/user/4242", "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1"}

    policy = sandbox_policy(agent_paths=agent, home=home, env=env)

    assert home / ".ssh" in policy.hidden
    assert home / ".aws" in policy.hidden
    assert home / ".docker" / "config.json" in policy.hidden
    for folder in (agent.config_dir, agent.data_dir, agent.state_dir, agent.log_dir):
        assert folder in policy.hidden
    assert Path("/run/user/4242") in policy.hidden
    assert Path("/tmp/ssh-x/agent.1") in policy.hidden
    assert len(policy.hidden) == len(DEFAULT_HIDDEN) + 4 + 2
    assert policy.writable == tuple(home / entry[2:] for entry in DEFAULT_TOOL_CACHES)
    assert home / ".cargo" not in policy.writable  # its bin folder would run later
    assert (policy.network, policy.temp_dir) == (False, None)


def test_the_persons_settings_add_places_and_show_defaults_after_all(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = SandboxSettings(
        writable=("~/.cache/bazel", "/srv/cache"),
        hidden=("~/work/secrets",),
        readable=("~/.npmrc",),
        tool_caches=False,
    )

    policy = sandbox_policy(agent_paths=None, settings=settings, home=home, env={})

    assert policy.writable == (home / ".cache/bazel", Path("/srv/cache"))
    assert home / "work/secrets" in policy.hidden
    assert home / ".npmrc" not in policy.hidden
    assert home / ".pypirc" in policy.hidden


def test_the_providers_keys_and_the_persons_variables_are_kept_from_commands() -> None:
    settings = SandboxSettings(hidden_env=("GITHUB_TOKEN",))
    policy = sandbox_policy(
        agent_paths=None, settings=settings, env={}, key_variables=["OPENROUTER_API_KEY", "MY_KEY"]
    )
    env = {"ANTHROPIC_API_KEY": "a", "MY_KEY": "m", "GITHUB_TOKEN": "g", "PATH": "/bin", "X": "1"}

    assert policy.hidden_env == (*DEFAULT_HIDDEN_ENV, "MY_KEY", "GITHUB_TOKEN")
    assert Sandbox(policy, ()).environment(env) == {"PATH": "/bin", "X": "1"}


def test_a_config_file_with_a_sandbox_table_is_a_valid_config(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('default_model = "openai/gpt-4.1"\n[sandbox]\nhidden_env = ["A_TOKEN"]\n')

    models = load_models_config(config, {})  # raised ConfigFileInvalid on an unknown key

    assert models.default_model == "openai/gpt-4.1"
    assert load_sandbox_settings(config).hidden_env == ("A_TOKEN",)


def test_the_config_file_gives_the_settings_and_names_what_it_left_out(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "[sandbox]\n"
        'writable = ["~/.cache/bazel", "relative/path", 3]\n'
        'hidden = "~/not-a-list"\n'
        'readable = ["~/.npmrc"]\n'
        'tool_caches = "yes"\n'
        "network = true\n"
        'hidden_env = ["GOOD_NAME", "not a name", 7]\n'
    )

    settings = load_sandbox_settings(config)

    assert settings.writable == ("~/.cache/bazel",)
    assert settings.hidden_env == ("GOOD_NAME",)
    assert (settings.hidden, settings.readable, settings.tool_caches) == ((), ("~/.npmrc",), True)
    assert settings.problems == (
        "[sandbox] writable: 'relative/path' is not an absolute or ~/ path; ignored",
        "[sandbox] writable: 3 is not an absolute or ~/ path; ignored",
        "[sandbox] hidden must be a list of paths; ignored",
        "[sandbox] tool_caches must be true or false; the default (true) applies",
        "[sandbox] hidden_env: 'not a name' is not a variable name; ignored",
        "[sandbox] hidden_env: 7 is not a variable name; ignored",
        "[sandbox] network is not a setting; ignored",
    )
    assert load_sandbox_settings(tmp_path / "absent.toml") == SandboxSettings()
    config.write_text("[sandbox\n")
    assert (
        load_sandbox_settings(config)
        .problems[0]
        .endswith(
            "could not be read for [sandbox]: Expected ']' at the end of a table declaration "
            "(at line 1, column 9)"
        )
    )


#: How many arguments each bwrap option the command line uses takes.
_ARITY = {
    "--bind": 2,
    "--ro-bind": 2,
    "--dev": 1,
    "--proc": 1,
    "--tmpfs": 1,
    "--perms": 1,
    "--remount-ro": 1,
    "--cap-drop": 1,
    "--setenv": 2,
    "--chdir": 1,
}
_MOUNTS = {"--bind", "--ro-bind", "--tmpfs", "--perms", "--remount-ro"}


def _mounts(argv: list[str]) -> list[tuple[str, ...]]:
    """The mount options of a bwrap command line, each with its arguments, in order."""
    found: list[tuple[str, ...]] = []
    index = 1
    while argv[index] != "--":
        option, count = argv[index], _ARITY.get(argv[index], 0)
        if option in _MOUNTS:
            found.append((option, *argv[index + 1 : index + 1 + count]))
        index += 1 + count
    return found


def test_nested_places_mount_shallowest_first_so_the_deeper_one_wins(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("")
    (root / ".env.secret").write_text("")
    hidden_dir = tmp_path / "hidden"
    (hidden_dir / "inner-root").mkdir(parents=True)
    policy = SandboxPolicy(
        writable=(tmp_path / "cache", tmp_path / "absent"),
        hidden=(root / ".env.secret", hidden_dir, tmp_path / "absent-secret"),
        temp_dir=tmp_path / "cache",
    )
    (tmp_path / "cache").mkdir()

    argv = bwrap_argv(["true"], roots=(root, hidden_dir / "inner-root"), cwd=root, policy=policy)

    assert argv[:10] == [
        "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"
    ]  # fmt: skip
    # Absent places are left out; at one depth, writable before hidden.
    assert _mounts(argv)[2:] == [
        ("--bind", str(root), str(root)),
        ("--bind", str(tmp_path / "cache"), str(tmp_path / "cache")),
        ("--perms", "0111"),
        ("--tmpfs", str(hidden_dir)),
        ("--bind", str(hidden_dir / "inner-root"), str(hidden_dir / "inner-root")),
        ("--ro-bind", "/dev/null", str(root / ".env.secret")),
        ("--ro-bind", str(root / ".git/hooks"), str(root / ".git/hooks")),
        ("--ro-bind", str(root / ".git/config"), str(root / ".git/config")),
        ("--remount-ro", str(hidden_dir)),
    ]
    tail = argv[argv.index("--unshare-pid") :]
    assert tail[: tail.index("--remount-ro")] == [
        "--unshare-pid", "--unshare-ipc", "--unshare-net", "--die-with-parent", "--cap-drop", "ALL"
    ]  # fmt: skip
    assert argv[-7:] == [
        "--setenv", "TMPDIR", str(tmp_path / "cache"), "--chdir", str(root), "--", "true"
    ]  # fmt: skip


@pytest.mark.parametrize(("network", "new_session"), [(True, False), (False, True)])
def test_the_network_and_a_new_session_are_options(
    tmp_path: Path, network: bool, new_session: bool
) -> None:
    argv = bwrap_argv(
        ["true"],
        roots=(),
        cwd=tmp_path,
        policy=SandboxPolicy(network=network),
        new_session=new_session,
    )

    assert ("--unshare-net" in argv) is not network
    assert ("--new-session" in argv) is new_session
    assert argv[argv.index("TMPDIR") + 1] == "/tmp"


def test_a_place_named_through_a_link_is_mounted_where_it_really_is(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)

    argv = bwrap_argv(["true"], roots=(tmp_path / "link",), cwd=real, policy=SandboxPolicy())

    assert ("--bind", str(real), str(real)) in _mounts(argv)


def test_the_documented_example_is_read_as_documented(tmp_path: Path) -> None:
    docs = Path(__file__).parents[2] / "docs" / "tools.md"
    text = docs.read_text()
    start = text.index("```toml\n[sandbox]\n") + len("```toml\n")
    config = tmp_path / "config.toml"
    config.write_text(text[start : text.index("```", start)])

    settings = load_sandbox_settings(config)

    assert settings == SandboxSettings(
        writable=("~/.cache/bazel", "/srv/shared-cache"),
        hidden=("~/work/secrets", "~/.config/tokens.json"),
        readable=("~/.npmrc",),
        tool_caches=False,
        hidden_env=("GITHUB_TOKEN",),
    )


def test_the_documented_lists_are_the_defaults() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "tools.md").read_text()
    section = docs[docs.index("## The command sandbox") : docs.index("## Big results")]
    flat = " ".join(section.split())

    for cache in DEFAULT_TOOL_CACHES:
        assert f"`{cache}`" in flat
    for place in DEFAULT_HIDDEN:
        assert f"`{place}`" in flat
    for variable in DEFAULT_HIDDEN_ENV:
        assert f"`{variable}`" in flat


def test_visible_places_are_shown_read_only_and_a_root_inside_stays_writable(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    root = venv / "work"
    root.mkdir()

    argv = bwrap_argv(
        ["true"], roots=(root,), cwd=root, policy=SandboxPolicy(), visible=(venv, tmp_path / "gone")
    )

    assert _mounts(argv)[2:4] == [
        ("--ro-bind", str(venv), str(venv)),
        ("--bind", str(root), str(root)),
    ]
    assert str(tmp_path / "gone") not in argv
