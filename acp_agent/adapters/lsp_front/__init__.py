"""The agent as a language server (`acp-agent lsp`): a front end for editors without ACP.

Not to be confused with `acp_agent.lsp`, the language-server *client* that gives
sessions code intelligence. This package serves LSP to an editor (Helix, Sublime
Text, Kate, Vim, Emacs eglot, Neovim) and reaches the runtime only through its
handle (`acp_agent.agent`), as the ACP front end does; see `_server`.
"""

from acp_agent.adapters.lsp_front._server import COMMANDS, LspFrontEnd

__all__ = ("COMMANDS", "LspFrontEnd")
