"""What a v2 client offers the tools: no editor files or terminals (v2 removed them), but
a display for the output of the commands the agent runs itself."""

from __future__ import annotations

from acp_agent.toolkit import NoClient

__all__ = ("DisplayTerminals",)


class DisplayTerminals(NoClient):
    """Nothing of the editor's; a locally run command's output is streamed (to v2's
    agent-owned display terminals, `_wire`)."""

    streams_terminal_output = True
