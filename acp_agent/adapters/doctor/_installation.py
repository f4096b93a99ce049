"""The installation: which acp-agent runs, where it keeps things, and its config file."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path

import acp_agent
from acp_agent.adapters.doctor._report import Check, DetailValue, Status
from acp_agent.adapters.doctor._setup import DoctorSetup
from acp_agent.models import ConfigFileInvalid, load_models_config

__all__ = ("check_config_file", "check_paths", "check_version")


def check_version() -> Check:
    """The version the package metadata names, and the interpreter it runs on."""
    python = f"Python {sys.version.split()[0]}"
    details: dict[str, DetailValue] = {"python": sys.executable}
    where = Path(acp_agent.__file__).parent
    try:
        installed = importlib.metadata.version(acp_agent.DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return Check(
            "version",
            Status.WARNING,
            f"acp-agent {acp_agent.__version__} ({python}), not installed as a package",
            "install it: .venv/bin/pip install -e . in the clone",
            details,
        )
    if installed != acp_agent.__version__:
        return Check(
            "version",
            Status.WARNING,
            f"the installed metadata says {installed}, the code is {acp_agent.__version__}",
            "reinstall: .venv/bin/pip install -e . in the clone",
            details,
        )
    return Check(
        "version", Status.OK, f"acp-agent {installed} ({python}) from {where}", details=details
    )


def check_paths(setup: DoctorSetup) -> Check:
    """The config, data, state and log folders, and whether each is usable."""
    paths = setup.paths
    folders = {
        "config": paths.config_dir,
        "data": paths.data_dir,
        "state": paths.state_dir,
        "logs": paths.log_dir,
    }
    details: dict[str, DetailValue] = {
        name: f"{path}{_absent(path)}" for name, path in folders.items()
    }
    details["log file"] = f"{paths.log_file}{_absent(paths.log_file)}"
    if setup.home is not None:
        summary = f"all under {paths.config_dir.parent} ({setup.home_source})"
    else:
        summary = "the platform's user folders (no --home or ACP_AGENT_HOME)"
    not_folders = [f"{name} ({path})" for name, path in folders.items() if _not_a_folder(path)]
    if not_folders:
        return Check(
            "paths",
            Status.WARNING,
            f"not a folder: {', '.join(not_folders)}",
            "move the file away: acp-agent keeps a folder there",
            details,
        )
    if paths.log_dir.is_dir() and not os.access(paths.log_dir, os.W_OK | os.X_OK):
        return Check(
            "paths",
            Status.WARNING,
            f"the log folder {paths.log_dir} cannot be written: logs go to stderr only",
            f"give your user write access to {paths.log_dir}",
            details,
        )
    return Check("paths", Status.OK, summary, details=details)


def check_config_file(setup: DoctorSetup) -> Check:
    """The person's `config.toml`: absent, or readable with providers the agent can use.

    A file the models cannot use gates a prompt (unless a script plays the model): the
    agent still starts, and every configured model answers with the file's error.
    """
    path = setup.config_file
    gates = setup.script is None or setup.model is not None
    if not path.exists():
        return Check(
            "config",
            Status.OK,
            f"no {path.name} at {path}: the built-in providers only",
        )
    try:
        config = load_models_config(path, setup.env)
    except ConfigFileInvalid as exc:
        return Check(
            "config",
            Status.PROBLEM,
            f"cannot be used: {exc}",
            "fix the file (its format: docs/configuration.md, Models); until then no configured "
            "model answers",
            gates_prompt=gates,
        )
    details: dict[str, DetailValue] = {"providers": sorted(config.providers)}
    if config.default_model is not None:
        details["default_model"] = config.default_model
    return Check("config", Status.OK, f"{path} is readable", details=details, gates_prompt=gates)


def _absent(path: Path) -> str:
    return "" if path.exists() else " (absent; created on first use)"


def _not_a_folder(path: Path) -> bool:
    return path.exists() and not path.is_dir()
