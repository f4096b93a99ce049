"""A session's branches as ACP subagent sessions, for a client that takes them.

For a client that advertised `clientCapabilities.subagents` (an object; negotiated,
no `--unstable` needed: the shapes are the unstable schema's); any other client
sees each branch as a tool call of the main line (`BranchShown`). Each child line
of work is a restricted session whose id is its branch id:

- **announce**: a `subagent_update` on the parent session (title, the task as
  description, `state`, `capabilities.cancel`) goes out as the child opens,
  before any of its traffic;
- **traffic**: the child's own `session/update`s (chunks, thoughts, tool calls,
  plans) and its `session/request_permission` carry the child's id, at any
  time: it is a session of its own, not a part of main's turn;
- **state**: later `subagent_update` patches follow the child: running,
  requires action while a question waits, idle (with the stop reason) when
  its turn ends. Idle does not end it: main can message it again;
- **messages**: the child's task, main's messages to it (`branch_message`) and
  each report it ends a turn with are `session_message` upserts, an outgoing
  view on the sender's session and an incoming view on the recipient's,
  linked by `senderMessageId` / `recipientMessageId`. Between main's turns
  main's session carries only `subagent_update` patches: a view for main
  waits for main's next turn;
- **questions**: a child's permission question is asked at once on its id; a
  client that refuses it with an error (one that does not route child sessions)
  gets it on the parent session instead, titled with the branch's title, during
  a turn of main (the way a branch shown as a row asks): a question is never
  dropped. Cancelling the child, main or the session withdraws an open one
  (`$/cancel_request`), so none is left hanging;
- **editor**: the child's file and terminal requests carry its id too, so a
  command's terminal is embedded in the child's own tool call (`client_of`);
- **cancel**: `session/cancel` with the child's id stops that child's current
  step only; every other method on a child's id is refused (`refuse`);
- **replay**: `session/load` by such a client replays each child after main's
  conversation: its announce (with its state now), then its own history on its
  id, messages included (`replay_children`); `session/resume` announces the
  open children after its answer and follows them from then on.

`SubagentPresenter` shows the children; `SubagentSide`, the stdio agent's,
also takes their questions and editor requests (a `BranchSide`). The app
server shows them, display only, to an attached client that negotiated them
(`adapters/server/_children`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from acp_agent.adapters.acp._client_bridge import AcpClientBridge, AcpPermissionPrompter
from acp_agent.adapters.acp._replay import replayed
from acp_agent.adapters.acp._stream import SessionStream
from acp_agent.adapters.acp._updates import UpdateTranslator
from acp_agent.agent import (
    BranchCreated,
    BranchId,
    BranchManager,
    BranchMessageReceived,
    ChildBranch,
    ChildState,
    Event,
    ModelRequestStarted,
    ModelTextDelta,
    PermissionAnswer,
    PermissionQuestion,
    Seq,
    SessionSubscription,
    TurnEnded,
    TurnInterrupted,
    child_history,
    follow_child,
    gc_paused,
)
from protocol import types
from protocol.connection import AgentConnection
from protocol.errors import InvalidParams
from protocol.text_chunks import TextChunks

if TYPE_CHECKING:
    from acp_agent.agent import PermissionPrompter

__all__ = ("ChildTranslator", "SubagentPresenter", "SubagentSide", "refuse", "state_of")

logger = logging.getLogger(__name__)

_IDLE: dict[str | None, Callable[[], types.StateUpdate]] = {
    "end_turn": types.IdleStateUpdateEndTurn,
    "max_tokens": types.IdleStateUpdateMaxTokens,
    "max_turn_requests": types.IdleStateUpdateMaxTurnRequests,
    "refusal": types.IdleStateUpdateRefusal,
    "cancelled": types.IdleStateUpdateCancelled,
    "error": types.IdleStateUpdateError,
    "interrupted": types.IdleStateUpdateError,
    None: types.IdleStateUpdateNone,
}


def state_of(branch: ChildBranch) -> types.StateUpdate:
    """The ACP state snapshot of a child line of work."""
    if branch.state is ChildState.RUNNING:
        return types.RunningStateUpdate()
    if branch.state is ChildState.WAITING:
        return types.RequiresActionStateUpdate()
    if branch.state is ChildState.FAILED:
        return types.IdleStateUpdateError()
    if branch.state is ChildState.INTERRUPTED:
        # Cancelled by the person (its step stopped), or cut short by a restart.
        if branch.stop_reason == "cancelled":
            return types.IdleStateUpdateCancelled()
        return types.IdleStateUpdateError()
    if branch.state is ChildState.CLOSED:
        return types.IdleStateUpdateNone()
    make = _IDLE.get(branch.stop_reason)
    if make is None:  # a stop reason of ours ACP has no name for
        return types.IdleStateUpdateOther(stop_reason=f"_{branch.stop_reason}")
    return make()


class ChildTranslator:
    """A child's translator: its own updates (`inner`'s), and the messages it sends and
    receives.

    The views on the child's session are returned in the order of its events;
    the views on the parent's go to `to_parent`, unless `muted` (learning the
    history, when nothing is sent).
    """

    def __init__(
        self,
        inner: UpdateTranslator,
        *,
        parent_id: str,
        child_id: str,
        to_parent: Callable[[types.SessionUpdate], None],
    ) -> None:
        self.inner = inner
        self.muted = False
        self.parent_id = parent_id
        self.child_id = child_id
        self.to_parent = to_parent
        self._reply: list[str] = []
        self._reports = 0

    def streamed_text(self, event: Event) -> TextChunks | None:
        chunks = self.inner.streamed_text(event)
        payload = event.payload
        if chunks is not None and isinstance(payload, ModelTextDelta):
            self._reply.append(payload.text)
        return chunks

    def translate(self, event: Event) -> list[types.SessionUpdate]:
        payload = event.payload
        if isinstance(payload, BranchCreated) and payload.branch_id == self.child_id:
            return self.from_parent("task", payload.task or "")
        if isinstance(payload, BranchMessageReceived):
            return self.from_parent(payload.message_id, payload.text)
        chunks = self.streamed_text(event)
        if chunks is not None:
            return chunks.updates()
        # A child has no prompts, so no notice goes out on its session (what failed in it
        # shows in its own updates; the session's notices go out on main's prompts).
        updates: list[types.SessionUpdate] = [
            u for u in self.inner.translate(event) if not isinstance(u, types.Notice)
        ]
        if isinstance(payload, ModelRequestStarted):
            self._reply = []
        elif isinstance(payload, TurnEnded | TurnInterrupted):
            updates += self._report()
        return updates

    def learn(self, event: Event) -> None:
        # What it learns includes the messages and reports it tells the parent (muted).
        self.translate(event)

    def from_parent(self, key: str, text: str) -> list[types.SessionUpdate]:
        """A message from the parent: its outgoing view to the parent, the incoming one here."""
        outgoing, incoming = self._views(key, self.parent_id, self.child_id, text)
        self._send_parent(outgoing)
        return [incoming]

    def _report(self) -> list[types.SessionUpdate]:
        """The child's last reply of the turn, sent to the parent as its report."""
        self._reports += 1
        text = "".join(self._reply).strip() or "(no report)"
        outgoing, incoming = self._views(
            f"report{self._reports}", self.child_id, self.parent_id, text
        )
        self._send_parent(incoming)
        return [outgoing]

    def _views(
        self, key: str, sender: str, recipient: str, text: str
    ) -> tuple[types.SessionMessage, types.SessionMessage]:
        """The outgoing and the incoming view of one message, each naming the other."""
        out_id, in_id = f"{self.child_id}.{key}.out", f"{self.child_id}.{key}.in"
        content: list[types.ContentBlock] = [types.TextContent(text=text)]
        outgoing = types.SessionMessage(
            message_id=out_id,
            sender_session_id=sender,
            recipient_session_id=recipient,
            recipient_message_id=in_id,
            content=list(content),
        )
        incoming = types.SessionMessage(
            message_id=in_id,
            sender_session_id=sender,
            recipient_session_id=recipient,
            sender_message_id=out_id,
            content=list(content),
        )
        return outgoing, incoming

    def _send_parent(self, update: types.SessionUpdate) -> None:
        if not self.muted:
            self.to_parent(update)


@attrs.define(eq=False)
class _Child:
    branch: ChildBranch
    stream: SessionStream
    #: The state last sent (None: none yet).
    state: types.StateUpdate | None
    #: Its delivery, once followed.
    subscription: SessionSubscription | None = None

    async def caught_up(self) -> None:
        if self.subscription is not None:
            await self.subscription.caught_up()


class SubagentPresenter:
    """Shows one session's children as subagent sessions (see the module docstring): a
    `ChildWatcher` of the session's branch manager.

    What it shows is display only: the stdio agent's side (`SubagentSide`) also
    takes the children's questions and editor requests on their sessions; the app
    server shows an attached client that negotiated subagents the children of a
    session whose questions go to everyone following it.

    **Parameters:**

    * `connection`: the connection to the client.
    * `parent_id`, `parent`: the session's id and stream (where children are announced).
    * `manager`: the session's branches.
    * `translator`: makes a live translator for a child's stream.
    * `hold_for_main`: a view for main's session waits for main's next turn (between
      main's turns main's session carries only state patches); False: it goes at
      once (a client attached to the session gets every update, turn or no turn).
    * `child_stream`: makes the stream of a child's session (its id, its translator).
    """

    def __init__(
        self,
        *,
        connection: AgentConnection,
        parent_id: str,
        parent: SessionStream,
        manager: BranchManager,
        translator: Callable[[], UpdateTranslator],
        hold_for_main: bool = True,
        child_stream: Callable[[str, ChildTranslator], SessionStream] | None = None,
    ) -> None:
        self._connection = connection
        self._parent_id = parent_id
        self._parent = parent
        self._manager = manager
        self._translator = translator
        self._hold_for_main = hold_for_main
        self._child_stream = child_stream or (
            lambda child_id, translator: SessionStream(connection, child_id, translator)
        )
        self._children: dict[str, _Child] = {}
        #: Views for main's session waiting for main's next turn.
        self._held: list[types.SessionUpdate] = []
        #: Children opening from now on are announced (`start`); those the session
        #: opened with are announced by a replay or a resume.
        self._started = False

    def start(self) -> None:
        """Announce and follow the children that open from now on (the session is open)."""
        self._started = True

    def close(self) -> None:
        """Send nothing more of the children, and hear of them no more."""
        self._manager.unwatch(self)
        for child in self._children.values():
            child.stream.close()

    async def disconnect(self) -> None:
        """`close`, and end the children's deliveries (the session goes on without this
        client's view of it)."""
        self.close()
        for child in list(self._children.values()):
            if child.subscription is not None:
                await child.subscription.disconnect()
        self._children.clear()

    async def caught_up(self) -> None:
        """Wait (briefly) until every child's stream sent what its line published."""
        for child in list(self._children.values()):
            await child.caught_up()

    def is_child(self, session_id: str) -> bool:
        return session_id in self._children

    async def cancel(self, session_id: str) -> bool:
        """Stop the child's current step (it stays open); whether it had one."""
        return await self._manager.cancel_child(session_id)

    # --- ChildWatcher -----------------------------------------------------------------------

    async def child_attached(self, branch: ChildBranch) -> None:
        if not self._started or str(branch.branch_id) in self._children:
            return  # opened with the session (a replay or a resume shows it), or shown
        # A child opening to start its first turn has no state yet: "running" follows.
        fresh = branch.turns_ended == 0 and not branch.state.working
        child = self._announce(branch, None if fresh else state_of(branch))
        if fresh:  # its task is the first message it gets
            translator = child.stream.translator
            assert isinstance(translator, ChildTranslator)
            for update in translator.from_parent("task", branch.task):
                child.stream.send(update)
        child.subscription = follow_child(branch, child.stream)
        logger.info("branch %s is shown as a subagent session", branch.branch_id)

    async def main_turn_started(self) -> None:
        held, self._held = self._held, []
        for update in held:
            self._parent.send(update)

    def _to_main(self, update: types.SessionUpdate) -> None:
        if not self._hold_for_main or self._manager.main_turn_open:
            self._parent.send(update)
        else:
            self._held.append(update)

    def _announce(self, branch: ChildBranch, state: types.StateUpdate | None) -> _Child:
        """Send the child's first `subagent_update` (before anything of it) and keep it."""
        child_id = str(branch.branch_id)
        translator = ChildTranslator(
            self._translator(),
            parent_id=self._parent_id,
            child_id=child_id,
            to_parent=self._to_main,
        )
        child = _Child(branch, self._child_stream(child_id, translator), state)
        self._children[child_id] = child
        self._send_announce(branch, state)
        return child

    def _send_announce(self, branch: ChildBranch, state: types.StateUpdate | None) -> None:
        self._parent.send(
            types.SubagentUpdate(
                session_id=str(branch.branch_id),
                title=branch.title,
                description=branch.task or None,
                capabilities=types.SubagentSessionCapabilities(
                    cancel=types.SessionCancelCapabilities()
                ),
                state=state,
            )
        )

    def follow_children(self) -> None:
        """Announce the children open now and follow them live, without their history
        (a resume: send it once the answer is written, so the client knows the parent)."""
        for branch in self._manager.children():
            if str(branch.branch_id) in self._children:
                continue
            child = self._announce(branch, state_of(branch))
            child.subscription = follow_child(branch, child.stream)

    async def replay_children(self, replay: Callable[[], UpdateTranslator]) -> None:
        """Replay the children open now (a load): each announced, then its own history
        on its id, then followed live. Everything goes out before the load answers."""
        for branch in self._manager.children():
            await self.replay_child(branch, replay)

    async def replay_child(
        self, branch: ChildBranch, replay: Callable[[], UpdateTranslator]
    ) -> None:
        """Announce one child (with its state now), replay its own history on its id with
        a translator `replay` makes, then follow it live (if it is not followed yet)."""
        child_id = str(branch.branch_id)
        followed = self._children.get(child_id)  # loaded again: replay, keep following
        if followed is None:
            child = self._announce(branch, state_of(branch))
        else:
            child = followed
            self._send_announce(branch, state_of(branch))
        shows = replay()
        replaying = ChildTranslator(
            shows,
            parent_id=self._parent_id,
            child_id=child_id,
            to_parent=self._parent.send,
        )
        covered, history = await child_history(branch)
        live = child.stream.translator
        assert isinstance(live, ChildTranslator)
        with gc_paused():
            # As few updates as the person needs, as the parent's (`_replay`).
            child.stream.send_replay(replayed(history, replaying, shows))
            if followed is None:
                live.muted = True  # it learns the history; the replay sent it
                for event in history:
                    child.stream.learn(event)
                live.muted = False
        if followed is None:
            child.subscription = follow_child(branch, child.stream, after=covered)

    def resume_child(self, branch: ChildBranch, *, after: Seq, learnt: Sequence[Event]) -> None:
        """Announce one child with its state now and follow it after `after` (a batch end
        of its own history, up to which the client has it): `learnt`, its history up to
        there, is learnt by its live translator, not sent. (The app server's reconnect
        after a cursor: its stream leaves out the parts of an event the client has.)"""
        if str(branch.branch_id) in self._children:
            return  # it opened meanwhile: announced and followed from its start
        child = self._announce(branch, state_of(branch))
        live = child.stream.translator
        assert isinstance(live, ChildTranslator)
        live.muted = True
        try:
            for event in learnt:
                child.stream.learn(event)
        finally:
            live.muted = False
        child.subscription = follow_child(branch, child.stream, after=after)

    async def child_changed(self, branch: ChildBranch) -> None:
        child = self._children.get(str(branch.branch_id))
        if child is None:
            return
        if branch.state is ChildState.RUNNING and branch.stop_reason == "cancelled":
            # Being stopped (its question withdrawn): its end, idle and cancelled, follows;
            # "running" now would show a child that stops as working.
            return
        state = state_of(branch)
        if state != child.state:
            child.state = state
            self._parent.send(types.SubagentUpdate(session_id=str(branch.branch_id), state=state))


class SubagentSide(SubagentPresenter):
    """The stdio agent's presenter: also the session's `BranchSide`, so a child's
    questions and editor requests go to the child's own session.

    Made when its session assembles, from the session's branch manager (the front
    end's `branches` maker), which it then watches.

    **Parameters** (besides `SubagentPresenter`'s):

    * `parent_prompter`: asks on the parent session (a child's question the client
      refused on the child's).
    * `client`: makes the editor's side (files, terminals) of a session id, given
      what waits until that session's published updates were sent.
    """

    def __init__(
        self,
        *,
        connection: AgentConnection,
        parent_id: str,
        parent: SessionStream,
        manager: BranchManager,
        translator: Callable[[], UpdateTranslator],
        parent_prompter: PermissionPrompter,
        client: Callable[[str, Callable[[], Awaitable[None]]], AcpClientBridge],
    ) -> None:
        super().__init__(
            connection=connection,
            parent_id=parent_id,
            parent=parent,
            manager=manager,
            translator=translator,
        )
        self._parent_prompter = parent_prompter
        self._client = client
        self._clients: dict[str, AcpClientBridge] = {}

    def prompter_of(self, branch_id: BranchId) -> PermissionPrompter:
        """Who answers a child's questions: the person, on the child's session (on the
        parent's, when the client refuses it there)."""
        child_id = str(branch_id)

        async def on_parent(question: PermissionQuestion) -> PermissionAnswer:
            return await self._ask_on_parent(child_id, question)

        return AcpPermissionPrompter(self._connection, child_id, on_refused=on_parent)

    async def _ask_on_parent(self, child_id: str, question: PermissionQuestion) -> PermissionAnswer:
        """A child's question the client refused on the child's session, asked on the
        parent's during a turn of main (between main's turns nothing goes out on it but
        state patches), titled with the branch's title so the person sees whose it is."""
        logger.warning(
            "the client refused branch %s's question on its session; asking on %s",
            child_id,
            self._parent_id,
        )
        await self._manager.wait_main_turn()
        title = self._manager.child(child_id).title
        named = attrs.evolve(
            question,
            call_id=f"{child_id}/{question.call_id}",
            title=f"Branch {title!r} asks: {question.title}",
        )
        return await self._parent_prompter.ask(named)

    def close(self) -> None:
        self._manager.stop_showing_as_sessions(self)
        super().close()

    def client_of(self, branch_id: BranchId) -> AcpClientBridge:
        """The editor's side of a child's session: its requests carry the child's id, and
        a terminal is released only once the child's own updates showing it were sent."""
        child_id = str(branch_id)
        bridge = self._clients.get(child_id)
        if bridge is None:

            async def caught_up() -> None:
                child = self._children.get(child_id)
                if child is not None:
                    await child.caught_up()

            bridge = self._clients[child_id] = self._client(child_id, caught_up)
        return bridge


def refuse(session_id: str, parent_id: str, method: str) -> InvalidParams:
    """The error for `method` on a child's id: a subagent session takes only `session/cancel`."""
    return InvalidParams(
        f"Invalid params: sessionId: {session_id} is a subagent session of {parent_id}; "
        f"it takes session/cancel only, not {method}"
    )
