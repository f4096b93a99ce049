"""The agent as a language server (`acp-agent lsp`): a front end for editors without ACP.

Not to be confused with `acp_agent.lsp`, the language-server *client* that gives
sessions code intelligence. This package serves LSP to an editor (Helix, Sublime
Text, Kate, Vim, Emacs eglot, Neovim); its sessions live in this process's
runtime, reached only through its handle (`acp_agent.agent`) as the ACP front
end does (`EmbeddedSessions`), or on a running app server it attaches to as an
ACP client (`ServerSessions` over a `ServerLink`); see `_server`.
"""

from acp_agent.adapters.lsp_front._attached import ServerSessions
from acp_agent.adapters.lsp_front._embedded import EmbeddedSessions
from acp_agent.adapters.lsp_front._link import ServerLink
from acp_agent.adapters.lsp_front._server import COMMANDS, LspFrontEnd

__all__ = ("COMMANDS", "EmbeddedSessions", "LspFrontEnd", "ServerLink", "ServerSessions")
