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

What differs from stdio: a child's permission questions go to every client
that may answer them, each where it sees the branch (on the child's session
for a client shown the children, at once; on the parent's turn for the others:
`_questions`), and the children's commands run on the server, so this view
only shows. A view for the parent goes out at once (an attached client takes
updates between turns). Each update on a child's id carries a cursor of the
child's own (its event's seq in the child's timeline: `_cursors`), which the
client sends back to resume it:

- a replay from the start replays each child's own history after the
  parent's;
- after a cursor, each child the client names a cursor for
  (`"children": {"<child id>": "<cursor>"}` in the attach) is announced with
  its state now and resumed after that cursor, with no gap and nothing twice
  (the parts of the cursor's event the client has are left out, the views on
  the parent made of it too); a child it names none for (one that opened in
  the gap) is replayed from its start;
- with no replay, each child is announced with its state now and followed
  from there.

A child's stream waits while the client is behind, as the parent's view does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from acp_agent.adapters.acp._subagents import ChildTranslator, SubagentPresenter
from acp_agent.adapters.server._cursors import Cursor, CursoredStream, resume_point
from acp_agent.agent import Event, child_history

if TYPE_CHECKING:
    from acp_agent.adapters.acp._stream import Translator
    from acp_agent.adapters.acp._updates import UpdateTranslator
    from acp_agent.adapters.server._agent import ServerSession
    from protocol.connection import AgentConnection

__all__ = ("ChildStream", "show_children")


class ChildStream(CursoredStream):
    """A child's session stream to one connection, each update with the child's cursor;
    after each event it waits while the client is behind (`writable`).

    `position`: where the child's timeline stands as it is announced (what an update
    not made of a delivered event, its task, says it covers); `skip`: the cursor it
    resumes after, whose event's earlier parts the client has."""

    def __init__(
        self,
        connection: AgentConnection,
        session_id: str,
        translator: Translator,
        *,
        writable: Callable[[], Awaitable[None]],
        position: int,
        skip: Cursor | None = None,
    ) -> None:
        super().__init__(connection, session_id, translator, writable=writable)
        self.position = position
        self._skip = skip

    async def handle(self, event: Event) -> None:
        self.deliver(event)
        self.position = int(event.seq)
        await self.wait_writable()

    def deliver(self, event: Event) -> bool:
        # Up to the cursor's own event the client has the views on the parent too (those
        # of an event go out before the child's own updates of it).
        translator = self.translator
        muted = (
            self._skip is not None
            and event.seq <= self._skip.seq
            and isinstance(translator, ChildTranslator)
        )
        if muted:
            assert isinstance(translator, ChildTranslator)
            translator.muted = True
        try:
            return super().deliver(event)
        finally:
            if muted:
                assert isinstance(translator, ChildTranslator)
                translator.muted = False


async def show_children(
    acp_session: ServerSession,
    *,
    connection: AgentConnection,
    translator: Callable[[], UpdateTranslator],
    replay: str,
    replay_translator: Callable[[], UpdateTranslator],
    writable: Callable[[], Awaitable[None]],
    cursors: Mapping[str, Cursor] | None = None,
) -> SubagentPresenter:
    """Show the session's children to this connection from now on (see the module
    docstring): `replay` is the attach's (`start`, `cursor` with the children's
    `cursors`, or `none`), `replay_translator` makes the translator a child's history is
    replayed with. Returns the presenter, kept as the session's `subagents` (a child's
    id then takes `session/cancel`)."""
    manager = acp_session.handle.branches
    skips: dict[str, Cursor] = {}

    def child_stream(child_id: str, child_translator: ChildTranslator) -> ChildStream:
        branch = manager.child(child_id).branch
        return ChildStream(
            connection,
            child_id,
            child_translator,
            writable=writable,
            position=int(branch.timeline.last_published_seq),
            skip=skips.pop(child_id, None),
        )

    presenter = SubagentPresenter(
        connection=connection,
        parent_id=acp_session.session_id,
        parent=acp_session.view,
        manager=manager,
        translator=translator,
        hold_for_main=False,
        child_stream=child_stream,
    )
    # Watched first, so a child opening while the others are announced is not missed.
    presenter.start()
    manager.watch(presenter)
    if replay == "start":
        await presenter.replay_children(replay_translator)
    elif replay == "cursor":
        for branch in manager.children():
            child_id = str(branch.branch_id)
            cursor = (cursors or {}).get(child_id)
            if cursor is None:  # it opened in the gap: all of it
                await presenter.replay_child(branch, replay_translator)
                continue
            covered, history = await child_history(branch)
            after, skip = resume_point(covered, history, cursor, name=f"children.{child_id}")
            if skip is not None:
                skips[child_id] = skip
            learnt = [event for event in history if event.seq <= after]
            presenter.resume_child(branch, after=after, learnt=learnt)
        # What the children did in the gap goes out before the attach's answer.
        await presenter.caught_up()
    else:
        presenter.follow_children()
    return presenter
