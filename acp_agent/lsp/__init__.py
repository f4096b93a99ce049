"""Code intelligence from language servers: what the agent's edits broke, told at once.

A session's `CodeIntelligence` (registered as its `CHANGE_REVIEW` by
`register_lsp`) starts language servers when a call first changes a file one
handles, tells them every change, and adds the problems a change introduced to
the call's result (`Problem`, `new_problems`). It also gives the session's model
the `diagnostics` tool, and with a server that navigates (basedpyright, the
`types` extra) `definition`, `references`, `hover` and `symbols` (`_tools`).
Ruff's server (`RUFF`) is always there; see `_servers` for why each is safe in
any workspace.

Every module under this package is private; this is its whole surface. pygls and
lsprotocol load only when a server is first started (`_connection`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

import attrs

from acp_agent.lsp._problems import Problem, describe, line_map, new_problems
from acp_agent.lsp._servers import BASEDPYRIGHT, RUFF, ServerSpec, default_servers
from acp_agent.lsp._service import DEFAULT_SETTLE_S, CodeIntelligence, ServerStatus

if TYPE_CHECKING:
    from acp_agent.core import Scope, ServiceRegistry

__all__ = (
    "BASEDPYRIGHT",
    "DEFAULT_SETTLE_S",
    "RUFF",
    "CodeIntelligence",
    "LspSettings",
    "Problem",
    "ServerSpec",
    "ServerStatus",
    "default_servers",
    "describe",
    "line_map",
    "new_problems",
    "register_lsp",
)

#: `0` turns code intelligence off; `ACP_AGENT_LSP_SETTLE_S` bounds the wait per call.
ENABLED_VARIABLE: Final = "ACP_AGENT_LSP"
SETTLE_VARIABLE: Final = "ACP_AGENT_LSP_SETTLE_S"


@attrs.frozen
class LspSettings:
    """Whether sessions get code intelligence, and how long a call waits for it."""

    enabled: bool = True
    settle_s: float = DEFAULT_SETTLE_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> LspSettings:
        enabled = env.get(ENABLED_VARIABLE, "1").strip() != "0"
        try:
            settle_s = float(env.get(SETTLE_VARIABLE, DEFAULT_SETTLE_S))
        except ValueError:
            settle_s = DEFAULT_SETTLE_S
        return cls(enabled, max(0.0, settle_s))


def register_lsp(registry: ServiceRegistry, settings: LspSettings) -> None:
    """Register each session's `CodeIntelligence` as its change review (when enabled);
    call after `register_capabilities`, whose session controls it reads the roots of."""
    from acp_agent.capabilities import CHANGE_REVIEW, SESSION_CONTROLS, TOOLSET
    from acp_agent.lsp._tools import code_tools

    if not settings.enabled:
        return

    async def code_intelligence(scope: Scope) -> CodeIntelligence:
        controls = scope.get(SESSION_CONTROLS)
        service = CodeIntelligence(lambda: controls.roots, settle_s=settings.settle_s)
        scope.add_cleanup(service.aclose)
        # Its tools join the session's (`diagnostics`; the navigation ones with a server
        # that navigates); starting a server waits until a tool or a change needs one.
        toolset = scope.get(TOOLSET)
        await toolset.supersede([*toolset.current.tools.values(), *code_tools(service)])
        return service

    registry.register(CHANGE_REVIEW, code_intelligence)
