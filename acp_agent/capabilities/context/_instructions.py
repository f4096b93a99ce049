"""The client's own instructions for a session (ACP's `systemPrompt`), in the guide.

    guide = default_guide_registry()
    apply_instructions(guide, ClientInstructions("append", "Answer in French."))
    apply_instructions(guide, None)       # the agent's own role again

A client may give a session instructions of its own. `append` adds them to
the agent's: right after its role (`core/role`), before how to read the
input. `override` puts them in place of the agent's role (who it is, how it
answers). Either way the rest of the guide, how to read the input (the
person's messages, tool results, state, rules, notifications, branch
messages, summaries), stays in every request: the runtime produces that
input, and the model could not read it without the guide; the client's text
replaces the agent's instructions, never the guide. The text is the
client's, as it sent it (text blocks joined by a blank line).

The guide is the session's, so every line of work (the main line and its
branches) reads the same instructions: a branch works for the same client,
in the same session. A change (a load or a resume with other instructions)
makes a new guide, which each line adopts (`GuideAdopted`) before its next
request; the guide does not change between requests otherwise, so the
prompt's cached prefix stays valid.
"""

from __future__ import annotations

from typing import Final, Protocol

from acp_agent.capabilities.context._guide import ROLE_ENTRY, GuideEntry, GuideRegistry

__all__ = ("Instructions", "apply_instructions")

#: The guide entry holding them.
_ENTRY_ID: Final = "client/instructions"


class Instructions(Protocol):
    """A client's instructions (`acp_agent.capabilities.controls.ClientInstructions`)."""

    @property
    def mode(self) -> str:
        """`append` (added to the agent's) or `override` (in place of them)."""
        ...

    @property
    def text(self) -> str: ...


def apply_instructions(guide: GuideRegistry, instructions: Instructions | None) -> None:
    """Make `guide` carry `instructions` (None: the agent's own role only)."""
    guide.unregister(_ENTRY_ID)
    if ROLE_ENTRY.entry_id not in guide.entries:
        guide.register(ROLE_ENTRY)
    if instructions is None:
        return
    replaces = instructions.mode == "override"
    if replaces:
        guide.unregister(ROLE_ENTRY.entry_id)
    # The role's place (order 0) when it replaces it, right after it otherwise.
    order = ROLE_ENTRY.order if replaces else ROLE_ENTRY.order + 1
    guide.register(GuideEntry(_ENTRY_ID, "client", instructions.text, order=order))
