"""What doctor looks at: the agent's folders, its environment, the workspace, the limits.

The same inputs `acp-agent` serves with (`--home` or `ACP_AGENT_HOME`, `--script`
or `ACP_AGENT_SCRIPT`, `ACP_AGENT_MODEL` and the provider variables, `--store` or
`ACP_AGENT_STORE`), plus the
workspace a session would open (`--cwd`) and how long to wait for a provider or
an MCP server. `secrets()` lists every value that must never be shown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

import attrs

from acp_agent.paths import AgentPaths
from acp_agent.store import StoreLocation, store_location
from acp_agent.values import Value

__all__ = ("DoctorSetup", "is_secret")

#: Environment names whose values are secrets (API keys, tokens, passwords).
_SECRET_NAME: Final = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH|CREDENTIAL", re.I)
#: A secret shorter than this is not looked for in the output (it would match words such
#: as `true`); keys and tokens are far longer.
_SHORTEST_SECRET: Final = 8


def is_secret(name: str, value: str) -> bool:
    """Whether an environment variable named `name` holding `value` is a secret to hide."""
    return _SECRET_NAME.search(name) is not None and len(value) >= _SHORTEST_SECRET


@attrs.frozen
class DoctorSetup(Value):
    """The inputs of one doctor run."""

    paths: AgentPaths
    #: `--home` (or `ACP_AGENT_HOME`) as given; None: the platform's user folders.
    home: Path | None
    #: Where `home` came from: `--home` or `ACP_AGENT_HOME` (None without one).
    home_source: str | None
    env: Mapping[str, str] = attrs.field(repr=False)
    #: The workspace a new session would open (absolute).
    cwd: Path
    #: `--script` (or `ACP_AGENT_SCRIPT`), and where it came from.
    script: Path | None = None
    script_source: str | None = None
    #: `--model`: the model a session would ask for.
    model: str | None = None
    #: How long a provider may take to answer.
    timeout_s: float = 5.0
    #: Caps each MCP server's own `startup_timeout_s` (None: its own).
    mcp_timeout_s: float | None = None
    #: `--store`: the store URL to check (None: `ACP_AGENT_STORE`, the config, the default).
    store_url: str | None = attrs.field(default=None, repr=False)

    @property
    def config_file(self) -> Path:
        """The person's `config.toml`."""
        return self.paths.config_dir / "config.toml"

    def store_location(self) -> StoreLocation:
        """The store the agent would use (`StoreUrlInvalid` when its URL cannot be used)."""
        return store_location(
            flag=self.store_url,
            env=self.env,
            config_file=self.config_file,
            data_dir=self.paths.data_dir,
        )

    def secrets(self) -> list[str]:
        """Values in the environment that look like secrets, longest first."""
        found = {value for name, value in self.env.items() if is_secret(name, value)}
        # A store URL's password, given on the command line or in ACP_AGENT_STORE.
        for url in (self.store_url, self.env.get("ACP_AGENT_STORE")):
            password = _url_password(url)
            if password is not None and len(password) >= _SHORTEST_SECRET:
                found.add(password)
        return sorted(found, key=len, reverse=True)


def _url_password(url: str | None) -> str | None:
    if not url or "@" not in url:
        return None
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return None if password is None else unquote(password)
