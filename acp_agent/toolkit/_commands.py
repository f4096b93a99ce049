"""What a component offers the person as a slash command, beside the built-in ones.

A `CommandSpec` is a command as the editor lists it; an `ExtraCommand` is one
a component other than the command runner answers (`/branches`, `/jobs`,
`/rewind`, `/mcp`), with Markdown. The session's command runner
(`acp_agent.capabilities.session`) lists and runs them with its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

from acp_agent.values import Value

__all__ = ("CommandSpec", "ExtraCommand")


@attrs.frozen
class CommandSpec(Value):
    """A command as the editor lists it."""

    name: str
    description: str
    #: What to type after the name, when it takes arguments: one argument named plainly
    #: ("model id"), or words and `<placeholders>` ("revoke <rule id>").
    hint: str | None = None

    def usage(self) -> str:
        """How it is typed: `/mode <mode id>`, `/permissions revoke <rule id>`."""
        if self.hint is None:
            return f"/{self.name}"
        typed = self.hint if "<" in self.hint else f"<{self.hint}>"
        return f"/{self.name} {typed}"


@attrs.frozen
class ExtraCommand(Value):
    """A built-in another component offers (`/mcp`): it answers with Markdown."""

    spec: CommandSpec
    run: Callable[[str], Awaitable[str]]
