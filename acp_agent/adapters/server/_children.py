"""A session's branches as subagent sessions, for an attached client that negotiated them.

A session on the server opens with the server's side, not one client's, so
its branches are rows of the parent's turns (`BranchShown`) for a client as
over stdio. A client that attaches (`_acp-agent/attach`) asked for every
update of the session; one that also advertised `clientCapabilities.subagents`
gets the branches as the stdio agent's subagents client does (see
`adapters/acp/_subagents`): each child announced with `subagent_update` on the
parent, its own updates on its id, its state as patches, its task and reports
as `session_message` views, and no branch rows on the parent. Each attached
connection gets what it negotiated: an observer without subagents still sees
the rows.

What differs from stdio: the session's questions stay the server's (every
attached controller is asked on the parent session, `_questions`), and the
children's commands run on the server, so this view only shows. A view for
the parent goes out at once (an attached client takes updates between turns).
A replay from the start replays each child's own history after the parent's;
a replay after a cursor, or none, announces each child with its state now and
follows it from there (what a child did meanwhile is not sent again: its state
says where it is). A child's stream waits while the client is behind, as the
parent's view does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from acp_agent.adapters.acp._stream import SessionStream, Translator
from acp_agent.adapters.acp._subagents import SubagentPresenter
from acp_agent.agent import Event

if TYPE_CHECKING:
    from acp_agent.adapters.acp._updates import UpdateTranslator
    from acp_agent.adapters.server._agent import ServerSession
    from protocol.connection import AgentConnection

__all__ = ("ChildStream", "show_children")


class ChildStream(SessionStream):
    """A child's session stream to one connection: after each event it waits while the
    client is behind (`writable`), so a slow client holds back only its own delivery."""

    def __init__(
        self,
        connection: AgentConnection,
        session_id: str,
        translator: Translator,
        *,
        writable: Callable[[], Awaitable[None]],
    ) -> None:
        super().__init__(connection, session_id, translator)
        self._writable = writable

    async def handle(self, event: Event) -> None:
        self.show(event, self.translator)
        try:
            await self._writable()
        except (BrokenPipeError, ConnectionError, OSError):
            self._client_gone()


async def show_children(
    acp_session: ServerSession,
    *,
    connection: AgentConnection,
    translator: Callable[[], UpdateTranslator],
    replay: Callable[[], UpdateTranslator] | None,
    writable: Callable[[], Awaitable[None]],
) -> SubagentPresenter:
    """Show the session's children to this connection from now on (see the module
    docstring); `replay`: the translator each child's history is replayed with (None:
    no history, the children announced and followed from now). Returns the presenter,
    kept as the session's `subagents` (a child's id then takes `session/cancel`)."""
    manager = acp_session.handle.branches
    presenter = SubagentPresenter(
        connection=connection,
        parent_id=acp_session.session_id,
        parent=acp_session.view,
        manager=manager,
        translator=translator,
        hold_for_main=False,
        child_stream=lambda child_id, child_translator: ChildStream(
            connection, child_id, child_translator, writable=writable
        ),
    )
    # Watched first, so a child opening while the others are announced is not missed.
    presenter.start()
    manager.watch(presenter)
    if replay is None:
        presenter.follow_children()
    else:
        await presenter.replay_children(replay)
    return presenter
