"""One child line of work as its parent sees it: its state, steps and report.

`ChildFollower` subscribes to a child's timeline and folds each of its events
into a `ChildBranch`: the state (running, waiting for approval, finished,
failed, interrupted, closed), a short line per step (a tool call runs, then
shows its outcome), the text of its last reply, its report, and what its model
requests used (`usage`, shown with it). The manager (`_manager`) decides what
to show and tell from it.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
import attrs

from acp_agent.core import (
    NO_SEQ,
    Branch,
    BranchClosed,
    BranchEnded,
    BranchId,
    BranchMessageReceived,
    CompactionRecorded,
    Event,
    ModelRequestFinished,
    ModelRequestStarted,
    ModelTextDelta,
    PermissionAnswered,
    PermissionAsked,
    ScopeClosed,
    Seq,
    Timeline,
    ToolCallRequested,
    ToolResultRecorded,
    TurnCancelRequested,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    TurnStopReason,
    Usage,
    UserInputAdopted,
)

__all__ = ("MAX_STEP_LINES", "ChildBranch", "ChildFollower", "ChildState")

logger = logging.getLogger(__name__)

#: The most step lines a child keeps (the newest).
MAX_STEP_LINES: Final = 20


class ChildState(enum.StrEnum):
    """Where a child line of work is."""

    RUNNING = "running"
    #: Its tool call waits for the person's approval.
    WAITING = "waiting"
    #: Its last turn finished; it can be messaged again.
    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    #: Its line of work ended.
    CLOSED = "closed"

    @property
    def working(self) -> bool:
        return self in (ChildState.RUNNING, ChildState.WAITING)


#: The states in which a turn can have been cut short from outside the model.
_CUT_SHORT: Final = frozenset({ChildState.FAILED, ChildState.INTERRUPTED})
#: Why, by stop reason, as the person and the main line read it.
_WHY: Final = {
    "interrupted": "the agent stopped while it worked; it is not re-run",
    "storage_full": "the disk was full, so its work could not be recorded and it stopped",
    "storage_unavailable": "its work could not be recorded (the session store failed), "
    "so it stopped",
}


@attrs.define(eq=False)
class ChildBranch:
    """What is known of one child: its state, steps and report, and how it is shown."""

    branch: Branch
    title: str
    task: str
    state: ChildState = ChildState.FINISHED
    #: Its steps, a line each (the newest `MAX_STEP_LINES`).
    steps: list[str] = attrs.field(factory=list)
    #: The text of its last finished turn's last reply.
    report: str | None = None
    #: How its last turn ended (a stop reason; `cancelled` when the person stopped it,
    #: `interrupted` when a restart cut it short, `storage_full` or `storage_unavailable`
    #: when the store could not record its work), None while it runs.
    stop_reason: str | None = None
    last_activity: float = 0.0
    #: Turns of it that ended, and how many of those main was notified of.
    turns_ended: int = 0
    notified: int = 0
    #: Its current showing in a turn of main, whether that showing is on record, and
    #: whether it is over.
    display_id: str | None = None
    display_recorded: bool = False
    display_done: bool = True
    #: Its turn whose ending the store could not take: counted as ended here, and
    #: recorded once the store takes it (that record is not counted again).
    unrecorded_turn: TurnId | None = None
    #: Something changed while main had no turn: show it at the next one.
    unshown: bool = False
    #: What its model requests used, all its turns together.
    usage: Usage = attrs.field(factory=Usage)
    #: What was last recorded of it (showing, state, steps, report, usage).
    shown_look: tuple[object, ...] = ()
    #: Follows its timeline (set once it is attached).
    follower: ChildFollower | None = None
    _reply: list[str] = attrs.field(factory=list)
    _titles: dict[str, str] = attrs.field(factory=dict)
    _changed: anyio.Event = attrs.field(factory=anyio.Event)

    @property
    def branch_id(self) -> BranchId:
        return self.branch.id

    def last_active(self) -> str:
        """When it last did something, as the local time of day."""
        return time.strftime("%H:%M:%S", time.localtime(self.last_activity))

    def summary(self) -> str:
        """One line for `branch_status`."""
        state, when = self.state.value, self.last_active()
        why = self.why_ended()
        state = f"{state}: {why}" if why else state
        return f"{self.branch_id} {self.title!r}: {state} (last activity {when})"

    def why_ended(self) -> str | None:
        """Why its last turn ended without finishing its work, when it was not the model's
        doing: a restart cut it short, or the store could not record it."""
        if self.state not in _CUT_SHORT:
            return None
        return _WHY.get(self.stop_reason or "")

    def end_unrecorded(self, turn_id: TurnId, stop_reason: str) -> None:
        """Its turn `turn_id` settled, but its ending could not be recorded (`stop_reason`:
        `storage_full` or `storage_unavailable`): it ended all the same, failed."""
        self.unrecorded_turn = turn_id
        self.turns_ended += 1
        self.state = ChildState.FAILED
        self.stop_reason = stop_reason
        self.report = "".join(self._reply).strip() or None

    async def wait_change(self) -> None:
        await self._changed.wait()

    def note_change(self) -> None:
        """Wake whoever waits for it to change (`wait_change`)."""
        self._changed.set()
        self._changed = anyio.Event()


class ChildFollower:
    """Follows one child's timeline into its `ChildBranch` (a rebuilding subscriber).

    `on_change` hears of a change worth showing, `on_end` of the end of one of
    its turns; their failures are logged, never raised into the dispatcher.
    """

    def __init__(
        self,
        child: ChildBranch,
        *,
        on_change: Callable[[ChildBranch], Awaitable[None]],
        on_end: Callable[[ChildBranch], Awaitable[None]],
    ) -> None:
        self.child = child
        self._on_change = on_change
        self._on_end = on_end
        #: The last event of the child it folded in.
        self.seen = NO_SEQ

    @property
    def name(self) -> str:
        return f"branch follower {self.child.branch_id}"

    async def rebuild(self, timeline: Timeline) -> Seq:
        own = self.child.branch_id
        for event in await timeline.read():
            if event.branch_id == own:
                self.fold(event)
        self.seen = timeline.last_published_seq
        return self.seen

    def fold(self, event: Event) -> tuple[bool, bool]:
        """Fold in one event of the child; returns (changed, its turn ended)."""
        self.seen = max(self.seen, event.seq)
        return self._apply(event)

    async def handle(self, event: Event) -> None:
        if event.seq <= self.seen:
            return
        changed, ended = self.fold(event)
        try:
            if ended:
                await self._on_end(self.child)
            elif changed:
                await self._on_change(self.child)
        except (BranchClosed, ScopeClosed):
            pass  # the session is closing
        except Exception:
            logger.exception(
                "following branch %s failed at event %d", self.child.branch_id, event.seq
            )

    def _apply(self, event: Event) -> tuple[bool, bool]:
        """Fold one of the child's own events; returns (changed, its turn ended)."""
        child, payload = self.child, event.payload
        if (
            isinstance(payload, TurnEnded | TurnInterrupted)
            and payload.turn_id == child.unrecorded_turn
        ):
            child.unrecorded_turn = None  # its end, owed to the record: counted already
            return True, False
        if isinstance(payload, UserInputAdopted):
            child.state = ChildState.RUNNING
            child.stop_reason = None
            child._reply = []
            return True, False
        if isinstance(payload, BranchMessageReceived):
            _add_step(child, "Got a message from the main line")
            return True, False
        if isinstance(payload, ModelRequestStarted):
            child._reply = []
            return False, False
        if isinstance(payload, ModelRequestFinished | CompactionRecorded):
            # Shown with the change that follows (its calls, or its turn's end).
            child.usage = child.usage.plus(payload.usage)
            return False, False
        if isinstance(payload, ModelTextDelta):
            child._reply.append(payload.text)
            return False, False
        if isinstance(payload, ToolCallRequested):
            title = payload.title or payload.tool
            child._titles[payload.call_id] = title
            _add_step(child, f"→ {title}")
            return True, False
        if isinstance(payload, ToolResultRecorded):
            title = child._titles.get(payload.call_id, payload.call_id)
            _settle_step(child, f"→ {title}", f"{'✗' if payload.is_error else '✓'} {title}")
            return True, False
        if isinstance(payload, PermissionAsked):
            child.state = ChildState.WAITING
            _add_step(child, f"Waiting for approval: {child._titles.get(payload.call_id, '')}")
            return True, False
        if isinstance(payload, PermissionAnswered):
            if child.state is ChildState.WAITING:
                child.state = ChildState.RUNNING
            waiting = f"Waiting for approval: {child._titles.get(payload.call_id, '')}"
            if waiting in child.steps:
                child.steps.remove(waiting)
            return True, False
        if isinstance(payload, TurnCancelRequested):
            child.stop_reason = "cancelled"
            return False, False
        if isinstance(payload, TurnEnded | TurnInterrupted):
            child.turns_ended += 1
            child.report = "".join(child._reply).strip() or None
            if isinstance(payload, TurnInterrupted):
                child.state = ChildState.INTERRUPTED
                child.stop_reason = child.stop_reason or "interrupted"
            else:
                child.state = (
                    ChildState.FAILED
                    if payload.stop_reason == TurnStopReason.ERROR
                    else ChildState.FINISHED
                )
                child.stop_reason = payload.stop_reason
            return True, True
        if isinstance(payload, BranchEnded):
            child.state = ChildState.CLOSED
            return True, False
        return False, False


def _add_step(child: ChildBranch, text: str) -> None:
    child.steps.append(text)
    del child.steps[:-MAX_STEP_LINES]


def _settle_step(child: ChildBranch, running: str, settled: str) -> None:
    """A step finished: its running line becomes its outcome (or a new line, if gone)."""
    for index in range(len(child.steps) - 1, -1, -1):
        if child.steps[index] == running:
            child.steps[index] = settled
            return
    _add_step(child, settled)
