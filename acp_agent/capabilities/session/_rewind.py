"""Rewind: a session back to just before one of the person's messages, files and all.

    rewinder = session.scope.get(REWINDER)
    points = await rewinder.points()             # what `/rewind` lists
    outcome = await rewinder.rewind(message_id)  # `/rewind N`, `_acp-agent/rewind`

A rewind reads what every branch of the session changed since the message
(`FileChanged`, checkpoints in `CheckpointStore`) and finds, for each file,
what it held then. A file that no longer holds what the agent last wrote was
changed outside the agent: the rewind then changes nothing and lists it. Else
the restores are recorded as changes of their own, made, and
`ConversationRewound` is recorded: history stays, but from the message on it
is out of the model's context and of a replay. Commands, fetches and MCP
calls cannot be undone; the outcome names them. A command that ran in the
sandbox recorded the files it changed in the roots like a tool's edits: those
come back, and the outcome says so beside it.

A rewind never writes outside the workspace: each path is resolved when it is
planned and again when it is acted on, with the tools' containment (every root,
every link on the way followed). One that now leads outside (a directory on its
way became a link to elsewhere) is a conflict: nothing changes, and it is named.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import attrs

from acp_agent.capabilities.branches import BranchManager
from acp_agent.capabilities.jobs import JobManager
from acp_agent.capabilities.session._checkpoints import CallChanges, CheckpointStore, entry_digest
from acp_agent.content import ContentPart, TextContent
from acp_agent.core import (
    ConversationRewound,
    Event,
    EventDraft,
    FileChanged,
    Session,
    Store,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultRecorded,
    UserInputAdopted,
    hidden_ranges,
    is_hidden,
    new_id,
)
from acp_agent.values import Value

__all__ = (
    "NoRewindPoint",
    "RewindOutcome",
    "RewindPoint",
    "RewindRefused",
    "Rewinder",
)

logger = logging.getLogger(__name__)

#: Who records `ConversationRewound`.
REWIND_PRODUCER: Final = "capabilities.rewind"
#: Tool kinds whose effects no rewind undoes (besides MCP tools).
_EFFECT_KINDS: Final = frozenset({"execute", "fetch"})
#: Said of a command that ran in the sandbox: its changes to files in the roots were
#: recorded and are restored; the rest of what it did stays.
_SANDBOXED: Final = "(sandboxed: the files it changed are restored; .git and ignored files stay)"
_MCP_PREFIX: Final = "mcp__"


class RewindRefused(Exception):
    """A rewind that cannot happen now (work is running, or no such message)."""


class NoRewindPoint(RewindRefused):
    """The message named is not one the session can go back to."""


@attrs.frozen
class RewindPoint(Value):
    """One of the person's messages a rewind can go back to, with what followed it."""

    number: int
    message_id: str
    seq: int
    recorded_at: float
    #: The message's first line, shortened.
    text: str
    #: Files changed from this message to the next.
    changed: tuple[str, ...] = ()
    #: What ran from this message to the next that no rewind undoes.
    effects: tuple[str, ...] = ()


@attrs.frozen
class RewindOutcome(Value):
    """What a rewind did: restored and removed files, or the conflicts that stopped it."""

    message_id: str
    rewound: bool
    restored: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    #: Files changed outside the agent since it last wrote them, or whose path now leads
    #: outside the workspace (nothing was changed).
    conflicts: tuple[str, ...] = ()
    not_undone: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "messageId": self.message_id,
            "rewound": self.rewound,
            "restored": list(self.restored),
            "removed": list(self.removed),
            "conflicts": list(self.conflicts),
            "notUndone": list(self.not_undone),
        }


@attrs.frozen
class _Change(Value):
    """A `FileChanged` with where it happened: an order key across branches."""

    order: tuple[float, int]
    fact: FileChanged


@attrs.frozen
class _Activity(Value):
    """What the session's branches did, in order: file changes and effects."""

    changes: list[_Change]
    #: (order, description) of calls that ran and cannot be undone.
    effects: list[tuple[tuple[float, int], str]]


class Rewinder:
    """Lists rewind points and rewinds one session (a session service)."""

    def __init__(
        self,
        session: Session,
        store: Store,
        checkpoints: CheckpointStore,
        *,
        branches: BranchManager,
        jobs: JobManager,
        roots: Callable[[], Sequence[Path]],
    ) -> None:
        self.session = session
        self.store = store
        self.checkpoints = checkpoints
        self.branches = branches
        self.jobs = jobs
        #: The workspace's roots now (resolved): nothing outside them is touched.
        self.roots = roots
        self._lock = anyio.Lock()

    async def points(self) -> list[RewindPoint]:
        """The person's messages still in the conversation, oldest first."""
        return await self._points(await self._activity())

    async def _points(self, activity: _Activity) -> list[RewindPoint]:
        events = await self.session.main.read()
        hidden = hidden_ranges(events)
        messages = [
            event
            for event in events
            if isinstance(event.payload, UserInputAdopted)
            and event.payload.begins_turn  # one sent during a turn goes back with that turn
            and event.branch_id == self.session.main.id
            and not is_hidden(int(event.seq), hidden)
        ]
        points = []
        for number, event in enumerate(messages, start=1):
            start = _order_of(event)
            end = _order_of(messages[number]) if number < len(messages) else (float("inf"), 0)
            changed = sorted({c.fact.path for c in activity.changes if start <= c.order < end})
            effects = [text for order, text in activity.effects if start <= order < end]
            assert isinstance(event.payload, UserInputAdopted)
            points.append(
                RewindPoint(
                    number,
                    event.payload.input_id,
                    int(event.seq),
                    event.recorded_at,
                    _first_line(event.payload.content),
                    tuple(changed),
                    tuple(effects),
                )
            )
        return points

    async def rewind(self, message_id: str) -> RewindOutcome:
        """Restore the files and take the conversation back to just before `message_id`.

        Raises `RewindRefused` while any line of work or job of the session runs, or
        for a message that is not a rewind point. Conflicts change nothing.
        """
        async with self._lock:
            self._refuse_while_running()
            activity = await self._activity()  # read once: for the points and the plan
            points = await self._points(activity)
            point = next((p for p in points if p.message_id == message_id), None)
            if point is None:
                raise NoRewindPoint(f"the session has no message {message_id} to go back to")
            start = (point.recorded_at, point.seq)
            changes = [c for c in activity.changes if c.order >= start]
            not_undone = tuple(text for order, text in activity.effects if order >= start)
            roots = tuple(self.roots())
            plan = await anyio.to_thread.run_sync(_plan, changes, roots)
            if plan.conflicts:
                return RewindOutcome(message_id, False, conflicts=plan.conflicts)
            rewind_id = new_id("rw")
            recorder = CallChanges(self.checkpoints, self.session.main, rewind_id)
            await recorder.record([(Path(path), fact.before) for path, fact in plan.restores])
            session_id = str(self.session.id)
            restored, removed, lost, outside = await anyio.to_thread.run_sync(
                _restore, plan.restores, self.checkpoints, session_id, roots
            )
            not_undone += tuple(f"{path}: its earlier content was not kept" for path in lost)
            not_undone += tuple(f"{path}: {_OUTSIDE}; not touched" for path in outside)
            await self.session.main.append(
                [
                    EventDraft(
                        ConversationRewound(
                            rewind_id,
                            message_id,
                            point.seq,
                            list(restored),
                            list(removed),
                            list(not_undone),
                        ),
                        REWIND_PRODUCER,
                    )
                ]
            )
            logger.info(
                "session %s rewound to %s: %d restored, %d removed",
                self.session.id,
                message_id,
                len(restored),
                len(removed),
            )
            return RewindOutcome(message_id, True, restored, removed, (), not_undone)

    def _refuse_while_running(self) -> None:
        if self.branches.main_turn_open:
            raise RewindRefused("a turn is running; cancel it first")
        working = [child for child in self.branches.children() if child.state.working]
        if working:
            names = ", ".join(child.title for child in working)
            raise RewindRefused(
                f"branches are still working ({names}); stop them with the editor's stop "
                "button (session/cancel), or wait until they finish"
            )
        running = self.jobs.running()
        if running:
            ids = ", ".join(job.job_id for job in running)
            raise RewindRefused(
                f"background jobs are running ({ids}); stop them with `/jobs stop <id>`"
            )

    async def _activity(self) -> _Activity:
        changes: list[_Change] = []
        effects: list[tuple[tuple[float, int], str]] = []
        for record in await self.store.list_branches(self.session.id):
            requested: dict[str, ToolCallRequested] = {}
            started: dict[str, tuple[tuple[float, int], str]] = {}
            for event in await self.store.read(record.branch_id):
                payload, order = event.payload, _order_of(event)
                if isinstance(payload, FileChanged):
                    changes.append(_Change(order, payload))
                elif isinstance(payload, ToolCallRequested):
                    requested[payload.call_id] = payload
                elif isinstance(payload, ToolCallStarted):
                    call = requested.get(payload.call_id)
                    if call is not None and _cannot_undo(call):
                        started[payload.call_id] = (order, call.title or call.tool)
                elif isinstance(payload, ToolResultRecorded) and _ran_sandboxed(payload):
                    known = started.get(payload.call_id)
                    if known is not None:
                        started[payload.call_id] = (known[0], f"{known[1]} {_SANDBOXED}")
            effects += started.values()
        changes.sort(key=lambda change: change.order)
        effects.sort(key=lambda effect: effect[0])
        return _Activity(changes, effects)


def _order_of(event: Event) -> tuple[float, int]:
    """Across branches, wall time orders; within one, seq does (equal times)."""
    return (event.recorded_at, int(event.seq))


def _cannot_undo(call: ToolCallRequested) -> bool:
    return call.tool_kind in _EFFECT_KINDS or call.tool.startswith(_MCP_PREFIX)


def _ran_sandboxed(result: ToolResultRecorded) -> bool:
    """Whether a command's result says it ran in the command sandbox, in the foreground
    (its file changes were recorded)."""
    raw = result.raw_output
    return isinstance(raw, dict) and raw.get("sandboxed") is True and "files" in raw


def _first_line(content: Sequence[ContentPart]) -> str:
    for part in content:
        if isinstance(part, TextContent) and part.text.strip():
            line = part.text.strip().splitlines()[0]
            return line if len(line) <= 60 else line[:59] + "…"
    return "(no text)"


@attrs.frozen
class _Plan(Value):
    #: (path, the earliest change since the anchor: its `before` is what comes back).
    restores: list[tuple[str, FileChanged]]
    conflicts: tuple[str, ...]


#: Why a path is not touched: a link on its way leads out of every root.
_OUTSIDE: Final = "it now leads outside the workspace (a directory on its way is a link)"


def _leads_outside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether acting on `path` now (replacing or removing the entry itself, never following
    it) would touch a place outside every root: its directory, with every link followed."""
    if not roots:
        return True
    directory = Path(os.path.realpath(path.parent))
    return not any(directory == root or directory.is_relative_to(root) for root in roots)


def _plan(changes: list[_Change], roots: Sequence[Path]) -> _Plan:
    """What to restore, and which files changed outside the agent or now lead outside the
    workspace (blocking: reads files)."""
    first: dict[str, FileChanged] = {}
    last: dict[str, FileChanged] = {}
    for change in changes:
        first.setdefault(change.fact.path, change.fact)
        last[change.fact.path] = change.fact
    restores, conflicts = [], []
    for path in sorted(first):
        target, latest = first[path], last[path]
        if _leads_outside(Path(path), roots) or any(
            _leads_outside(Path(made), roots) for made in target.made_dirs
        ):
            conflicts.append(f"{path}: {_OUTSIDE}; not touched")
            continue
        current = entry_digest(Path(path))
        # A change that failed left the file as it was before it: that is ours too.
        if current not in (latest.after, latest.before):
            conflicts.append(f"{path}: changed outside the agent since it last wrote it")
        elif current != target.before:
            restores.append((path, target))
    return _Plan(restores, tuple(conflicts))


def _restore(
    restores: list[tuple[str, FileChanged]],
    checkpoints: CheckpointStore,
    session_id: str,
    roots: Sequence[Path],
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Put every file back as `before` says (blocking): (restored, removed, not kept,
    not touched because it now leads outside the workspace).

    Each path is checked again right before it is acted on: a link made since the plan
    does not lead a write out of the workspace either.
    """
    restored, removed, lost, outside = [], [], [], []
    for path_text, target in restores:
        path = Path(path_text)
        if _leads_outside(path, roots):
            outside.append(path_text)
            continue
        if target.before is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            for made in reversed(target.made_dirs):  # what was made to hold it, if empty
                if not _leads_outside(Path(made), roots):
                    with contextlib.suppress(OSError):
                        os.rmdir(made)
            removed.append(path_text)
            continue
        if target.before_link is not None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target.before_link, path)
            restored.append(path_text)
            continue
        data = checkpoints.load(session_id, target.before) if target.before_saved else None
        if data is None:
            lost.append(path_text)
            continue
        _write_back(path, data, target.before_mode)
        restored.append(path_text)
    return tuple(restored), tuple(removed), tuple(lost), tuple(outside)


def _write_back(path: Path, data: bytes, mode: int | None) -> None:
    """Write `data` at `path` atomically, with its old permission bits."""
    if path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.chmod(temporary, mode if mode is not None else 0o644)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
