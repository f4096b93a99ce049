"""Shared test helpers: the ACP test clients, the agent launcher, the schema checker."""

from tests.support.agent import (
    AGENT_HOME,
    PROTOCOL_AGENT,
    SCRIPTS,
    agent_command,
    agent_env,
    connected,
    default_mode_env,
    line_of_request,
    openai_env,
    remove_agent_home,
    running_agent,
    write_script,
)
from tests.support.client import UPDATE_TIMEOUT_S, AcpTestClient
from tests.support.editor_client import EditorClient
from tests.support.schema_validation import WireValidator

__all__ = (
    "AGENT_HOME",
    "PROTOCOL_AGENT",
    "SCRIPTS",
    "UPDATE_TIMEOUT_S",
    "AcpTestClient",
    "EditorClient",
    "WireValidator",
    "agent_command",
    "agent_env",
    "connected",
    "default_mode_env",
    "line_of_request",
    "openai_env",
    "remove_agent_home",
    "running_agent",
    "write_script",
)
