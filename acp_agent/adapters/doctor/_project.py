"""The workspace's own files, and which of them act without the person's say-so.

What a workspace can bring, and the trust each needs (see docs/):

- `AGENTS.md` files: rules for the model, read at every turn; text only, they
  grant nothing, so they need no enabling;
- `.acp-agent/commands/*.md`: prompt templates, only text the person sends;
- `.acp-agent/config.toml`: MCP servers, which run programs, so each stays
  disabled until the person enables that exact declaration in their own
  `config.toml` (`acp_agent.mcp`); anything else in that file is ignored
  (models, providers and language servers come from the person's file only);
- remembered permission rules ("always allow ...") live in the store, per
  workspace.

The check is a warning when the project declares servers that are not enabled,
or settings that are ignored; it never gates the exit status.
"""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path
from typing import Final

from acp_agent.adapters.doctor._report import Check, DetailValue, Status
from acp_agent.adapters.doctor._setup import DoctorSetup
from acp_agent.adapters.doctor._store import reading_store
from acp_agent.adapters.doctor._warnings import collected_warnings
from acp_agent.capabilities.context import scan_user_rules, scan_workspace_rules
from acp_agent.capabilities.session import load_templates
from acp_agent.core import StoreError
from acp_agent.mcp import PROJECT_CONFIG_PATH, ConfiguredServers, McpOrigin
from acp_agent.store import StoreUrlInvalid, inspect_postgres, schema_version

__all__ = ("NAME", "check_project")

NAME: Final = "project"
#: The only table of the project's config file that is read.
_READ_TABLE: Final = "mcp_servers"
#: The schema version that added permission rules.
_RULES_SCHEMA: Final = 2


def check_project(setup: DoctorSetup, configured: ConfiguredServers) -> Check:
    """The project check for `setup.cwd`, with `configured`, the MCP servers it gets."""
    cwd = setup.cwd
    details: dict[str, DetailValue] = {}
    with collected_warnings() as warnings:
        rules = [rule.rule_id for rule in scan_workspace_rules(cwd)]
        user_rules = [rule.rule_id for rule in scan_user_rules(setup.paths.config_dir)]
        templates = load_templates(cwd, setup.paths.config_dir)
    if rules:
        details["AGENTS.md"] = rules
    if user_rules:
        details["your rules"] = user_rules
    workspace_templates = [f"/{t.spec.name}" for t in templates if t.origin == "workspace"]
    if workspace_templates:
        details["commands"] = workspace_templates
    found = [f"{len(rules)} AGENTS.md" if rules else "no AGENTS.md"]
    if workspace_templates:
        found.append(f"{len(workspace_templates)} command template(s)")

    project_file = cwd / PROJECT_CONFIG_PATH
    enabled = [c.name for c in configured.servers if c.origin is McpOrigin.PROJECT]
    waiting = [
        entry.config.name
        for entry in configured.disabled
        if entry.config.origin is McpOrigin.PROJECT and entry.enable_with is not None
    ]
    ignored = _ignored_tables(project_file)
    if project_file.exists():
        details["project config"] = str(project_file)
        if enabled:
            details["enabled MCP servers"] = enabled
        if waiting:
            details["not enabled"] = waiting
        if ignored:
            details["ignored"] = [f"{name} (set it in {setup.config_file})" for name in ignored]
        found.append(f"{len(enabled) + len(waiting)} project MCP server(s)")

    rule_count = _permission_rules(setup)
    if rule_count:
        details["remembered permissions"] = f"{rule_count} (list or revoke them with /permissions)"
    if warnings:
        details["warnings"] = list(warnings)

    notes = [f"{cwd}: {', '.join(found)}"]
    fixes = []
    if waiting:
        notes.append(f"not enabled: {', '.join(waiting)}")
        fixes.append(
            f"enable the servers you trust in {setup.config_file} (the entry: mcp:{waiting[0]})"
        )
    if ignored:
        notes.append(f"ignored in {PROJECT_CONFIG_PATH}: {', '.join(ignored)}")
        fixes.append(f"set {', '.join(ignored)} in {setup.config_file} instead")
    status = Status.WARNING if waiting or ignored or warnings else Status.OK
    return Check(NAME, status, "; ".join(notes), "; ".join(fixes) or None, details)


def _ignored_tables(project_file: Path) -> list[str]:
    """The project file's top-level keys the runtime does not read (unreadable: none)."""
    try:
        with project_file.open("rb") as file:
            data = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError):
        return []
    return sorted(key for key in data if key != _READ_TABLE)


def _permission_rules(setup: DoctorSetup) -> int:
    """How many permission rules the person remembered for this workspace (0 if unknown)."""
    workspace = str(setup.cwd.resolve())
    try:
        location = setup.store_location()
    except StoreUrlInvalid:
        return 0  # the store check says why
    if location.kind == "postgresql":
        try:
            found = inspect_postgres(location.target, workspace=workspace, timeout_s=2.0)
        except StoreError:
            return 0  # the store check says why
        return found.workspace_rules or 0
    path = location.path
    if not path.is_file():
        return 0
    try:
        with reading_store(path) as connection:
            if schema_version(connection) < _RULES_SCHEMA:
                return 0
            row = connection.execute(
                "SELECT count(*) FROM permission_rules WHERE workspace = ? AND revoked_at IS NULL",
                (workspace,),
            ).fetchone()
    except (sqlite3.Error, OSError):
        return 0  # the store check says why
    return int(row[0])
