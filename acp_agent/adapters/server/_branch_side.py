"""What the server's side of a session gives its branches: their questions and their editor.

A session on the server opens with the server's side (`SharedSessions.front_end`),
which takes the branch manager's `BranchSide` part so that a branch's permission
question goes to the session's `QuestionBroker` at once, naming its branch: the
broker asks each client where it sees the branch (on its child session, or on
the parent's turn: `_questions`), instead of the question waiting for a turn of
main. A branch's commands still run on the server (its tools get the session's
files without terminals, as a branch shown as a row does), and the branch
manager's other news is not needed here: each connection's view shows the
branches (`_children`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_agent.adapters.server._questions import AskingBranch
from acp_agent.toolkit import TerminalsWithheld

if TYPE_CHECKING:
    from acp_agent.adapters.server._questions import QuestionBroker
    from acp_agent.agent import (
        BranchId,
        BranchManager,
        ChildBranch,
        PermissionAnswer,
        PermissionPrompter,
        PermissionQuestion,
    )
    from acp_agent.toolkit import ClientBridge

__all__ = ("ServerBranchSide",)


class ServerBranchSide:
    """The session's `BranchSide` on the server (see the module docstring)."""

    def __init__(
        self, manager: BranchManager, questions: QuestionBroker, files: ClientBridge
    ) -> None:
        self._manager = manager
        self._questions = questions
        self._files = files

    def prompter_of(self, branch_id: BranchId) -> PermissionPrompter:
        return _BranchQuestions(self._questions, AskingBranch(self._manager, branch_id))

    def client_of(self, branch_id: BranchId) -> ClientBridge:
        # The session's commands run on the server: no client's terminals.
        return TerminalsWithheld(self._files)

    async def child_attached(self, child: ChildBranch) -> None:
        """Nothing: each connection's view shows the children."""

    async def child_changed(self, child: ChildBranch) -> None:
        """Nothing: each connection's view shows the children."""

    async def main_turn_started(self) -> None:
        """Nothing: a question waiting for main's turn waits in the broker."""


class _BranchQuestions:
    """One branch's `PermissionPrompter`: the session's broker, naming the branch."""

    def __init__(self, questions: QuestionBroker, branch: AskingBranch) -> None:
        self._questions = questions
        self._branch = branch

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        return await self._questions.ask(question, branch=self._branch)
