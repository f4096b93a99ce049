"""The sandbox: whether bubblewrap can confine commands here, and what it would leave open.

Runs the same probe the agent does (`probe_sandbox`: bwrap on PATH, run once the
way a command runs). Never a failure: without it, commands still run, asked
about instead of sandboxed (the fix says so).
"""

from __future__ import annotations

import subprocess

from acp_agent.adapters.doctor._report import Check, DetailValue, Status
from acp_agent.adapters.doctor._setup import DoctorSetup
from acp_agent.sandbox import load_sandbox_settings, probe_sandbox, sandbox_policy

__all__ = ("check_sandbox",)

#: Where the sandbox is described.
_DOCS = "docs/tools.md#the-command-sandbox"
#: How long `bwrap --version` may take.
_VERSION_TIMEOUT_S = 5.0


def check_sandbox(setup: DoctorSetup) -> Check:
    """Whether commands can run sandboxed; the writable and hidden places that exist."""
    support = probe_sandbox(setup.env)
    settings = load_sandbox_settings(setup.config_file)
    policy = sandbox_policy(agent_paths=setup.paths, settings=settings, env=setup.env)
    details: dict[str, DetailValue] = {
        "writable besides the roots": [str(p) for p in policy.writable if p.exists()],
        "hidden": [str(p) for p in policy.hidden if p.exists()],
    }
    if settings.problems:
        details["config problems"] = list(settings.problems)
    if not support.available:
        if support.bwrap is not None:
            details["bwrap"] = support.bwrap
        meanwhile = "until then the sandboxed mode (the default) asks before every command"
        fix = (
            f"{support.fix}; {meanwhile} ({_DOCS})" if support.fix else f"{meanwhile}: see {_DOCS}"
        )
        return Check(
            "sandbox",
            Status.WARNING,
            f"commands cannot run sandboxed: {support.reason}",
            fix,
            details,
        )
    assert support.bwrap is not None
    summary = f"{_version(support.bwrap)} can confine commands"
    if settings.problems:
        return Check(
            "sandbox",
            Status.WARNING,
            f"{summary}; [sandbox] in config.toml has entries left out",
            "fix them in config.toml (details: config problems)",
            details,
        )
    return Check("sandbox", Status.OK, summary, details=details)


def _version(bwrap: str) -> str:
    """`bubblewrap 0.8.0`, or `bwrap at PATH` when it does not say."""
    try:
        done = subprocess.run(
            [bwrap, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_VERSION_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return f"bwrap at {bwrap}"
    said = done.stdout.strip()
    return f"{said} at {bwrap}" if done.returncode == 0 and said else f"bwrap at {bwrap}"
