"""A session's slash commands, given the services they act on.

The commands themselves are `acp_agent.capabilities.session`'s; here they get the
session's services: `/branches` and `/branch`, `/jobs`, `/rewind`, `/lsp` when
code intelligence is on, `/mcp` when the session has MCP servers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from acp_agent.core import STORE, Session

if TYPE_CHECKING:
    from acp_agent.capabilities.controls import SessionControls
    from acp_agent.capabilities.session import CommandRunner
    from acp_agent.lsp import CodeIntelligence
    from acp_agent.mcp import McpSessionTools
    from acp_agent.models import ModelSource

__all__ = ("build_runner",)


def build_runner(
    session: Session,
    controls: SessionControls,
    models: ModelSource,
    *,
    mcp: McpSessionTools | None,
    config_dir: Path | None,
    clock: Callable[[], float],
) -> CommandRunner:
    """The command runner of `session` (its main branch's context engine, its tools)."""
    from acp_agent.capabilities import BRANCHES, CONTEXT, JOBS, REWINDER, TOOLSET
    from acp_agent.capabilities.branches import branch_commands
    from acp_agent.capabilities.jobs import job_commands
    from acp_agent.capabilities.session import CommandRunner, rewind_commands
    from acp_agent.toolkit import CommandSpec, ExtraCommand

    extra: dict[str, ExtraCommand] = {
        **branch_commands(session.scope.get(BRANCHES)),
        **job_commands(session.scope.get(JOBS)),
        **rewind_commands(session.scope.get(REWINDER), Path(session.cwd)),
    }
    intel = _code_intelligence(session)
    if intel is not None:

        async def lsp_status(arguments: str) -> str:
            return intel.status_report()

        extra["lsp"] = ExtraCommand(
            CommandSpec("lsp", "Show the language servers, their state and their last error"),
            lsp_status,
        )
    if mcp is not None:
        servers = mcp

        async def mcp_status(arguments: str) -> str:
            return servers.status_report()

        extra["mcp"] = ExtraCommand(
            CommandSpec("mcp", "Show the MCP servers, their state and their tools"), mcp_status
        )
    return CommandRunner(
        session=session,
        controls=controls,
        models=models,
        store=session.scope.get(STORE),
        context=session.main.scope.get(CONTEXT),
        toolset=session.scope.get(TOOLSET),
        config_dir=config_dir,
        extra=extra,
        clock=clock,
    )


def _code_intelligence(session: Session) -> CodeIntelligence | None:
    """The session's language servers, or None when code intelligence is off."""
    from acp_agent.capabilities import CHANGE_REVIEW
    from acp_agent.lsp import CodeIntelligence

    review = session.scope.find(CHANGE_REVIEW)
    return review if isinstance(review, CodeIntelligence) else None
