"""The denial classifier on what real commands print when real bubblewrap stops them, and
on ordinary failures it must leave alone."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from acp_agent.sandbox import DenialKind, describe_denials, find_denials
from tests.sandbox.conftest import Play

WRITE, HIDDEN, NETWORK = DenialKind.WRITE, DenialKind.HIDDEN, DenialKind.NETWORK


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def run(play: Play, command: str, *, network: bool = False) -> tuple[int, str]:
    """`bash -c command` sandboxed in the workspace: its exit code and merged output."""
    argv = play.sandbox(network=network).wrap(["bash", "-c", command], cwd=play.workspace)
    done = subprocess.run(
        argv,
        cwd=play.workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=30,
        check=False,
    )
    return done.returncode, done.stdout


#: (command, what is found): `{outside}`, `{home}`, `{store}`, `{port}` filled in per run.
DENIED = {
    "touch": ("touch {outside}/x", [(WRITE, "{outside}/x")]),
    "redirect": ("echo hi > {outside}/x", [(WRITE, "{outside}/x")]),
    # The shell tool runs bash by its path, which then starts every message.
    "redirect in a shell named by its path": (
        "\"$(command -v bash)\" -c 'echo hi > {outside}/x'",
        [(WRITE, "{outside}/x")],
    ),
    "mkdir": ("mkdir {outside}/d", [(WRITE, "{outside}/d")]),
    "python write": (
        'python3 -c \'open("{outside}/x", "w")\'',
        [(WRITE, "{outside}/x")],
    ),
    "hidden file": ("cat {home}/.netrc", [(HIDDEN, "{home}/.netrc")]),
    "file in a hidden folder": (
        "cat {home}/.ssh/id_ed25519",
        [(HIDDEN, "{home}/.ssh/id_ed25519")],
    ),
    "hidden folder listed": ("ls {home}/.ssh", [(HIDDEN, "{home}/.ssh")]),
    "python read of the store": (
        "python3 -c 'open(\"{store}\").read()'",
        [(HIDDEN, "{store}")],
    ),
    "write into a hidden folder": ("echo x > {home}/.ssh/new", [(HIDDEN, "{home}/.ssh/new")]),
    "git hook": ("echo x > .git/hooks/pre-commit", [(WRITE, ".git/hooks/pre-commit")]),
    "git config": ("git config core.hooksPath /x", [(WRITE, ".git/config")]),
    "loopback connection": (
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'",
        [(NETWORK, None)],
    ),
    "name lookup": (
        "python3 -c 'import socket; socket.getaddrinfo(\"example.com\", 80)'",
        [(NETWORK, None)],
    ),
    "several, each once": (
        "touch {outside}/a; touch {outside}/a; cat {home}/.netrc; touch {outside}/b; "
        "touch {outside}/c",
        [(WRITE, "{outside}/a"), (HIDDEN, "{home}/.netrc"), (WRITE, "{outside}/b")],
    ),
}


def _filled(text: str, play: Play, port: int) -> str:
    return text.format(
        outside=play.outside,
        home=play.home,
        store=play.agent.data_dir / "sessions.sqlite3",
        port=port,
    )


@pytest.mark.parametrize("case", list(DENIED))
def test_a_denial_is_recognised_with_the_path_it_names(play: Play, case: str) -> None:
    port = _closed_port()
    command, expected = DENIED[case]
    subprocess.run(["git", "init", "-q", str(play.workspace)], check=True)  # for the git cases

    code, output = run(play, _filled(command, play, port))
    found = find_denials(output, exit_code=code, policy=play.policy(), cwd=play.workspace)

    assert code != 0
    assert [(d.kind, d.path) for d in found] == [
        (kind, None if path is None else _filled(path, play, port)) for kind, path in expected
    ], output


#: Failures, or messages, that are not the sandbox's doing.
NOT_DENIED = {
    "a plain failure": ("echo no; exit 3", False),
    "a missing file outside any hidden place": ("cat /nonexistent/file", False),
    "a denial the command got past": ("touch {outside}/x || true", False),
    "a refused connection with the network on": (
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'",
        True,
    ),
    "a permission refused for another reason": (
        "touch script && chmod -x script && ./script",
        False,
    ),
}


@pytest.mark.parametrize("case", list(NOT_DENIED))
def test_an_ordinary_failure_is_no_denial(play: Play, case: str) -> None:
    command, network = NOT_DENIED[case]

    code, output = run(play, _filled(command, play, _closed_port()), network=network)
    found = find_denials(
        output, exit_code=code, policy=play.policy(network=network), cwd=play.workspace
    )

    assert found == (), output


def test_the_description_says_what_was_kept_in(play: Play) -> None:
    code, output = run(play, f"cat {play.home}/.netrc; touch {play.outside}/x")
    found = find_denials(output, exit_code=code, policy=play.policy())

    assert describe_denials(found) == (
        f"the sandbox kept it in: {play.home}/.netrc is hidden from sandboxed commands; "
        f"{play.outside}/x is read-only in the sandbox"
    )
    assert describe_denials(()) is None


def test_a_hidden_place_named_through_a_link_is_recognised(play: Play) -> None:
    link = play.workspace / "keys"
    os.symlink(play.home / ".ssh", link)

    code, output = run(play, "cat keys/id_ed25519")
    found = find_denials(output, exit_code=code, policy=play.policy(), cwd=play.workspace)

    assert [(d.kind, d.path) for d in found] == [(HIDDEN, "keys/id_ed25519")], output
