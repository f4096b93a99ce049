"""The language servers sessions would start, per language: is each one's program there?

The servers are the runtime's (`acp_agent.lsp.load_servers`: the built-in ones that
are installed, less those switched off, plus the person's own from `config.toml`).
None is started: finding the program (on PATH, or the Python module a `-m` command
runs) is what most failures come down to, and it costs nothing. A missing server
means fewer diagnostics, never a failed prompt, so no check here gates the exit.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections import defaultdict
from collections.abc import Sequence
from typing import Final

from acp_agent.adapters.doctor._report import Check, DetailValue, Status
from acp_agent.adapters.doctor._setup import DoctorSetup
from acp_agent.adapters.doctor._warnings import collected_warnings
from acp_agent.lsp import BASEDPYRIGHT, RUFF, LspSettings, ServerSpec, load_servers

__all__ = ("check_lsp",)

#: The variable that switches code intelligence off.
_SWITCH: Final = "ACP_AGENT_LSP"
#: What to do about a built-in server that is missing.
_INSTALL_HINTS: Final = {
    RUFF.name: "reinstall acp-agent (ruff is one of its dependencies): .venv/bin/pip install -e .",
    BASEDPYRIGHT.name: "install the types extra: .venv/bin/pip install -e '.[types]'",
}


def check_lsp(setup: DoctorSetup) -> list[Check]:
    """One check per language a configured server reads."""
    settings = LspSettings.from_env(setup.env, config_file=setup.config_file)
    if not settings.enabled:
        return [
            Check(
                "lsp",
                Status.OK,
                f"code intelligence is off ({_SWITCH}=0): no language servers",
                details={"to turn it on": f"unset {_SWITCH}"},
            )
        ]
    with collected_warnings() as warnings:
        servers = load_servers(setup.config_file).servers
    by_language: dict[str, list[ServerSpec]] = defaultdict(list)
    for spec in servers:
        by_language[spec.language_id].append(spec)
    checks = [_language(language, specs, setup) for language, specs in by_language.items()]
    if BASEDPYRIGHT.name not in {spec.name for spec in servers}:
        checks = [_without_basedpyright(check) for check in checks]
    if warnings:
        checks.append(
            Check(
                "lsp:config",
                Status.WARNING,
                f"{len(warnings)} [lsp] entr{'ies' if len(warnings) > 1 else 'y'} ignored: "
                f"{warnings[0]}",
                f"fix [lsp.servers] in {setup.config_file}",
                {"warnings": list(warnings)},
            )
        )
    if not checks:
        checks.append(Check("lsp", Status.OK, "no language servers configured"))
    return checks


def _language(language: str, specs: Sequence[ServerSpec], setup: DoctorSetup) -> Check:
    details: dict[str, DetailValue] = {}
    missing: list[ServerSpec] = []
    for spec in specs:
        found = _program(spec.command)
        if found is None:
            missing.append(spec)
            details[spec.name] = f"not found: {spec.command[0]}"
        else:
            details[spec.name] = f"found: {found}"
    names = ", ".join(spec.name for spec in specs)
    if not missing:
        return Check(f"lsp:{language}", Status.OK, f"{names}: found", details=details)
    hints = [
        _INSTALL_HINTS.get(
            spec.name,
            f"install {spec.command[0]!r} or fix [lsp.servers.{spec.name}] command in "
            f"{setup.config_file}",
        )
        for spec in missing
    ]
    gone = ", ".join(spec.name for spec in missing)
    return Check(f"lsp:{language}", Status.WARNING, f"not found: {gone}", "; ".join(hints), details)


def _without_basedpyright(check: Check) -> Check:
    """Python's check, noting that type errors and navigation need basedpyright."""
    if check.name != f"lsp:{BASEDPYRIGHT.language_id}":
        return check
    installed = importlib.util.find_spec("basedpyright") is not None
    note = (
        "switched off in config.toml"
        if installed
        else "not installed (optional: type errors and navigation; "
        + _INSTALL_HINTS[BASEDPYRIGHT.name]
        + ")"
    )
    details = {**check.details, BASEDPYRIGHT.name: note}
    return Check(check.name, check.status, check.summary, check.fix, details, check.gates_prompt)


def _program(command: Sequence[str]) -> str | None:
    """Where the command's program is, or None; for `<this python> -m module`, the module
    too."""
    program = command[0]
    if os.sep in program:
        path = program if os.path.isfile(program) and os.access(program, os.X_OK) else None
    else:
        path = shutil.which(program)
    if path is None:
        return None
    # Only our own interpreter's modules can be looked up from here.
    ours = os.path.realpath(path) == os.path.realpath(sys.executable)
    if ours and len(command) >= 3 and command[1] == "-m":
        module = command[2]
        if importlib.util.find_spec(module) is None:
            return None
        return f"{path} -m {module}"
    return path
