"""One open session, as every front end drives it.

    async with session.turn_slot() as slot:           # the turn queue (`_turns`)
        turn = await slot.start(content)
    subscription = await session.subscribe(viewer, after=cursor)
    await session.set_option("mode", "plan")
    outcome = await session.rewind(message_id)
    steered = session.steer(content)                  # into the running turn, or None

`SessionHandle` is the one way in to a session's services: a front end
never looks one up by key. It owns the turn queue (the session's one turn
lock; a message for the running turn joins it through `steer`), the
subscriptions (any number, each from its own position: see
`_subscriptions`), the settings, the title, the roots a front end
activated, a rewind, the MCP servers a front end names and the slash
commands. Opening, forking and deleting sessions are the runtime handle's
(`Agent`); `fork` and `delete` here are that, for this session.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread
from anyio.abc import TaskStatus

from acp_agent.agent._errors import SessionBusy, TurnCancelled, workspace_missing
from acp_agent.agent._new import other_roots
from acp_agent.agent._subscriptions import SessionSubscription, follow
from acp_agent.agent._turns import TurnHandle, TurnSlot
from acp_agent.capabilities.controls import SYSTEM_PROMPT_KEY, SessionControls
from acp_agent.content import ContentPart
from acp_agent.core import (
    STORE,
    Event,
    IllegalCut,
    ScopeClosed,
    Seq,
    Session,
    SessionClosed,
    SessionId,
    SessionRecord,
    SessionState,
    StoreError,
    Subscriber,
    TurnId,
    TurnState,
)

if TYPE_CHECKING:
    from acp_agent.agent._agent import Agent, ForkAnchor
    from acp_agent.capabilities.branches import BranchManager
    from acp_agent.capabilities.controls import ClientInstructions
    from acp_agent.capabilities.session import CommandRunner, RewindOutcome
    from acp_agent.mcp import McpServerConfig, McpSessionTools
    from acp_agent.models import ModelSource

__all__ = ("SessionHandle", "SessionWork")

logger = logging.getLogger(__name__)

#: The session output a front end's replay chunks are kept in, before the front end's key.
_REPLAY_OUTPUT: Final = "replay/"
#: How long `close` waits for the session's prompts to be answered once cancelled.
_CLOSE_BUDGET_S: Final = 5.0
#: How long one write of replay lines may hold up the session's close (`keep_replay`).
_KEEP_S: Final = 1.0

#: The session's own work (`SessionHandle.start_work`): called with `task_status`, whose
#: `started(value)` hands `value` to the caller while the work goes on.
SessionWork = Callable[..., Coroutine[Any, Any, object]]


class SessionHandle:
    """An open session (see the module docstring). Made by `Agent`, one per open session."""

    def __init__(
        self,
        session: Session,
        *,
        agent: Agent,
        models: ModelSource,
        config_dir: Path | None,
        clock: Callable[[], float],
    ) -> None:
        from acp_agent.capabilities import BRANCHES, MODEL_LOOP, REWINDER, SESSION_CONTROLS
        from acp_agent.mcp import MCP_SESSION

        scope = session.scope
        self._session = session
        self._agent = agent
        self._models = models
        self._config_dir = config_dir
        self._clock = clock
        self._controls = scope.get(SESSION_CONTROLS)
        self._branches = scope.get(BRANCHES)
        self._rewinder = scope.get(REWINDER)
        self._loop = session.main.scope.get(MODEL_LOOP)
        self._mcp: McpSessionTools | None = scope.find(MCP_SESSION)
        self._commands: CommandRunner | None = None
        #: The turn queue: one turn (or slash command) at a time, the others wait in order.
        self._turn_lock = anyio.Lock()
        #: Prompts waiting for or holding their turn; `cancel` cancels them all.
        self._slots: list[TurnSlot] = []
        self._idle = anyio.Event()
        self._subscriptions: list[SessionSubscription] = []
        self._store = scope.get(STORE)
        #: Replay chunks to keep, in the order asked (`keep_replay`), and whether a task
        #: writes them now.
        self._replay_writes: list[tuple[str, int, Sequence[bytes]]] = []
        self._replay_writing = False

    def __repr__(self) -> str:
        return f"<SessionHandle {self.id}>"

    # --- what it is -------------------------------------------------------------------

    @property
    def id(self) -> SessionId:
        return self._session.id

    @property
    def cwd(self) -> str:
        return self._session.cwd

    @property
    def record(self) -> SessionRecord:
        """The stored session as it is now (title, roots kept with it)."""
        return self._session.record

    @property
    def title(self) -> str | None:
        return self._session.record.title

    @property
    def open(self) -> bool:
        return self._session.state is SessionState.OPEN

    @property
    def controls(self) -> SessionControls:
        """The settings (model, mode, thinking effort) and the active roots, to read."""
        return self._controls

    @property
    def branches(self) -> BranchManager:
        """The session's child lines of work (a front end that shows them follows them)."""
        return self._branches

    @property
    def running_turn(self) -> TurnId | None:
        """The turn running on the main line now (what `steer` gives a message to)."""
        turn = self._session.main.turn
        return turn.turn_id if turn is not None and turn.state is TurnState.RUNNING else None

    @property
    def position(self) -> Seq:
        """The main line's published position: a cursor for `subscribe`."""
        return self._session.main.timeline.last_published_seq

    def read_only(self) -> str | None:
        """Why no turn may start here (the workspace is not on this machine), or None."""
        return workspace_missing(self.cwd)

    # --- the turn queue -----------------------------------------------------------------

    def turn_slot(self) -> TurnSlot:
        """A place in the turn queue, registered now (a `cancel` right behind sees it);
        `async with` it to wait for its turn (see `acp_agent.agent._turns`)."""
        slot = TurnSlot(
            lock=self._turn_lock,
            branch=self._session.main,
            loop=self._loop,
            before_waiting=self._tools_started,
            on_done=self._slot_done,
            read_only=self.read_only,
        )
        self._slots.append(slot)
        return slot

    async def prompt(self, content: Sequence[ContentPart]) -> TurnHandle:
        """Run one turn of `content` once the turns before it are over; returns it when it
        is over, `ended` saying how (a front end that does more around the turn, or answers
        once its own subscriber has seen the end, uses `turn_slot`).

        `TurnCancelled` if `cancel` reached it before its turn began.
        """
        watcher = await self.subscribe(_Quiet(), after=None)
        try:
            async with self.turn_slot() as slot:
                if slot.cancelled:
                    raise TurnCancelled("the prompt was cancelled before its turn began")
                turn = await slot.start(content)
                await turn.outcome(seen_by=watcher)
                return turn
        finally:
            await watcher.disconnect()

    def steer(
        self, content: Sequence[ContentPart], *, sent: Sequence[ContentPart | None] = ()
    ) -> str | None:
        """Give `content`, a message the person sent while a turn runs, to that turn;
        returns the message id it is recorded under.

        It is queued on the turn and recorded at the turn's next step boundary (after
        the current model reply or tool batch) as input that joined the turn
        (`UserInputAdopted` with `joined_turn`), so it reaches the turn's next model
        request; a turn that ends before another request records it right before its
        ending (the model reads it with the next prompt). None, with nothing queued,
        when no turn runs (or only a slash command) or the turn is ending: the message
        is still the sender's to send as a prompt (steering never starts a turn).
        `sent` and `PromptTooLarge` as for a prompt.
        """
        return self._loop.steer(content, sent=sent)

    async def _tools_started(self) -> None:
        if self._mcp is not None:
            await self._mcp.wait_for_startup()  # bounded: servers making a first connection

    def _slot_done(self, slot: TurnSlot) -> None:
        if slot in self._slots:
            self._slots.remove(slot)
        if not self._slots:
            self._idle.set()
            self._idle = anyio.Event()

    async def cancel(self) -> int:
        """Cancel the running turn or command, every waiting prompt, and every branch's
        current step (the branches stay open); returns how many prompts."""
        slots = list(self._slots)
        for slot in slots:
            slot._cancel()
        # The branches first: their showings in main's turn end before the turn does.
        await self._branches.cancel_current()
        for slot in slots:
            await slot.cancel_turn()
        return len(slots)

    async def stop_job(self, job_id: str) -> bool:
        """Stop one of the main line's background jobs, as the person does (`/jobs stop`);
        returns once it ended. False when no job has that id."""
        from acp_agent.capabilities import JOBS
        from acp_agent.capabilities.jobs import NoSuchJob

        try:
            await self._session.scope.get(JOBS).stop(job_id, by="person")
        except NoSuchJob:
            return False
        return True

    def cancel_tool_call(self, call_id: str) -> bool:
        """Cut one tool call of the main line short, the turn going on without it (its
        result says it was cancelled); False when no such call is waiting or running."""
        from acp_agent.capabilities._assembly import TOOL_EXECUTOR

        return self._session.main.scope.get(TOOL_EXECUTOR).cancel_call(call_id)

    async def wait_idle(self) -> None:
        """Wait until no prompt is waiting or running."""
        while self._slots:
            await self._idle.wait()

    # --- the session's own work ----------------------------------------------------------

    async def start_work(self, work: SessionWork, *, name: str) -> Any:
        """Start `work(task_status=...)` as the session's own work and return the value it
        reports started with (`task_status.started(value)`).

        It runs in the session's task group, so it outlives its caller (a v2 turn goes on
        after the prompt request that started it is answered) and the session's close
        cancels it and waits for it. What it raises before reporting started is raised
        here, and a caller cancelled before then cancels it; what it raises after is
        logged and ends it alone, never the session. `SessionClosed` once the session
        is closing.
        """
        if not self.open:
            raise SessionClosed(str(self.id))

        async def guarded(*, task_status: TaskStatus[Any]) -> None:
            reporting = _Reporting(task_status)
            try:
                await work(task_status=reporting)
            except Exception:
                if not reporting.reported:
                    raise  # to the caller of `start_work`
                logger.exception("%s of session %s failed", name, self.id)

        try:
            return await self._session.scope.start(guarded, name=name)
        except ScopeClosed:
            raise SessionClosed(str(self.id)) from None

    # --- following it -------------------------------------------------------------------

    async def subscribe(self, subscriber: Subscriber, *, after: Seq | None) -> SessionSubscription:
        """Deliver every event of the main line published after `after` (a cursor: a batch
        end; None: from now) to `subscriber`, in order, then live; `IllegalCut` for a
        cursor that is not one. Any number may follow the session at once."""
        main = self._session.main
        if after is not None and not await main.timeline.is_batch_end(after):
            raise IllegalCut(f"cannot follow {main.id} after {after}: not a published batch end")
        subscription = follow(main, subscriber, after=after)
        self._subscriptions = [s for s in self._subscriptions if s.active]
        self._subscriptions.append(subscription)
        return subscription

    def warm(self) -> None:
        """Fold the main line's history into its model context in the session's background
        work (after a load's answer), then let go of the history the load read, so its first
        prompt waits for neither; a prompt that comes first waits for them, as it would
        have done both itself."""

        async def warm() -> None:
            try:
                await self._loop.context.warm()
            except Exception:
                logger.info("warming the context of %s failed; a prompt folds it", self.id)
            # The load's readers are done with the history it read (the context keeps what
            # it needs): freed now, while the person types, not in their prompt's turn.
            self._session.main.timeline.trim()

        with contextlib.suppress(ScopeClosed):  # closed already: no prompt will need it
            self._session.main.scope.start_soon(warm, name=f"context warm-up {self.id}")

    async def history(self) -> tuple[Seq, list[Event]]:
        """What the main line has published now, and that position."""
        main = self._session.main
        covered = main.timeline.last_published_seq
        return covered, await main.read(lte=covered)

    # --- what a front end keeps for its replays ----------------------------------------------

    async def kept_replay(self, key: str) -> list[bytes]:
        """The chunks a front end kept for this session's replays under `key`
        (`keep_replay`), in order; [] if none, or if they cannot be read now (they are a
        cache: a replay translates the history instead)."""
        try:
            return await self._store.read_output(self.id, _REPLAY_OUTPUT + key)
        except StoreError as exc:
            logger.info("the replay kept for %s could not be read: %s", self.id, exc)
            return []

    def keep_replay(self, key: str, start: int, chunks: Sequence[bytes]) -> None:
        """Keep `chunks` under `key` from chunk `start` on (those before stay), in the
        session's background work and after the writes asked for before this one. A write
        that fails is logged and dropped: a later replay translates what it would have
        held, and keeps it again."""
        self._replay_writes.append((key, start, chunks))
        if self._replay_writing:
            return
        self._replay_writing = True
        try:
            self._session.scope.start_soon(self._write_replays, name=f"replay keeping {self.id}")
        except ScopeClosed:  # closing: nothing more is kept
            self._replay_writing = False
            self._replay_writes.clear()

    async def _write_replays(self) -> None:
        try:
            while self._replay_writes:
                key, start, chunks = self._replay_writes.pop(0)
                try:
                    # A load's lines are kept once it is answered: a client that leaves at
                    # once (a script) closes the session meanwhile, and the next load would
                    # translate it all again. Closing waits for the write, a little.
                    with anyio.CancelScope(shield=True, deadline=anyio.current_time() + _KEEP_S):
                        if start == 0:
                            await self._drop_replays_but(key)
                        await self._store.put_output(
                            self.id, _REPLAY_OUTPUT + key, chunks, start=start
                        )
                except Exception as exc:  # a cache: whatever failed, the session goes on
                    logger.info("a replay of %s could not be kept: %s", self.id, exc)
        finally:
            self._replay_writing = False

    async def _drop_replays_but(self, key: str) -> None:
        """Forget the lines kept under other keys: a key names the code and the client that
        made them, so after an upgrade (or for a fork, its parent's) they are never sent
        again, and each would hold a whole replay for good. Two kinds of client taking
        turns on one session translate their loads again; nothing is lost."""
        for output, _ in await self._store.list_outputs(self.id):
            if output.startswith(_REPLAY_OUTPUT) and output != _REPLAY_OUTPUT + key:
                await self._store.put_output(self.id, output, [])

    # --- settings, title, roots ---------------------------------------------------------

    def change(self, option_id: str, value: str) -> dict[str, Any]:
        """The values choosing `value` for option `option_id` adopts (not adopted yet);
        `InvalidSetting` if it is not one."""
        return self._controls.change(option_id, value, self._models)

    async def set_option(self, option_id: str, value: str) -> dict[str, Any]:
        """Choose `value` for option `option_id`; returns the values adopted.

        Answered by `ConfigurationAdopted` on main; `InvalidSetting` for an option or
        value that is not offered now (nothing recorded)."""
        values = self.change(option_id, value)
        await self.adopt(values)
        return values

    async def adopt(self, values: Mapping[str, Any]) -> None:
        """Record settings (`ConfigurationAdopted` on main) and apply them."""
        await self._controls.adopt(self._session.main, values)

    async def set_instructions(self, instructions: ClientInstructions) -> None:
        """Make `instructions` the client's for this session (a load or a resume that
        sends them): recorded (`ConfigurationAdopted`) only when they differ from the
        ones kept; every line's next request reads them."""
        if instructions != self._controls.instructions:
            await self.adopt({SYSTEM_PROMPT_KEY: instructions.as_value()})

    async def set_title(self, title: str) -> None:
        """Answered by `SessionMetadataChanged` on main; the stored session follows."""
        await self._session.set_title(title)

    async def activate(self, sent: Sequence[str] | None) -> None:
        """Activate the roots a front end sent when it opened the session (none if it sent
        none); a list it sent is also kept with the session, whose own stays otherwise."""
        directories = other_roots(self.cwd, sent)
        if sent is not None:
            await self._session.set_additional_directories(directories)
        self._controls.set_additional_directories(directories)

    # --- slash commands, MCP ------------------------------------------------------------

    @property
    def commands(self) -> CommandRunner:
        """The session's slash commands (built on first use: they read its services)."""
        if self._commands is None:
            from acp_agent.agent._commands import build_runner

            self._commands = build_runner(
                self._session,
                self._controls,
                self._models,
                mcp=self._mcp,
                config_dir=self._config_dir,
                clock=self._clock,
            )
        return self._commands

    async def connect_mcp(self, servers: Sequence[McpServerConfig]) -> None:
        """Start the MCP servers a front end names, in the background (never waits)."""
        if self._mcp is not None:
            await self._mcp.connect(list(servers))

    # --- rewind, fork, delete, close ----------------------------------------------------

    async def rewind(self, message_id: str) -> RewindOutcome:
        """Back to just before the person's message `message_id`: its files and its
        conversation (answered by `ConversationRewound` on main). `SessionBusy` while a
        prompt runs; the rewinder's `NoRewindPoint` / `RewindRefused` otherwise."""
        if self._turn_lock.locked():
            raise SessionBusy("a prompt is running; cancel it first")
        self._turn_lock.acquire_nowait()  # no prompt may start while the files go back
        try:
            return await self._rewinder.rewind(message_id)
        finally:
            self._turn_lock.release()

    async def fork(
        self,
        *,
        anchor: ForkAnchor | None = None,
        additional_directories: Sequence[str] | None = None,
        instructions: ClientInstructions | None = None,
    ) -> SessionHandle:
        """A new session with this one's history up to `anchor` (see `Agent.fork`)."""
        return await self._agent.fork(
            self.id,
            anchor=anchor,
            additional_directories=additional_directories,
            instructions=instructions,
        )

    async def delete(self) -> None:
        """Close the session and delete it with what is kept for it (see `Agent.delete`)."""
        await self._agent.delete(self.id)

    async def close(self) -> None:
        """Unload the session: cancel its prompts, wait (briefly) until they are answered,
        end every subscription, then unload it; it stays stored. Idempotent."""
        with anyio.CancelScope(shield=True):
            await self.cancel()
            with anyio.move_on_after(_CLOSE_BUDGET_S):
                await self.wait_idle()
            await self.unload()

    async def unload(self) -> None:
        """End every subscription and unload the session (no cancel first: `close`)."""
        with anyio.CancelScope(shield=True):
            for subscription in self._subscriptions:
                await subscription.disconnect()
            self._subscriptions.clear()
            await self._session.aclose()
            self._agent._forget(self)


class _Reporting:
    """A task status that remembers whether the work reported started (`start_work`)."""

    def __init__(self, status: TaskStatus[Any]) -> None:
        self._status = status
        self.reported = False

    def started(self, value: Any = None) -> None:
        self.reported = True
        self._status.started(value)


class _Quiet:
    """A subscriber that only watches turns end (`SessionHandle.prompt`)."""

    name = "turn watcher"

    async def handle(self, event: Event) -> None:
        return None
