"""How tests start acp-agent: the command line, a throwaway home, the scripts."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

__all__ = (
    "AGENT_HOME",
    "PROTOCOL_AGENT",
    "SCRIPTS",
    "agent_command",
    "agent_env",
    "remove_agent_home",
)

#: Variables of the developer's environment that would change which model the agent uses.
_MODEL_VARIABLES = ("OPENAI_", "ANTHROPIC_", "ACP_AGENT_")

_home = tempfile.TemporaryDirectory(prefix="acp-agent-tests-")
#: Config, data, state and logs of every agent the tests start (never the user's).
AGENT_HOME = Path(_home.name)

#: Script files for the scripted model.
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def agent_command(*extra: str, script: str | None = None) -> list[str]:
    """The real agent as a subprocess: `python -m acp_agent --home <tmp> [--script ...]`."""
    command = [sys.executable, "-m", "acp_agent", "--home", str(AGENT_HOME)]
    if script is not None:
        command += ["--script", str(SCRIPTS / script)]
    return command + list(extra)


def agent_env(**overrides: str) -> dict[str, str]:
    """This environment without model keys, base URLs or ACP_AGENT_* settings, plus `overrides`.

    So an agent under test never reaches a real provider with the developer's key.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(_MODEL_VARIABLES)}
    return {**env, **overrides}


def remove_agent_home() -> None:
    """Delete the throwaway home (at the end of the test session)."""
    _home.cleanup()


#: The protocol-level test agent (see `tests/support/protocol_agent.py`).
PROTOCOL_AGENT = [sys.executable, str(Path(__file__).resolve().parent / "protocol_agent.py")]
