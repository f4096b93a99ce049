"""The ACP adapter: the only place that knows both the wire (`protocol`) and the agent.

`AcpAgent` answers the agent methods on an `AgentConnection`; `RuntimeHost`
opens the runtime on first use and closes it at exit. Its modules are
private: what one session is to the editor (`_session`, `_stream`,
`_prompt_turn`), how events become updates (`_updates`), the editor's side
as the tools see it (`_client_bridge`), wire errors (`_wire_errors`).
"""

from typing import TYPE_CHECKING

from acp_agent.adapters.acp._agent import AGENT_NAME, AGENT_TITLE, AcpAgent
from acp_agent.adapters.acp._host import RuntimeHost, RuntimeUnavailable
from acp_agent.adapters.acp._listing import PAGE_SIZE
from acp_agent.lazy_face import lazy_face as _lazy_face

if TYPE_CHECKING:
    from acp_agent.adapters.acp._prompt_content import MAX_ATTACHMENT_CHARS

__all__ = (
    "AGENT_NAME",
    "AGENT_TITLE",
    "MAX_ATTACHMENT_CHARS",
    "PAGE_SIZE",
    "AcpAgent",
    "RuntimeHost",
    "RuntimeUnavailable",
)

# The prompt's content (and the content parts under it) load with the first prompt, not
# before `initialize` is answered.
__getattr__, __dir__ = _lazy_face(__name__, {"MAX_ATTACHMENT_CHARS": "_prompt_content"})
