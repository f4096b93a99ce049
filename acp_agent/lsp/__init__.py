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
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio.to_thread
import attrs

from acp_agent import values
from acp_agent.lsp._config import ConfiguredServers, load_servers
from acp_agent.lsp._problems import Problem, compare, describe, line_map, new_problems
from acp_agent.lsp._servers import BASEDPYRIGHT, RUFF, ServerSpec, default_servers
from acp_agent.lsp._service import DEFAULT_SETTLE_S, CodeIntelligence, ServerStatus

if TYPE_CHECKING:
    from acp_agent.core import Scope, ServiceRegistry

__all__ = (
    "BASEDPYRIGHT",
    "DEFAULT_SETTLE_S",
    "RUFF",
    "CodeIntelligence",
    "ConfiguredServers",
    "LspSettings",
    "Problem",
    "ServerSpec",
    "ServerStatus",
    "compare",
    "default_servers",
    "describe",
    "line_map",
    "load_servers",
    "new_problems",
    "register_lsp",
)

#: Where the model reads that a language server stopped or is back.
NOTIFICATION_SOURCE: Final = "lsp"
#: `0` turns code intelligence off; `ACP_AGENT_LSP_SETTLE_S` bounds the wait per call.
ENABLED_VARIABLE: Final = "ACP_AGENT_LSP"
SETTLE_VARIABLE: Final = "ACP_AGENT_LSP_SETTLE_S"


@attrs.frozen
class LspSettings(values.Value):
    """Whether sessions get code intelligence, how long a call waits for it (None: what
    `config.toml` says, else `DEFAULT_SETTLE_S`), and the person's `config.toml`."""

    enabled: bool = True
    settle_s: float | None = None
    config_file: Path | None = None

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] = os.environ, *, config_file: Path | None = None
    ) -> LspSettings:
        enabled = env.get(ENABLED_VARIABLE, "1").strip() != "0"
        try:
            settle_s: float | None = max(0.0, float(env[SETTLE_VARIABLE]))
        except (KeyError, ValueError):
            settle_s = None
        return cls(enabled, settle_s, config_file)


def register_lsp(registry: ServiceRegistry, settings: LspSettings) -> None:
    """Register each session's `CodeIntelligence` as its change review (when enabled);
    call after `register_capabilities`, whose session controls it reads the roots of."""
    from acp_agent.capabilities import CHANGE_REVIEW, FRONT_END, GUIDE, SESSION_CONTROLS, TOOLSET
    from acp_agent.capabilities.context import record_notification
    from acp_agent.core import SESSION
    from acp_agent.lsp._tools import code_guide_entry, code_tools
    from acp_agent.toolkit import NO_NOTICES

    if not settings.enabled:
        return

    async def code_intelligence(scope: Scope) -> CodeIntelligence:
        controls, session = scope.get(SESSION_CONTROLS), scope.get(SESSION)

        async def notify(text: str) -> None:
            # On main: the model reads it with its next request, in this turn or the next.
            await record_notification(session.main, NOTIFICATION_SOURCE, text)

        # Read per session: a server added to config.toml serves the next session.
        configured = await anyio.to_thread.run_sync(load_servers, settings.config_file)
        settle_s = settings.settle_s
        if settle_s is None:
            settle_s = configured.settle_s if configured.settle_s is not None else DEFAULT_SETTLE_S
        side = scope.find(FRONT_END)
        service = CodeIntelligence(
            lambda: controls.roots,
            start_soon=scope.start_soon,
            servers=configured.servers,
            settle_s=settle_s,
            notify=notify,
            notices=NO_NOTICES if side is None else side.notices,
        )
        scope.add_cleanup(service.aclose)
        # Its tools join the session's (`diagnostics`; the navigation ones with a server
        # that navigates); starting a server waits until a tool or a change needs one.
        toolset = scope.get(TOOLSET)
        await toolset.supersede([*toolset.current.tools.values(), *code_tools(service)])
        scope.get(GUIDE).register(code_guide_entry(service))
        return service

    registry.register(CHANGE_REVIEW, code_intelligence)
