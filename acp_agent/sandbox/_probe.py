"""Whether commands can run sandboxed here: bwrap found and able to run, or why not.

The probe runs bwrap once the way a command runs (`bwrap_argv` with `true`,
a hidden folder and file, the network off), so what it promises a command
gets; the answer is kept per bwrap program for the life of the process (a
few milliseconds once, nothing after). Where it cannot, `reason` says why in a
line and `fix` how to enable it; `doctor` shows both, and the agent falls back
to asking before every command. The first probe of a program blocks while bwrap
runs: from async code, call it in a worker thread (`anyio.to_thread.run_sync`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs

from acp_agent.sandbox._argv import bwrap_argv
from acp_agent.sandbox._policy import SandboxPolicy
from acp_agent.values import Value

__all__ = (
    "PROBE_TIMEOUT_S",
    "SandboxSupport",
    "SandboxUnavailable",
    "forget_probes",
    "probe_sandbox",
    "userns_fix",
    "why_bwrap_failed",
)

#: How long the probe's `true` may take before bwrap counts as unable to run.
PROBE_TIMEOUT_S: Final = 10.0

_INSTALL: Final = (
    "install bubblewrap: apt install bubblewrap (Debian, Ubuntu), dnf install bubblewrap "
    "(Fedora), pacman -S bubblewrap (Arch)"
)
#: What bwrap says when it may not make the user namespace it needs.
_USERNS_REFUSALS: Final = (
    "no permissions to create new namespace",
    "creating new namespace failed",
    "setting up uid map",
    "user namespace",
    "unprivileged",
)
#: The probe's policy: a hidden folder and file that exist on every Linux, no network.
_PROBE_POLICY: Final = SandboxPolicy(hidden=(Path("/usr/share"), Path("/etc/passwd")))

_probed: dict[str, SandboxSupport] = {}


@attrs.frozen
class SandboxSupport(Value):
    """The probe's answer: `bwrap` (its path) when commands can run sandboxed, else why not."""

    #: The bwrap program found on PATH (None: none).
    bwrap: str | None
    #: Why commands cannot run sandboxed (None: they can).
    reason: str | None = None
    #: How to make them able to (None when it works, or nothing can be done here).
    fix: str | None = None

    @property
    def available(self) -> bool:
        return self.reason is None


class SandboxUnavailable(Exception):
    """Something must run sandboxed, and commands cannot run sandboxed here (the message
    says why; `support` has how to enable it)."""

    def __init__(self, support: SandboxSupport) -> None:
        super().__init__(f"commands cannot run sandboxed here: {support.reason}")
        self.support = support


def probe_sandbox(
    env: Mapping[str, str] | None = None, *, platform: str | None = None
) -> SandboxSupport:
    """Whether bwrap, found on `env`'s PATH (default: this process's), confines commands here.

    Kept per bwrap program: only the first call for one runs it. `platform` (default
    `sys.platform`) is for tests.
    """
    if (platform or sys.platform) != "linux":
        return SandboxSupport(None, "not Linux: the sandbox is bubblewrap's, which runs on Linux")
    search = os.pathsep.join(os.get_exec_path(env))
    bwrap = shutil.which("bwrap", path=search)
    if bwrap is None:
        return SandboxSupport(None, "not installed: no bwrap on PATH", _INSTALL)
    known = _probed.get(bwrap)
    if known is None:
        known = _probed[bwrap] = _run_probe(bwrap)
    return known


def forget_probes() -> None:
    """Drop every kept answer: the next `probe_sandbox` runs bwrap again (tests)."""
    _probed.clear()


def _run_probe(bwrap: str) -> SandboxSupport:
    argv = bwrap_argv(["true"], roots=(), cwd=Path("/"), policy=_PROBE_POLICY, bwrap=bwrap)
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return SandboxSupport(
            bwrap, f"bwrap did not finish a test run within {PROBE_TIMEOUT_S:g} s"
        )
    except OSError as exc:
        return SandboxSupport(bwrap, f"bwrap cannot be started: {exc.strerror or exc}")
    if done.returncode == 0:
        return SandboxSupport(bwrap)
    return why_bwrap_failed(bwrap, done.stderr.decode("utf-8", "replace"))


def why_bwrap_failed(bwrap: str, stderr: str) -> SandboxSupport:
    """The answer for a bwrap that ran and failed, saying `stderr`'s first line."""
    said = next((line.strip() for line in stderr.splitlines() if line.strip()), "no message")
    said = said.removeprefix("bwrap: ")
    if any(refusal in said.lower() for refusal in _USERNS_REFUSALS):
        return SandboxSupport(bwrap, f"user namespaces disabled: {said}", userns_fix())
    return SandboxSupport(
        bwrap,
        f"bwrap cannot run here: {said}",
        "bwrap needs to make namespaces and mount /proc: in a container, run it with them "
        "allowed (Docker: --security-opt seccomp=unconfined --security-opt "
        "apparmor=unconfined); elsewhere, see the message",
    )


def userns_fix(sysctl_dir: Path = Path("/proc/sys")) -> str:
    """How to allow unprivileged user namespaces, from the kernel settings that forbid them."""

    def setting(name: str) -> str | None:
        try:
            return (sysctl_dir / name.replace(".", "/")).read_text().strip()
        except OSError:
            return None

    if setting("kernel.unprivileged_userns_clone") == "0":
        return "allow them: sudo sysctl -w kernel.unprivileged_userns_clone=1"
    if setting("user.max_user_namespaces") == "0":
        return "allow them: sudo sysctl -w user.max_user_namespaces=15000"
    if setting("kernel.apparmor_restrict_unprivileged_userns") == "1":
        return (
            "AppArmor restricts them (Ubuntu 23.10 and later): add an AppArmor profile that "
            "allows userns for bwrap, or sudo sysctl -w "
            "kernel.apparmor_restrict_unprivileged_userns=0"
        )
    return (
        "allow unprivileged user namespaces (sudo sysctl -w kernel.unprivileged_userns_clone=1 "
        "on older Debian and Ubuntu; in a container, run it with namespaces allowed), or "
        "make bwrap setuid root (sudo chmod u+s $(command -v bwrap))"
    )
