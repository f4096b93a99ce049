"""Language servers the person configures in their own `config.toml`.

Only the person's file is read (the config folder's `config.toml`), never one in a
workspace: a server that runs project code when it starts (rust-analyzer's build
scripts and proc macros, tsserver's plugins) must be the person's choice, not a
cloned repository's. The built-in servers can be switched off there too.

    [lsp]
    settle_s = 2.0                      # how long an edit's result waits, at most

    [lsp.servers.rust-analyzer]
    command = ["rust-analyzer"]
    extensions = [".rs"]
    language = "rust"
    navigates = true                    # it answers definition, references, hover
    settings = { "rust-analyzer" = { checkOnSave = false } }

    [lsp.servers.basedpyright]
    enabled = false                     # a built-in one, off

A malformed entry is logged and left out; the agent still starts.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from acp_agent.lsp._servers import ServerSpec, default_servers

__all__ = ("ConfiguredServers", "load_servers")

logger = logging.getLogger(__name__)


class ConfiguredServers:
    """The servers a session may start, and the settle time, from `config.toml`."""

    def __init__(self, servers: Sequence[ServerSpec], settle_s: float | None) -> None:
        self.servers = tuple(servers)
        self.settle_s = settle_s


def load_servers(config_file: Path | None) -> ConfiguredServers:
    """The built-in servers, less those switched off, plus the person's own."""
    table = _lsp_table(config_file)
    configured = table.get("servers", {})
    if not isinstance(configured, Mapping):
        logger.warning("config.toml: [lsp.servers] must be a table; ignored")
        configured = {}
    servers: dict[str, ServerSpec] = {spec.name: spec for spec in default_servers()}
    for name, entry in configured.items():
        if not isinstance(entry, Mapping):
            logger.warning("config.toml: [lsp.servers.%s] must be a table; ignored", name)
            continue
        if entry.get("enabled", True) is False:
            servers.pop(name, None)
            continue
        if "command" not in entry and name in servers:
            continue  # a built-in one, left as it is
        try:
            servers[name] = _server(name, entry)
        except (TypeError, ValueError) as exc:
            logger.warning("config.toml: [lsp.servers.%s] is ignored: %s", name, exc)
    settle = table.get("settle_s")
    settle_s = float(settle) if isinstance(settle, int | float) and settle >= 0 else None
    return ConfiguredServers(list(servers.values()), settle_s)


def _lsp_table(config_file: Path | None) -> Mapping[str, Any]:
    if config_file is None or not config_file.is_file():
        return {}
    try:
        document = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        logger.warning("%s could not be read for [lsp]: %s", config_file, exc)
        return {}
    table = document.get("lsp", {})
    return table if isinstance(table, Mapping) else {}


def _server(name: str, entry: Mapping[str, Any]) -> ServerSpec:
    command = entry.get("command")
    if isinstance(command, str):
        command = [command]
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise ValueError("`command` must be a program, or a list of it and its arguments")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError("`args` must be a list of strings")
    extensions = entry.get("extensions")
    if not isinstance(extensions, list) or not extensions:
        raise ValueError('`extensions` must list the file name endings it reads, e.g. [".rs"]')
    suffixes = tuple(e if e.startswith(".") else f".{e}" for e in extensions if isinstance(e, str))
    settings = entry.get("settings", {})
    options = entry.get("initialization_options", {})
    if not isinstance(settings, Mapping) or not isinstance(options, Mapping):
        raise ValueError("`settings` and `initialization_options` must be tables")
    return ServerSpec(
        name=name,
        command=(*command, *args),
        suffixes=suffixes,
        language_id=str(entry.get("language", name)),
        options=dict(options),
        settings=dict(settings),
        navigates=bool(entry.get("navigates", False)),
    )
