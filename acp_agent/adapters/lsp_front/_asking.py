"""Asking the person in the editor: a message request, or proposals as code actions.

`window/showMessageRequest` offers "Allow once", "Always for this kind" and
"Reject"; a client that does not declare it, or answers -32601 (Helix), gets the
proposal as code actions instead (`_approvals`), told once by a message.
Dismissing the message request rejects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from lsprotocol import types
from pygls.exceptions import JsonRpcMethodNotFound
from pygls.lsp.server import LanguageServer

from acp_agent.adapters.lsp_front._approvals import Approvals, Decision, Pending
from acp_agent.adapters.lsp_front._editor import EditorTraits
from acp_agent.adapters.lsp_front._requests import request

__all__ = ("Answer", "Asker")

_ACTIONS: Final = tuple(types.MessageActionItem(title=d.value.capitalize()) for d in Decision)
_BY_TITLE: Final = {d.value.capitalize(): d for d in Decision}


class Answer:
    """The person's decision, and whether the editor applied the edit itself."""

    def __init__(self, decision: Decision, *, applied: bool = False) -> None:
        self.decision = decision
        self.applied = applied


class Asker:
    """Asks the person of one editor (see the module docstring)."""

    def __init__(self, server: LanguageServer, traits: EditorTraits, approvals: Approvals) -> None:
        self._server = server
        self._message_requests = traits.message_requests
        self._approvals = approvals

    async def ask(
        self,
        question: str,
        *,
        folder: str,
        title: str,
        edit: types.WorkspaceEdit | None = None,
        files: Sequence[str] = (),
    ) -> Answer:
        """The person's answer to `question` (`title` and `edit`: the code action offered
        where the editor cannot ask)."""
        if self._message_requests:
            try:
                chosen = await request(
                    self._server,
                    types.WINDOW_SHOW_MESSAGE_REQUEST,
                    types.ShowMessageRequestParams(
                        type=types.MessageType.Info, message=question, actions=list(_ACTIONS)
                    ),
                    timeout_s=None,
                )
            except JsonRpcMethodNotFound:
                self._message_requests = False  # declared, or not, but not served: Helix
            else:
                title_chosen = getattr(chosen, "title", None)
                return Answer(_BY_TITLE.get(title_chosen or "", Decision.REJECT))
        pending = Pending(
            self._approvals.new_id(), title, question, folder, edit=edit, files=tuple(files)
        )
        self._server.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Info,
                message=f'{question}\nPick the code action "{title}" to accept it, or the '
                "reject action beside it (commands acp-agent.approve / acp-agent.reject).",
            )
        )
        settled = await self._approvals.wait(pending)
        return Answer(settled.decision or Decision.REJECT, applied=settled.applied)
