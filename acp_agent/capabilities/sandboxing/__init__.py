"""The session's command sandbox, as the permission modes use it.

`SessionSandbox` (a session service) knows whether the sandbox runs here
(probed once), the session's policy and private temporary folder, what the
sandbox last kept each command in (for the question of leaving it), and
whether the person was told it cannot run; it hands a confined call its
`CallSandbox` and an MCP server started in the sandbox its `Sandbox`.
"""

from __future__ import annotations

from acp_agent.capabilities.sandboxing._session_sandbox import CallSandbox, SessionSandbox

__all__ = ("CallSandbox", "SessionSandbox")
