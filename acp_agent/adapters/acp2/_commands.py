"""Slash commands over v2: the list a client offers, and a built-in run in place of a turn.

The session's commands are v1's (`SessionHandle.commands`): built-ins and the
person's templates. `available` lists them in v2's shape (`{"type": "command", ...}`)
for `session/new` and `session/resume` answers. A prompt starting with `/<name>`
runs it (`command_in`): a template is expanded and sent as the person's message (a
turn); a built-in runs in the turn's place, and the client sees it as a short piece
of foreground work of its own: `running`, the person's words and the command's
answer as messages, then `idle` (none of it is recorded, as over v1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from acp_agent.content import ContentPart, TextContent

if TYPE_CHECKING:
    from acp_agent.agent import CommandInvocation, SessionHandle

__all__ = ("available", "command_in", "said")


async def available(handle: SessionHandle) -> list[dict[str, Any]]:
    """The session's commands in v2's shape (read now: the templates are files)."""
    specs = await anyio.to_thread.run_sync(handle.commands.commands)
    listed: list[dict[str, Any]] = []
    for spec in specs:
        command: dict[str, Any] = {
            "type": "command",
            "name": spec.name,
            "description": spec.description,
        }
        if spec.hint is not None:
            command["input"] = {"type": "text", "hint": spec.hint}
        listed.append(command)
    return listed


def command_in(
    handle: SessionHandle, content: list[ContentPart], sent: list[ContentPart | None]
) -> tuple[CommandInvocation | None, list[ContentPart], list[ContentPart | None]]:
    """A built-in command to run, or the content to send (a template expanded), and what
    the person sent for each part changed (as the v1 adapter reads a prompt)."""
    from acp_agent.agent import parse_invocation

    runner = handle.commands
    templates = {template.spec.name: template for template in runner.templates()}
    builtins = runner.builtin_names()
    invocation = parse_invocation(content, builtins | frozenset(templates))
    if invocation is None or invocation.name in builtins:
        return invocation, content, sent
    expanded = TextContent(templates[invocation.name].expand(invocation.arguments))
    return None, [expanded, *content[1:]], [content[0], *sent[1:]]


def said(message_id: str, kind: str, blocks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chunks of one message, `kind` `user_message_chunk` or `agent_message_chunk`."""
    return [{"sessionUpdate": kind, "messageId": message_id, "content": b} for b in blocks]
