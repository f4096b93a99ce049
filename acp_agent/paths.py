"""Where acp-agent keeps its config, data, state and logs.

One `--home DIR` (or `ACP_AGENT_HOME`) relocates all four under a single
folder, like `CODEX_HOME`; otherwise they are the platform's user folders
for "acp-agent". Nothing is created here: callers create what they write.
Standard library only (a named tuple, not attrs): the bridge (`acp-agent --connect`)
resolves them too, and loads no attrs.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

__all__ = ("APP_NAME", "AgentPaths", "resolve_paths")

APP_NAME = "acp-agent"


class AgentPaths(NamedTuple):
    """The folders acp-agent reads and writes."""

    config_dir: Path
    data_dir: Path
    state_dir: Path
    log_dir: Path

    @property
    def log_file(self) -> Path:
        """The rotating log file."""
        return self.log_dir / f"{APP_NAME}.log"


def resolve_paths(home: Path | None) -> AgentPaths:
    """The folders under `home`, or the platform's user folders when `home` is None."""
    if home is not None:
        home = home.expanduser().absolute()
        return AgentPaths(
            config_dir=home / "config",
            data_dir=home / "data",
            state_dir=home / "state",
            log_dir=home / "logs",
        )
    import platformdirs  # only needed without --home

    return AgentPaths(
        config_dir=platformdirs.user_config_path(APP_NAME),
        data_dir=platformdirs.user_data_path(APP_NAME),
        state_dir=platformdirs.user_state_path(APP_NAME),
        log_dir=platformdirs.user_log_path(APP_NAME),
    )
