"""The availability probe: real bwrap here, a PATH without it, a bwrap refused its user
namespace (a real run), another platform; and its answer kept once found."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_agent.sandbox import forget_probes, probe_sandbox, why_bwrap_failed
from acp_agent.sandbox._probe import userns_fix
from tests.sandbox.conftest import needs_bwrap


@pytest.fixture(autouse=True)
def fresh_probes() -> Iterator[None]:
    forget_probes()
    yield
    forget_probes()


def test_bwrap_here_confines_commands() -> None:
    needs_bwrap()
    support = probe_sandbox()

    assert support.available
    assert support.bwrap == shutil.which("bwrap")
    assert (support.reason, support.fix) == (None, None)


def test_without_bwrap_on_path_it_says_it_is_not_installed_and_how_to_install_it(
    tmp_path: Path,
) -> None:
    support = probe_sandbox({"PATH": str(tmp_path)})

    assert not support.available
    assert support.bwrap is None
    assert support.reason == "not installed: no bwrap on PATH"
    assert support.fix is not None
    assert "apt install bubblewrap" in support.fix


def test_on_another_platform_it_says_so() -> None:
    support = probe_sandbox(platform="darwin")

    assert not support.available
    assert support.reason is not None
    assert support.reason.startswith("not Linux")


def test_the_answer_is_kept_so_bwrap_runs_once(tmp_path: Path) -> None:
    needs_bwrap()
    real = shutil.which("bwrap")
    counter = tmp_path / "runs"
    wrapper = tmp_path / "bin" / "bwrap"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho run >> {counter}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    env = {"PATH": str(wrapper.parent)}

    first, second = probe_sandbox(env), probe_sandbox(env)
    forget_probes()
    third = probe_sandbox(env)

    assert first == second == third
    assert first.available
    assert first.bwrap == str(wrapper)
    assert counter.read_text() == "run\nrun\n"


def test_a_failing_bwrap_is_unavailable_saying_what_it_said(tmp_path: Path) -> None:
    # A stand-in printing what bwrap says in a container that forbids mounting /proc.
    wrapper = tmp_path / "bwrap"
    wrapper.write_text('#!/bin/sh\necho "bwrap: Can\'t mount proc on /newroot/proc" >&2\nexit 1\n')
    wrapper.chmod(0o755)

    support = probe_sandbox({"PATH": str(tmp_path)})

    assert not support.available
    assert support.reason == "bwrap cannot run here: Can't mount proc on /newroot/proc"
    assert support.fix is not None


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another user needs root")
def test_user_namespaces_refused_are_named_with_how_to_allow_them() -> None:
    # A real refusal: as nobody, inside a user namespace where nobody is not mapped,
    # bwrap may not make the namespace it needs (as where the kernel forbids them).
    needs_bwrap()
    if shutil.which("setpriv") is None or shutil.which("unshare") is None:
        pytest.skip("setpriv and unshare (util-linux) are needed to drop privileges")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    done = subprocess.run(
        [*as_nobody, "unshare", "--user", "bwrap", "--ro-bind", "/", "/", "--unshare-net", "true"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode != 0, done.stderr

    support = why_bwrap_failed("/usr/bin/bwrap", done.stderr)

    assert support.reason is not None
    assert support.reason.startswith("user namespaces disabled: No permissions to create new ")
    assert support.fix == userns_fix()


@pytest.mark.parametrize(
    ("setting", "value", "fix"),
    [
        ("kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone=1"),
        ("user/max_user_namespaces", "0", "user.max_user_namespaces=15000"),
        ("kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor"),
    ],
)
def test_the_fix_names_the_kernel_setting_that_forbids_them(
    tmp_path: Path, setting: str, value: str, fix: str
) -> None:
    (tmp_path / setting).parent.mkdir(parents=True)
    (tmp_path / setting).write_text(f"{value}\n")

    assert fix in userns_fix(tmp_path)
    assert "setuid" in userns_fix(tmp_path / "none")
