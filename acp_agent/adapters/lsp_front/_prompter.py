"""The session's permission questions, asked in the editor.

An edit is allowed here at once: the change itself is what the person confirms, in
the editor, when the tool makes it (`_files`), so it is never asked twice. Every
other question (a command, a fetch) goes to the person through `_asking`.
"""

from __future__ import annotations

from acp_agent.adapters.lsp_front._approvals import Decision
from acp_agent.adapters.lsp_front._asking import Asker
from acp_agent.agent import PermissionAnswer, PermissionChoice, PermissionQuestion
from acp_agent.toolkit import ToolKind

__all__ = ("EditorPrompter",)

_CHOICES = {
    Decision.ALLOW_ONCE: PermissionChoice.ALLOW_ONCE,
    Decision.ALLOW_ALWAYS: PermissionChoice.ALLOW_ALWAYS,
    Decision.REJECT: PermissionChoice.REJECT_ONCE,
}


class EditorPrompter:
    """A `PermissionPrompter` for one session of the LSP front end."""

    def __init__(self, asker: Asker, *, folder: str) -> None:
        self._asker = asker
        self._folder = folder

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        if question.kind is ToolKind.EDIT:
            return PermissionAnswer(PermissionChoice.ALLOW_ONCE)
        note = f" ({question.note})" if question.note else ""
        answer = await self._asker.ask(
            f"acp-agent asks to {question.title}: {question.target}{note}",
            folder=self._folder,
            title=f"Allow acp-agent: {question.title}",
        )
        return PermissionAnswer(_CHOICES[answer.decision])
