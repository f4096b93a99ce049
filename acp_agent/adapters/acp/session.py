"""The little a session needs until the core owns sessions: identity, root, turns.

A later issue moves sessions into `acp_agent.core`; until then the ACP
adapter keeps this state itself, and keeps it small.
"""

from __future__ import annotations

import uuid

import anyio
import attrs

from protocol import types

__all__ = ("AcpSession", "new_session_id")


def new_session_id() -> str:
    """A fresh, unique session id."""
    return f"sess_{uuid.uuid4().hex}"


@attrs.define(eq=False)
class AcpSession:
    """One ACP session: where it works and the turns it runs, one at a time."""

    session_id: str
    #: The session's root, absolute, whatever the process's own cwd is.
    cwd: str
    #: Stored for when MCP support lands; not connected yet.
    mcp_servers: list[types.McpServer]
    #: How many turns this session has started; numbers the model's replies.
    #: A prompt cancelled while waiting for its turn never starts one.
    turns_started: int = 0
    #: Turns run one at a time; later prompts wait their turn, in order.
    turn_lock: anyio.Lock = attrs.field(factory=anyio.Lock)
    #: Scopes of prompts running or waiting; `session/cancel` cancels them all.
    turn_scopes: set[anyio.CancelScope] = attrs.field(factory=set)

    def cancel_turns(self) -> int:
        """Cancel every prompt running or waiting now; returns how many."""
        for scope in self.turn_scopes:
            scope.cancel()
        return len(self.turn_scopes)
