"""Slash commands on the wire: the session's runner, and `available_commands_update`.

The commands themselves are `acp_agent.capabilities.session`'s; here they get the
session's services, `/branches` and `/branch`, `/jobs`, `/rewind`, `/lsp` when
code intelligence is on, `/mcp` when the session has MCP servers, and their ACP
shape.
The list is sent after the `session/new`, `session/resume` and `session/fork`
responses, before the `session/load` response, and again whenever it changes (a
template added or removed), before a prompt's response.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from acp_agent.adapters.acp._mcp_servers import session_mcp
from acp_agent.core import STORE, Session
from protocol import types

if TYPE_CHECKING:
    from acp_agent.capabilities.controls import SessionControls
    from acp_agent.capabilities.session import CommandRunner
    from acp_agent.lsp import CodeIntelligence
    from acp_agent.models import ModelSource
    from acp_agent.toolkit import CommandSpec

__all__ = ("build_runner", "commands_update")


def build_runner(
    session: Session,
    controls: SessionControls,
    models: ModelSource,
    *,
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
    mcp = session_mcp(session)
    if mcp is not None:

        async def mcp_status(arguments: str) -> str:
            return mcp.status_report()

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


def commands_update(specs: Sequence[CommandSpec]) -> types.AvailableCommandsUpdate:
    return types.AvailableCommandsUpdate(
        available_commands=[
            types.AvailableCommand(
                name=spec.name,
                description=spec.description,
                input=(
                    None if spec.hint is None else types.UnstructuredCommandInput(hint=spec.hint)
                ),
            )
            for spec in specs
        ]
    )


def _code_intelligence(session: Session) -> CodeIntelligence | None:
    """The session's language servers, or None when code intelligence is off."""
    from acp_agent.capabilities import CHANGE_REVIEW
    from acp_agent.lsp import CodeIntelligence

    review = session.scope.find(CHANGE_REVIEW)
    return review if isinstance(review, CodeIntelligence) else None
