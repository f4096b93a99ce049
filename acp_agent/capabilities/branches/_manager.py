"""Lines of work in one session: the children the main line starts, followed and shown.

A child is a core `Branch` of main: it inherits main's history up to the
latest quiet cut (`quiet_cut`: no reply, tool call or compaction open), gets
its task in its `branch/identity` state, and runs its own model loop, context
and tools, concurrently with main and its siblings (one workspace, each with
its own read stamps). `BranchManager` (a session service) starts, follows and
steers them:

- **following**: a `ChildFollower` (`_children`) on each child's timeline
  keeps its state, its steps as short lines, and the text of its last reply:
  its report;
- **reporting**: when a child's turn ends, main gets a `<notification
  source="branch/ID">` with the report; it reaches main's next request;
- **showing**: while a turn of main runs, each child is shown in it as a
  `BranchShown` fact on main (the adapter shows it as a tool call): updated as
  the child works, completed when it ends; each showing carries what the
  child's model requests used so far, so main's record holds the session's
  usage, its branches' included. When main's turn ends first, the
  showing stays open (still working, never shown done) and says that its end
  shows at the next prompt; at the start of main's next turn, before the
  model's reply, that same showing goes on or ends with what the child did
  meanwhile. Outside main's turns nothing is recorded on main but
  notifications (no update reaches the editor between turns);
- **asking**: a child's permission question waits for a turn of main, and is
  then asked on the child's showing, naming it (`GatedPrompter`,
  `question_on_main`); a front end that takes the children's questions itself
  (a `BranchSide`, given when the session opens: `show_as_sessions`) is asked
  at once: the stdio agent's, on the child's session; the app server's, of each
  client where it sees the child (on its session, or on main's turn);
- **running commands**: a child shown as a row of main runs its commands here,
  not in the editor's terminals (`client_of`); one shown as a session of its own
  uses the editor's terminals on its own session (the side's `client_of`),
  embedded in its own tool call;
- **watching**: such a front end watches the children (`ChildWatcher`): it
  hears of each as it opens, of each change, and of each turn of main;
- **steering**: a message (`BranchMessageReceived`, a `<branch-message>` to
  the child) starts a turn of a child that is not working; cancel stops every
  child's current step; close ends a child's line of work, never a sibling's;
- **ending what could not end on record**: a child's turn whose ending the
  store could not take (a full disk) ends here all the same, failed (so
  `wait` returns), and the person is told at once (a notice); its ending,
  main's notification and the closing of its showing are recorded at main's
  next turn, once the store takes them. A child found ended after a restart
  has its showing that a dead agent left open closed as it loads, with the
  reason, so a replay never shows it working.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, Protocol

import anyio
import attrs

from acp_agent.capabilities.branches._children import ChildBranch, ChildFollower, ChildState
from acp_agent.capabilities.context import GuideEntry, record_notification
from acp_agent.capabilities.permissions import (
    PermissionAnswer,
    PermissionPrompter,
    PermissionQuestion,
)
from acp_agent.core import (
    Branch,
    BranchClosed,
    BranchId,
    BranchMessageReceived,
    BranchShown,
    CoreMisuse,
    NotificationReceived,
    ScopeClosed,
    Session,
    StoreError,
    StoreFull,
    Turn,
    TurnId,
    new_id,
    quiet_cut,
)
from acp_agent.toolkit import (
    NO_NOTICES,
    ClientBridge,
    Notice,
    NoticeSeverity,
    NoticeSink,
    TerminalsWithheld,
    truncate_middle,
)

__all__ = (
    "BRANCHES_GUIDE_ENTRY",
    "BRANCHES_PRODUCER",
    "DEFAULT_BRANCH_LIMIT",
    "BranchLimitReached",
    "BranchManager",
    "BranchSide",
    "ChildWatcher",
    "GatedPrompter",
    "NotABranch",
)

logger = logging.getLogger(__name__)

#: The producer of the facts the manager records.
BRANCHES_PRODUCER: Final = "capabilities.branches"
#: How many children may work at once, unless configured.
DEFAULT_BRANCH_LIMIT: Final = 4
#: The most of a report a notification carries (the whole is in the child's history).
_REPORT_CHARS: Final = 20_000
#: The last line of a showing left open when main's turn ends (the child still works).
_STILL_WORKING: Final = "Still working; its end shows at your next prompt."

BRANCHES_GUIDE_ENTRY: Final = GuideEntry(
    "core/branches",
    "core",
    order=45,
    text="""\
## Branches: other lines of work in this session

The main line can start branches with the `branch` tool: each is another line of work \
in the same session and workspace, working concurrently. A branch inherits the \
conversation up to where it starts and then knows only its own work; tell it what it \
needs in its task. Follow them with `branch_status`, steer one with `branch_message`, \
wait for them with `branch_wait`, and end one with `branch_close`. When a branch's work \
ends, its report arrives as `<notification source="branch/ID">`: the result of work you \
started, not a new request from the person. Branches share the files: give each its \
own part of the work, and re-read a file another branch may have changed.

If `<state source="branch/identity">` says you are a branch, that block gives your task \
and your parent; the history before your start belongs to your parent. Do the task \
with your tools; you cannot start branches. Your last message when you are done is \
your report to your parent: make it complete and self-contained. \
`<branch-message from="ID">` is a message from your parent.""",
)


class ChildWatcher(Protocol):
    """Who else follows the children (a front end showing each as a session of its own)."""

    async def child_attached(self, child: ChildBranch) -> None:
        """A child opened; called before any turn of it starts."""
        ...

    async def child_changed(self, child: ChildBranch) -> None:
        """A child's state, steps or report changed."""
        ...

    async def main_turn_started(self) -> None:
        """A turn of main began (what waits for one may be shown now)."""
        ...


class BranchSide(ChildWatcher, Protocol):
    """A front end that shows each child as a session of its own (to its clients that
    take them): it watches the children, and takes a child's questions and editor
    requests at once."""

    def prompter_of(self, branch_id: BranchId) -> PermissionPrompter:
        """Who answers the child's permission questions, on its session."""
        ...

    def client_of(self, branch_id: BranchId) -> ClientBridge:
        """The child's own editor (files, terminals), on its session."""
        ...


class BranchLimitReached(Exception):
    """As many children are working as allowed; the model is told, nothing queues.

    Its text says so for anyone; `advice` tells the model what it can do.
    """

    def __init__(self, message: str, advice: str | None = None) -> None:
        super().__init__(message)
        self.advice = advice


class NotABranch(LookupError):
    """No child line of work has that id (or that title), or it has ended."""


class BranchManager:
    """A session's child lines of work (see the module docstring).

    **Parameters:**

    * `session`: the session whose main line starts children.
    * `start_turn`: starts a turn of a branch with input already on record
      (its model loop's `start_turn(turn_id, [])`) and returns it.
    * `limit`: how many children may work at once.
    * `clock`: wall time for the last activity.
    * `notices`: where the person hears of a child the store stopped.
    """

    name = "branch lines"

    def __init__(
        self,
        session: Session,
        *,
        start_turn: Callable[[Branch, TurnId], Awaitable[Turn]],
        limit: int = DEFAULT_BRANCH_LIMIT,
        clock: Callable[[], float] = time.time,
        notices: NoticeSink = NO_NOTICES,
    ) -> None:
        self._session = session
        self._notices = notices
        self._start_turn = start_turn
        self.limit = limit
        self._clock = clock
        self._main: Branch | None = None
        self._children: dict[BranchId, ChildBranch] = {}
        #: Held while deciding to record on main: no showing slips past main's turn end.
        self._display_lock = anyio.Lock()
        self._main_turn_open = False
        self._main_turn_opened = anyio.Event()
        self._watchers: list[ChildWatcher] = []
        #: Asks a child's questions at once, on the child's own (a front end that shows
        #: children as sessions: `show_as_sessions`); None: they wait for a turn of main.
        self.ask_directly: Callable[[BranchId], PermissionPrompter] | None = None
        #: A child's own editor, terminals included (the same front end; None: a child
        #: shown as a row of main runs its commands without the editor's terminals).
        self.client_directly: Callable[[BranchId], ClientBridge] | None = None

    # --- assembly -----------------------------------------------------------------------

    @property
    def main(self) -> Branch:
        if self._main is None:
            raise CoreMisuse("the session's main line is not open yet")
        return self._main

    def children(self) -> list[ChildBranch]:
        """Every child line of work known here, in the order they were started."""
        return list(self._children.values())

    def child(self, branch_id: str) -> ChildBranch:
        """The child with this id, or else the one child with this title."""
        child = self._children.get(BranchId(branch_id))
        if child is not None:
            return child
        titled = [child for child in self._children.values() if child.title == branch_id]
        if len(titled) == 1:
            return titled[0]
        if titled:
            raise NotABranch(f"several branches are titled {branch_id!r}; name one by its id")
        raise NotABranch(f"no branch {branch_id!r} in this session")

    def client_of(self, branch_id: BranchId, shared: ClientBridge) -> ClientBridge:
        """The editor a child's calls use: its own, when it is shown as a session of its
        own; else the session's `shared` one without terminals (one created for it would
        float outside its row, or be refused between prompts), so its commands run here."""
        if self.client_directly is not None:
            return self.client_directly(branch_id)
        return TerminalsWithheld(shared)

    def show_as_sessions(self, side: BranchSide) -> None:
        """Show each child as a session of its own through `side` (at assembly: the
        session's front end gave it when the session opened)."""
        self.watch(side)
        self.ask_directly = side.prompter_of
        self.client_directly = side.client_of

    def stop_showing_as_sessions(self, side: BranchSide) -> None:
        """Undo `show_as_sessions` (the front end's side closes before the session): a
        child's questions wait for a turn of main again, its commands run here."""
        self.unwatch(side)
        if self.ask_directly == side.prompter_of:
            self.ask_directly = None
            self.client_directly = None

    def watch(self, watcher: ChildWatcher) -> None:
        """Tell `watcher` of every child from now on (those open now: see `lines`)."""
        self._watchers.append(watcher)

    def unwatch(self, watcher: ChildWatcher) -> None:
        if watcher in self._watchers:
            self._watchers.remove(watcher)

    def attach_main(self, main: Branch) -> None:
        """The main line opened: show children in its turns."""
        self._main = main
        main.observe_turns(self)

    async def attach_child(self, branch: Branch, *, title: str, task: str) -> ChildBranch:
        """A child opened (started now, or loaded): follow it from its timeline."""
        child = ChildBranch(branch, title, task, last_activity=self._clock())
        self._children[branch.id] = child
        child.notified, left_open = await self._told_and_shown(branch.id)
        child.follower = ChildFollower(child, on_change=self._changed, on_end=self._ended)
        await branch.dispatcher.subscribe_rebuilt(child.follower)
        for watcher in list(self._watchers):
            await watcher.child_attached(child)
        closed = False
        if not child.state.working:
            # A dead agent left it shown working: those showings end now, before a replay.
            for display_id in left_open:
                child.display_id, child.display_recorded, child.display_done = (
                    display_id,
                    True,
                    False,
                )
                await self._close_showing(child)
                closed = True
        if child.turns_ended > child.notified:
            # It ended while nothing could tell main (a restart cut it short): tell main
            # now, and show it in main's next turn (unless its row was just ended above).
            await (self._notify(child) if closed else self._ended(child))
        return child

    # --- main's turns -------------------------------------------------------------------

    async def turn_started(self, turn: Turn) -> None:
        async with self._display_lock:
            self._main_turn_open = True
            for child in self._children.values():
                await self._record_owed(child)
            for child in self._children.values():
                if child.display_id is not None and not child.display_done:
                    await self._show(child, new=False)  # left open: it goes on, or ends
                elif child.unshown or child.state.working:
                    await self._show(child, new=True)
            for watcher in list(self._watchers):
                await watcher.main_turn_started()
            # After the showings: a waiting question is asked on its branch's showing.
            self._main_turn_opened.set()

    async def turn_ending(self, turn: Turn) -> None:
        async with self._display_lock:
            for child in self._children.values():
                if child.display_id is None or child.display_done:
                    continue
                if not child.state.working:  # it ended as the turn did: shown ended
                    await self._show(child, new=False)
                    continue
                # Never shown done while it works: open, saying when its end shows.
                lines = [*child.steps, _STILL_WORKING]
                await self._record_shown(child, child.state.value, lines, done=False)
                child.shown_look = (
                    child.display_id,
                    child.state.value,
                    tuple(lines),
                    None,
                    child.usage,
                )
            self._main_turn_open = False
            self._main_turn_opened = anyio.Event()

    @property
    def main_turn_open(self) -> bool:
        """Whether a turn of main runs now."""
        return self._main_turn_open

    async def wait_main_turn(self) -> None:
        """Return once a turn of main runs (at once if one does)."""
        while not self._main_turn_open:
            await self._main_turn_opened.wait()

    async def question_on_main(
        self, branch_id: BranchId, question: PermissionQuestion
    ) -> PermissionQuestion:
        """A child's `question` as it is asked on main: once a turn of main runs, on the
        branch's showing in it (the tool call the person sees for the branch), titled
        with the branch's title, so the person sees whose call it is."""
        await self.wait_main_turn()
        child = self.child(branch_id)
        return attrs.evolve(
            question,
            call_id=child.display_id or f"{branch_id}/{question.call_id}",
            title=f"Branch {child.title!r} asks: {question.title}",
        )

    # --- what the model and the person do ------------------------------------------------

    async def start(self, task: str, title: str | None = None) -> ChildBranch:
        """Start a child of main on `task`, at main's latest quiet cut; returns at once.

        `BranchLimitReached` when `limit` children are working.
        """
        working = [child for child in self._children.values() if child.state.working]
        if len(working) >= self.limit:
            working_now = "1 branch is" if len(working) == 1 else f"{len(working)} branches are"
            raise BranchLimitReached(
                f"{working_now} working, the most this session allows ({self.limit})",
                "wait for one (branch_wait) or close one (branch_close)",
            )
        main = self.main
        label = (title or _title_of(task)).strip() or "branch"
        cut = await quiet_cut(main)
        branch = await self._session.create_branch(main, at=cut, label=label, task=task)
        child = self._children[branch.id]  # attached as its services opened
        await self._begin(child)
        return child

    async def message(self, branch_id: str, text: str) -> ChildBranch:
        """Send a child a message from main; a child not working starts a turn for it."""
        child = self.child(branch_id)
        if child.state is ChildState.CLOSED:
            raise NotABranch(f"branch {branch_id!r} has ended; start a new one")
        message = BranchMessageReceived(self.main.id, new_id("msg"), text)
        await child.branch.record_fact(message, producer=BRANCHES_PRODUCER)
        if child.branch.turn is None:
            await self._begin(child)
        return child

    async def wait(
        self, branch_ids: Sequence[str] = (), *, every: bool = False, timeout_s: float = 60.0
    ) -> list[ChildBranch]:
        """Wait until one (or `every`) of the children named (default: all) is not working,
        at most `timeout_s`; returns them as they are then."""
        children = [self.child(i) for i in branch_ids] if branch_ids else self.children()
        with anyio.move_on_after(timeout_s):
            while children:
                idle = [child for child in children if not child.state.working]
                if (every and len(idle) == len(children)) or (not every and idle):
                    break
                async with anyio.create_task_group() as group:

                    async def woken(child: ChildBranch) -> None:
                        await child.wait_change()
                        group.cancel_scope.cancel()

                    for child in children:
                        if child.state.working:
                            group.start_soon(woken, child)
        return children

    async def close(
        self, branch_id: str, *, reason: str = "closed by the main line"
    ) -> ChildBranch:
        """End a child's line of work (its current step is cancelled); siblings go on."""
        child = self.child(branch_id)
        if child.state is ChildState.CLOSED:
            return child
        await child.branch.end(reason)
        # Its dispatcher closed with it: fold in what its follower did not get to see.
        if child.follower is not None:
            for event in await child.branch.read(gt=child.follower.seen):
                child.follower.fold(event)
        child.state = ChildState.CLOSED
        child.notified = child.turns_ended  # main closed it: nothing to tell main
        await self._changed(child)
        return child

    async def cancel_child(self, branch_id: str) -> bool:
        """Cancel one child's current step (it stays open); whether it had one."""
        child = self.child(branch_id)
        turn = child.branch.turn
        if turn is None:
            return False
        await child.branch.cancel_turn(turn.turn_id)
        return True

    async def cancel_current(self) -> int:
        """Cancel every child's current step (`session/cancel`); they stay open."""
        cancelled = 0
        for child in list(self._children.values()):
            turn = child.branch.turn
            if turn is not None:
                cancelled += 1
                await child.branch.cancel_turn(turn.turn_id)
        return cancelled

    # --- following a child ----------------------------------------------------------------

    async def _begin(self, child: ChildBranch) -> None:
        """Start a turn of the child (its follower shows it: the turn's input is adopted)."""
        before = child.state
        child.state = ChildState.RUNNING
        child.last_activity = self._clock()
        try:
            turn = await self._start_turn(child.branch, TurnId(new_id("turn")))
        except BaseException:
            child.state = before
            raise
        follow = functools.partial(self._follow_turn, child, turn)
        with contextlib.suppress(ScopeClosed):  # closing: the turn is interrupted on record
            child.branch.scope.start_soon(follow, name=f"branch turn {turn.turn_id}")

    async def _follow_turn(self, child: ChildBranch, turn: Turn) -> None:
        """Once a child's turn settled: if the store could not take its ending, it ends
        here all the same, failed, so no one waits on it (see `_record_owed`)."""
        await turn.wait_settled()
        error = turn.record_error
        if turn.unrecorded_ending is None or not isinstance(error, StoreError):
            return
        reason = "storage_full" if isinstance(error, StoreFull) else "storage_unavailable"
        logger.error(
            "branch %s stopped: its work could not be recorded (%s)", child.branch_id, error
        )
        self._notices(
            Notice(
                NoticeSeverity.ERROR,
                "The disk is full" if isinstance(error, StoreFull) else "The session store failed",
                f"Branch {child.title!r} stopped: its work could not be recorded ({error}).",
            )
        )
        child.end_unrecorded(turn.turn_id, reason)
        await self._ended(child)

    async def _record_owed(self, child: ChildBranch) -> None:
        """Record what the store could not take when it happened (hold the display lock, at
        the start of a turn of main): the child's turn ending, main's notification, the
        end of its showing. What still cannot be recorded stays owed."""
        try:
            if child.unrecorded_turn is not None:
                await child.branch.record_owed_ending()
            await self._notify(child)
            if child.display_id is not None and not child.display_done and not child.state.working:
                await self._close_showing(child)
        except StoreError as exc:
            logger.warning("branch %s: still cannot record its end: %s", child.branch_id, exc)
        except (BranchClosed, ScopeClosed):
            pass

    async def _changed(self, child: ChildBranch) -> None:
        """A child changed: show it in main's turn if one runs, else show it later."""
        child.last_activity = self._clock()
        child.note_change()
        for watcher in list(self._watchers):
            try:
                await watcher.child_changed(child)
            except Exception:
                logger.exception("a watcher of branch %s failed", child.branch_id)
        async with self._display_lock:
            if self._main_turn_open:
                await self._show(child, new=child.display_done)
            else:
                child.unshown = True

    async def _ended(self, child: ChildBranch) -> None:
        await self._notify(child)
        await self._changed(child)

    async def _show(self, child: ChildBranch, *, new: bool) -> None:
        """Record how the child looks now (hold the display lock, main's turn open)."""
        if new:  # unique across restarts too: a replay shows every showing apart
            child.display_id = new_id("show")
            child.display_recorded = False
        done = not child.state.working
        report = child.report if done else None
        look = (child.display_id, child.state.value, tuple(child.steps), report, child.usage)
        if look != child.shown_look:  # the same look again tells the editor nothing
            await self._record_shown(child, child.state.value, [*child.steps], done=done)
            child.shown_look = look
        child.unshown = False

    async def _record_shown(
        self, child: ChildBranch, state: str, lines: list[str], *, done: bool
    ) -> None:
        assert child.display_id is not None
        why = child.why_ended()
        if done and why:  # cut short from outside (a restart, the store): say so
            lines = [*lines, f"{why[0].upper()}{why[1:]}."]
        fact = BranchShown(
            child.branch_id,
            child.display_id,
            child.title,
            state,
            lines,
            child.report if not child.state.working else None,
            done,
            child.usage,
        )
        try:
            await self.main.record_fact(fact, producer=BRANCHES_PRODUCER)
        except (BranchClosed, ScopeClosed):
            return  # the session is closing
        except StoreError as exc:
            # Not on record (a full disk): ended at main's next turn (`_record_owed`).
            logger.warning("branch %s could not be shown: %s", child.branch_id, exc)
            return
        child.display_recorded = True
        child.display_done = done

    async def _close_showing(self, child: ChildBranch) -> None:
        """End the child's showing left open on record (a dead agent's, or one the store
        could not close), as the child is now, saying why it ended, if not by itself."""
        if not child.display_recorded:
            child.display_done = True  # never on record: nothing shows it
            return
        await self._record_shown(child, child.state.value, [*child.steps], done=True)
        if child.display_done:
            child.unshown = False  # it shows the child as it is now: no second row for it

    async def _notify(self, child: ChildBranch) -> None:
        """Tell main the child's turn ended, with its report."""
        if child.notified >= child.turns_ended:
            return
        verb = {
            ChildState.FINISHED: "finished its work",
            ChildState.FAILED: "failed",
            ChildState.INTERRUPTED: "was interrupted before it finished (it is not re-run)",
            ChildState.CLOSED: "was closed",
        }.get(child.state, "stopped")
        if child.stop_reason == "cancelled":
            verb = "was stopped by the person before it finished; message it to go on"
        elif child.state is ChildState.FINISHED and child.stop_reason not in (None, "end_turn"):
            verb = f"stopped ({child.stop_reason})"
        elif child.state is ChildState.FAILED and child.why_ended():
            verb = f"failed: {child.why_ended()}"
        report = truncate_middle(
            child.report or "(no report)", _REPORT_CHARS, "{omitted} characters left out"
        )
        text = f'Branch {child.branch_id} ("{child.title}") {verb}. Its report:\n{report}'
        try:
            await record_notification(self.main, f"branch/{child.branch_id}", text)
        except (BranchClosed, ScopeClosed):
            return
        except StoreError as exc:
            # Not on record (a full disk): told at main's next turn (`_record_owed`).
            logger.warning("main could not be told of branch %s: %s", child.branch_id, exc)
            return
        child.notified = child.turns_ended

    async def _told_and_shown(self, branch_id: BranchId) -> tuple[int, list[str]]:
        """From main's record: how often main was told of the child's end, and its showings
        left open (by a dead agent)."""
        main = self._main
        if main is None:
            return 0, []
        source = f"branch/{branch_id}"
        told, done_by_showing = 0, {}
        for event in await main.read():
            payload = event.payload
            if isinstance(payload, NotificationReceived) and payload.source == source:
                told += 1
            elif isinstance(payload, BranchShown) and payload.branch_id == branch_id:
                done_by_showing[payload.display_id] = payload.done
        return told, [shown for shown, done in done_by_showing.items() if not done]


def _title_of(task: str) -> str:
    first = task.strip().splitlines()[0] if task.strip() else "branch"
    return first if len(first) <= 60 else first[:59].rstrip() + "…"


class GatedPrompter:
    """A child's permission questions: asked only during a turn of main, naming the branch.

    Outside main's turns a child waits (its state: waiting for approval); the
    question goes out at the start of main's next turn. With the manager's
    `ask_directly` set, it is asked at once, on the child's own session. It is asked on the
    branch's showing in main's turn (the tool call the editor shows for the
    branch), titled with the branch's title, so the person sees whose call it is.
    """

    def __init__(
        self,
        manager: BranchManager,
        branch_id: BranchId,
        prompter: Callable[[], PermissionPrompter],
    ) -> None:
        self._manager = manager
        self._branch_id = branch_id
        self._prompter = prompter

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        if self._manager.ask_directly is not None:  # the child is a session of its own
            return await self._manager.ask_directly(self._branch_id).ask(question)
        named = await self._manager.question_on_main(self._branch_id, question)
        return await self._prompter().ask(named)
