"""The ACP adapter: the only place that knows both the wire (`protocol`) and the agent.

`AcpAgent` answers the baseline agent methods on an `AgentConnection`.
"""

from acp_agent.adapters.acp.agent import AcpAgent

__all__ = ("AcpAgent",)
