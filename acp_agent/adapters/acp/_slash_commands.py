"""Slash commands on the wire: `available_commands_update`.

The commands are the session handle's (`SessionHandle.commands`); here they
get their ACP shape. The list is sent after the `session/new`, `session/resume`
and `session/fork` responses, before the `session/load` response, and again
whenever it changes (a template added or removed), before a prompt's response.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol import types

if TYPE_CHECKING:
    from acp_agent.toolkit import CommandSpec

__all__ = ("commands_update",)


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
