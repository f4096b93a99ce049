"""Shared test helpers: the ACP test client, the schema checker, agent processes."""

from tests.support.agent import (
    AGENT_HOME,
    PROTOCOL_AGENT,
    SCRIPTS,
    agent_command,
    agent_env,
    remove_agent_home,
)
from tests.support.client import UPDATE_TIMEOUT_S, AcpTestClient
from tests.support.schema_validation import WireValidator

__all__ = (
    "AGENT_HOME",
    "PROTOCOL_AGENT",
    "SCRIPTS",
    "UPDATE_TIMEOUT_S",
    "AcpTestClient",
    "WireValidator",
    "agent_command",
    "agent_env",
    "remove_agent_home",
)
