"""MCP servers from config files, and the trust rule for the project's.

Two files may declare servers, in the same format:

- the user's config file, `<config_dir>/config.toml` (see `acp_agent.paths`):
  its servers are the person's own and start with every session;
- the project's file, `<workspace>/.acp-agent/config.toml`: anyone who can
  write to the repository wrote it, so its servers stay **disabled** until
  the person enables them in the user config file. An enablement names the
  project (its absolute path), the server and the hash of the declaration
  it approved; when the declaration changes, its hash does too, and the
  server is disabled again until enabled anew. Nothing in the workspace can
  enable anything: an `[mcp]` table or an `enabled` key in the project's
  file is ignored (and reported).

A declaration::

    [mcp_servers.github]                 # the name: [A-Za-z0-9_-] keeps tool names readable
    command = "github-mcp-server"        # stdio: the program (PATH is searched) ...
    args = ["stdio"]                     # ... its arguments
    env = { GITHUB_TOKEN = "..." }       # added to PATH, HOME, USER, SHELL, TERM, LOGNAME
    cwd = "/somewhere"                   # default: the session's working directory
    sandbox = true                       # start it in the command sandbox (default false)
    sandbox_network = false              # ... without the network (default: with it)
    startup_timeout_s = 30               # start, handshake and tool list within this, or failed
    tool_timeout_s = 120                 # abandon a call after this long (default 600)
    enabled = false                      # user file only: keep the declaration, do not start it

    [mcp_servers.docs]
    url = "https://example.com/mcp"      # a URL instead of a command: streamable HTTP ...
    transport = "sse"                    # ... or the older SSE transport when said so
    headers = { Authorization = "Bearer ..." }

An enablement, in the user's file only::

    [[mcp.enabled_project_servers]]
    project = "/home/me/src/app"         # the workspace, absolute
    name = "github"                      # the server's name in that project's file
    hash = "sha256:9f2c..."              # `declaration_hash` of the approved declaration

A disabled project server's status carries the exact entry to paste.
Enabling trusts the declaration, not what it points at: a script the
command runs can still change inside the repository.

`sandbox = true` starts a command server in the command sandbox, as the
sandboxed mode runs commands (`acp_agent.sandbox`): the session's roots
writable, the rest read-only, credentials and the agent's folders hidden
(its environment is the base one plus its `env`, as ever); the network
stays on unless `sandbox_network = false`. Where the sandbox cannot run, the
server does not start (its status says why): it never runs unconfined
instead. A project's file may ask for it (it only narrows what the server can
do; its hash changes, so it is enabled anew).

A file that cannot be read, or a declaration that is not valid, never
stops a session: the problem is reported (`ConfiguredServers.problems`) and
the rest is used.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from acp_agent.mcp._config import (
    DEFAULT_STARTUP_TIMEOUT_S,
    DEFAULT_TOOL_TIMEOUT_S,
    HttpServerConfig,
    McpOrigin,
    McpServerConfig,
    SseServerConfig,
    StdioServerConfig,
    declaration_hash,
)
from acp_agent.values import Value

__all__ = (
    "CONFIG_FILE_NAME",
    "PROJECT_CONFIG_PATH",
    "ConfiguredServers",
    "DisabledServer",
    "enablement_entry",
    "load_configured_servers",
    "parse_server_table",
    "with_editor_servers",
)

logger = logging.getLogger(__name__)

#: The user's config file, inside the config directory.
CONFIG_FILE_NAME: Final = "config.toml"
#: The project's config file, relative to the workspace.
PROJECT_CONFIG_PATH: Final = Path(".acp-agent") / "config.toml"

_SERVER_KEYS: Final = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "transport",
        "headers",
        "startup_timeout_s",
        "tool_timeout_s",
        "enabled",
        "sandbox",
        "sandbox_network",
    }
)
_ENABLEMENT_KEYS: Final = frozenset({"project", "name", "hash"})


@attrs.frozen
class DisabledServer(Value):
    """A declared server that does not start, and why."""

    config: McpServerConfig
    reason: str
    #: For a project server: the user-config entry that would enable it as declared.
    enable_with: str | None = None


@attrs.frozen
class ConfiguredServers(Value):
    """What the config files declare for one workspace."""

    #: Servers that start with the session.
    servers: tuple[McpServerConfig, ...] = ()
    disabled: tuple[DisabledServer, ...] = ()
    #: Unreadable files and invalid declarations, one sentence each.
    problems: tuple[str, ...] = ()


class _Invalid(ValueError):
    pass


def enablement_entry(workspace: Path, config: McpServerConfig) -> str:
    """The `[[mcp.enabled_project_servers]]` entry that enables `config` as declared."""
    return (
        "[[mcp.enabled_project_servers]]\n"
        f"project = {_toml_string(str(workspace))}\n"
        f"name = {_toml_string(config.name)}\n"
        f"hash = {_toml_string(declaration_hash(config))}\n"
    )


def load_configured_servers(config_dir: Path | None, workspace: Path) -> ConfiguredServers:
    """The user's servers and the workspace's, with the project trust rule applied.

    `config_dir` None means no user config file (nothing enabled, no user servers).
    """
    workspace = workspace.expanduser().resolve()
    problems: list[str] = []
    servers: list[McpServerConfig] = []
    disabled: list[DisabledServer] = []
    enabled_hashes: dict[str, set[str]] = {}

    user_file = config_dir / CONFIG_FILE_NAME if config_dir is not None else None
    user_data = _read(user_file, problems) if user_file is not None else None
    if user_data is not None and user_file is not None:
        for config, enabled in _servers_in(user_data, McpOrigin.USER, user_file, problems):
            if enabled is not False:
                servers.append(config)
            else:
                disabled.append(DisabledServer(config, f"disabled in {user_file}"))
        enabled_hashes = _enablements(user_data, workspace, user_file, problems)

    project_file = workspace / PROJECT_CONFIG_PATH
    project_data = _read(project_file, problems)
    if project_data is not None:
        if "mcp" in project_data:
            problems.append(
                f"{project_file}: the [mcp] table is ignored; project servers are enabled "
                "in the user config file only"
            )
        for config, enabled_key in _servers_in(
            project_data, McpOrigin.PROJECT, project_file, problems
        ):
            digest = declaration_hash(config)
            approved = enabled_hashes.get(config.name, set())
            if enabled_key is False:
                # Turning itself off is the one thing a project file may decide.
                disabled.append(DisabledServer(config, f"disabled in {project_file}"))
                continue
            if digest in approved:
                servers.append(config)
                continue
            if approved:
                reason = (
                    f"declared by the project; its declaration changed since it was enabled in "
                    f"{user_file}: enable it again to run the new one"
                )
            else:
                reason = "declared by the project; not enabled in the user config file"
            if enabled_key:
                reason += " (its own `enabled = true` cannot enable it)"
            disabled.append(DisabledServer(config, reason, enablement_entry(workspace, config)))

    return ConfiguredServers(tuple(servers), tuple(disabled), tuple(problems))


def with_editor_servers(
    editor: Sequence[McpServerConfig], configured: ConfiguredServers
) -> ConfiguredServers:
    """A session's servers: the editor's first, then configured ones of other names.

    A name is used once: the editor's server wins over the project's, the
    project's over the user's; the one left out is reported as disabled.
    """
    rank = {McpOrigin.EDITOR: 0, McpOrigin.PROJECT: 1, McpOrigin.USER: 2}
    candidates = sorted(
        [*editor, *configured.servers], key=lambda config: rank[config.origin]
    )  # stable: declaration order within an origin
    chosen: dict[str, McpServerConfig] = {}
    disabled = list(configured.disabled)
    for config in candidates:
        winner = chosen.get(config.name)
        if winner is None:
            chosen[config.name] = config
        elif winner.origin is config.origin:
            disabled.append(
                DisabledServer(config, f"another {winner.origin.value} server is named the same")
            )
        else:
            disabled.append(
                DisabledServer(
                    config, f"the {winner.origin.value}'s server of the same name is used instead"
                )
            )
    return ConfiguredServers(tuple(chosen.values()), tuple(disabled), configured.problems)


def parse_server_table(
    name: str, table: Mapping[str, Any], origin: McpOrigin
) -> tuple[McpServerConfig, bool | None]:
    """One `[mcp_servers.<name>]` table as a config record and its `enabled` key (None: absent).

    Raises `ValueError` with a sentence naming the problem.
    """
    unknown = sorted(set(table) - _SERVER_KEYS)
    if unknown:
        raise _Invalid(f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(_SERVER_KEYS))})")
    enabled = table.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise _Invalid("enabled must be true or false")
    startup = _number(table, "startup_timeout_s", DEFAULT_STARTUP_TIMEOUT_S)
    tool_timeout = _number(table, "tool_timeout_s", DEFAULT_TOOL_TIMEOUT_S)
    common: dict[str, Any] = {
        "name": name,
        "origin": origin,
        "startup_timeout_s": startup,
        "tool_timeout_s": tool_timeout,
    }
    command, url = table.get("command"), table.get("url")
    if (command is None) == (url is None):
        raise _Invalid("give either command (stdio) or url (HTTP), not both")
    if command is not None:
        for key in ("transport", "headers", "url"):
            if key in table:
                raise _Invalid(f"{key} is for url servers, not command servers")
        return (
            StdioServerConfig(
                command=_string(command, "command"),
                args=_strings(table.get("args", []), "args"),
                env=_string_table(table.get("env", {}), "env"),
                cwd=_string(table["cwd"], "cwd") if "cwd" in table else None,
                sandbox=_flag(table, "sandbox", False),
                sandbox_network=_flag(table, "sandbox_network", True),
                **common,
            ),
            enabled,
        )
    for key in ("args", "env", "cwd", "sandbox", "sandbox_network"):
        if key in table:
            raise _Invalid(f"{key} is for command servers, not url servers")
    transport = table.get("transport", "http")
    headers = _string_table(table.get("headers", {}), "headers")
    if transport == "http":
        return HttpServerConfig(url=_string(url, "url"), headers=headers, **common), enabled
    if transport == "sse":
        return SseServerConfig(url=_string(url, "url"), headers=headers, **common), enabled
    raise _Invalid('transport must be "http" or "sse"')


# --- reading ----------------------------------------------------------------------------


def _read(path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except FileNotFoundError:
        return None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        problems.append(f"cannot read {path}: {exc}")
        logger.warning("cannot read %s: %s", path, exc)
        return None


def _servers_in(
    data: Mapping[str, Any], origin: McpOrigin, path: Path, problems: list[str]
) -> list[tuple[McpServerConfig, bool | None]]:
    tables = data.get("mcp_servers", {})
    if not isinstance(tables, dict):
        problems.append(f"{path}: mcp_servers must be a table of [mcp_servers.<name>] tables")
        return []
    found = []
    for name, table in tables.items():
        where = f"{path}: [mcp_servers.{name}]"
        if not isinstance(table, dict):
            problems.append(f"{where} must be a table")
            continue
        try:
            found.append(parse_server_table(name, table, origin))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            logger.warning("%s: %s", where, exc)
    return found


def _enablements(
    data: Mapping[str, Any], workspace: Path, path: Path, problems: list[str]
) -> dict[str, set[str]]:
    """Server name -> approved declaration hashes, for this workspace only."""
    mcp = data.get("mcp", {})
    entries = mcp.get("enabled_project_servers", []) if isinstance(mcp, dict) else None
    if not isinstance(entries, list):
        problems.append(f"{path}: mcp.enabled_project_servers must be an array of tables")
        return {}
    approved: dict[str, set[str]] = {}
    for index, entry in enumerate(entries):
        where = f"{path}: [[mcp.enabled_project_servers]] #{index + 1}"
        if (
            not isinstance(entry, dict)
            or set(entry) != _ENABLEMENT_KEYS
            or not all(isinstance(value, str) for value in entry.values())
        ):
            problems.append(f"{where} needs exactly project, name and hash, all strings")
            continue
        project = Path(entry["project"]).expanduser()
        if not project.is_absolute():
            problems.append(f"{where}: project must be an absolute path")
            continue
        if project.resolve() == workspace:
            approved.setdefault(entry["name"], set()).add(entry["hash"])
    return approved


def _string(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise _Invalid(f"{key} must be a non-empty string")
    return value


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Invalid(f"{key} must be a list of strings")
    return tuple(value)


def _string_table(value: Any, key: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise _Invalid(f"{key} must be a table of strings")
    return tuple(value.items())


def _flag(table: Mapping[str, Any], key: str, default: bool) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise _Invalid(f"{key} must be true or false")
    return value


def _number(table: Mapping[str, Any], key: str, default: float | None) -> Any:
    value = table.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _Invalid(f"{key} must be a positive number of seconds")
    return float(value)


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
