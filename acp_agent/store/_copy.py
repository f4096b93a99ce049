"""Copying sessions from one store to another, through the store interface, and checking the copy.

`copy_sessions(source, target)` copies every session with its branches,
events, files (checkpoints) and outputs (full tool results, jobs' output), and
every permission rule, from any store to any other (a person's
SQLite file to a team's PostgreSQL). Each session is leased in both stores
while it is copied, so nobody writes it meanwhile; one held by a live process
is skipped and named (copy it again once that process is done). The events go
over as batches of at most `chunk_events`, branch by branch, parents first, so
the target's query tables (results, ended branches, titles) are built by the
target's own rules.

It can be run again at any time: a session already in the target is
completed from where its branches end there (a copy cut short carries on),
and one complete already is left alone; a rule whose id the target has is
skipped. Snapshots are not copied: they are a cache, rebuilt on the next load.

`verify_copy(source, target)` compares, for every session of the source:
the session row (all but `updated_at`, which the target moves by its own
batches), its branches, every event of every branch, decoded, which is
what a load replays, the keys of its files and the keys and sizes of its
outputs; and every rule. It returns
the counts and what differs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Final

import attrs

from acp_agent.core import (
    Batch,
    BranchRecord,
    Seq,
    SessionHeld,
    SessionId,
    SessionPosition,
    SessionRecord,
    Store,
    StoreNotFound,
)
from acp_agent.values import Value

__all__ = (
    "DEFAULT_CHUNK_EVENTS",
    "CopyReport",
    "CopyVerification",
    "copy_sessions",
    "verify_copy",
)

#: Events per appended batch (and per read).
DEFAULT_CHUNK_EVENTS: Final = 1000
#: Bytes of a session's files per write to the target.
_FILE_BATCH_BYTES: Final = 16 * 1024 * 1024


@attrs.frozen
class CopyReport(Value):
    """What one `copy_sessions` run did."""

    #: Sessions written to (new, or completed).
    copied: tuple[SessionId, ...] = ()
    #: Sessions the target had whole already.
    present: tuple[SessionId, ...] = ()
    #: Sessions skipped: a live process holds them (in the source or the target).
    held: tuple[str, ...] = ()
    events: int = 0
    rules_copied: int = 0
    rules_present: int = 0


@attrs.frozen
class CopyVerification(Value):
    """What `verify_copy` compared, and what differs (empty when the copy is faithful)."""

    sessions: int = 0
    branches: int = 0
    events: int = 0
    rules: int = 0
    differences: tuple[str, ...] = ()


async def copy_sessions(
    source: Store,
    target: Store,
    *,
    chunk_events: int = DEFAULT_CHUNK_EVENTS,
    on_session: Callable[[SessionRecord, str], None] | None = None,
) -> CopyReport:
    """Copy every session and rule of `source` into `target` (see the module docstring).

    `on_session(session, outcome)` is told of each session: "copied", "present" or "held".
    """
    copied: list[SessionId] = []
    present: list[SessionId] = []
    held: list[str] = []
    events = 0
    async for session in _all_sessions(source):
        try:
            count = await _copy_session(source, target, session, chunk_events)
        except SessionHeld as exc:
            held.append(str(exc))
            outcome = "held"
        else:
            events += count
            (copied if count else present).append(session.session_id)
            outcome = "copied" if count else "present"
        if on_session is not None:
            on_session(session, outcome)
    rules_copied, rules_present = await _copy_rules(source, target)
    return CopyReport(
        tuple(copied), tuple(present), tuple(held), events, rules_copied, rules_present
    )


async def verify_copy(source: Store, target: Store) -> CopyVerification:
    """Compare every session and rule of `source` with `target` (see the module docstring)."""
    differences: list[str] = []
    sessions = branches = events = 0
    async for session in _all_sessions(source):
        sessions += 1
        name = session.session_id
        try:
            copy = await target.get_session(name)
        except StoreNotFound:
            differences.append(f"session {name}: not in the target")
            continue
        if attrs.evolve(copy, updated_at=0.0) != attrs.evolve(session, updated_at=0.0):
            differences.append(f"session {name}: its row differs")
        source_branches = await source.list_branches(name)
        if await target.list_branches(name) != source_branches:
            differences.append(f"session {name}: its branches differ")
            continue
        if await target.list_files(session.session_id) != await source.list_files(
            session.session_id
        ):
            differences.append(f"session {name}: its files differ")
        if await target.list_outputs(session.session_id) != await source.list_outputs(
            session.session_id
        ):
            differences.append(f"session {name}: its outputs differ")
        for branch in source_branches:
            branches += 1
            ours = await source.read(branch.branch_id)
            theirs = await target.read(branch.branch_id)
            events += len(ours)
            if theirs != ours:
                differences.append(
                    f"session {name} branch {branch.branch_id}: {len(theirs)} events in the "
                    f"target, {len(ours)} in the source, or they differ"
                )
    rules = await source.list_permission_rules(include_revoked=True)
    theirs_by_id = {
        rule.rule_id: rule for rule in await target.list_permission_rules(include_revoked=True)
    }
    for rule in rules:
        if theirs_by_id.get(rule.rule_id) != rule:
            differences.append(f"permission rule {rule.rule_id}: missing or different")
    return CopyVerification(sessions, branches, events, len(rules), tuple(differences))


async def _all_sessions(store: Store) -> AsyncIterator[SessionRecord]:
    after: SessionPosition | None = None
    while page := await store.list_sessions(limit=100, after=after):
        for session in page:
            yield session
        after = SessionPosition.of(page[-1])


async def _copy_session(
    source: Store, target: Store, session: SessionRecord, chunk_events: int
) -> int:
    """Copy one session (leased in both stores meanwhile); the events it wrote."""
    session_id = session.session_id
    await source.acquire_session(session_id)
    try:
        branches = await source.list_branches(session_id)
        main = branches[0]
        try:
            existing = await target.get_session(session_id)
        except StoreNotFound:
            opened = attrs.evolve(main, closed_at=None)  # its BranchEnded closes it, if ended
            await target.create_session(session, opened)
            existing = None
        else:
            await target.acquire_session(session_id)
        try:
            if existing is not None and existing.additional_directories != (
                session.additional_directories
            ):
                await target.set_additional_directories(session_id, session.additional_directories)
            copied = 0
            for branch in branches:
                copied += await _copy_branch(source, target, session, branch, chunk_events)
            await _copy_files(source, target, session_id)
            await _copy_outputs(source, target, session_id)
            return copied
        finally:
            await target.release_session(session_id)
    finally:
        await source.release_session(session_id)


async def _copy_files(source: Store, target: Store, session_id: SessionId) -> None:
    """The session's files the target lacks, a bounded batch at a time."""
    there = set(await target.list_files(session_id))
    batch: list[tuple[str, bytes]] = []
    size, batch_kind = 0, ""
    for kind, key in await source.list_files(session_id):
        if (kind, key) in there:
            continue
        data = await source.get_file(session_id, kind, key)
        if data is None:
            continue
        if batch and (kind != batch_kind or size + len(data) > _FILE_BATCH_BYTES):
            await target.put_files(session_id, batch_kind, batch)
            batch, size = [], 0
        batch.append((key, data))
        size, batch_kind = size + len(data), kind
    if batch:
        await target.put_files(session_id, batch_kind, batch)


async def _copy_outputs(source: Store, target: Store, session_id: SessionId) -> None:
    """The session's outputs the target lacks (or holds at another size), one at a time:
    an output's chunks are read, then written in one write (so the copy holds at most
    one output in memory, as big as a tool's result was)."""
    there = dict(await target.list_outputs(session_id))
    for key, size in await source.list_outputs(session_id):
        if there.get(key) == size:
            continue
        chunks: list[bytes] = []
        while (chunk := await source.get_output(session_id, key, len(chunks))) is not None:
            chunks.append(chunk)
        await target.put_output(session_id, key, chunks)


async def _copy_branch(
    source: Store,
    target: Store,
    session: SessionRecord,
    branch: BranchRecord,
    chunk_events: int,
) -> int:
    try:
        done = await target.last_durable_seq(branch.branch_id)
    except StoreNotFound:
        done = branch.cut_seq  # not there yet: its first batch creates it
    last = await source.last_durable_seq(branch.branch_id)
    copied = 0
    while done < last:
        upto = Seq(min(last, done + chunk_events))
        events = await source.read(branch.branch_id, gt=done, lte=upto)
        if not events:
            break
        await target.append_batch(Batch(session.session_id, branch.branch_id, tuple(events)))
        copied += len(events)
        done = events[-1].seq
    return copied


async def _copy_rules(source: Store, target: Store) -> tuple[int, int]:
    there = {rule.rule_id for rule in await target.list_permission_rules(include_revoked=True)}
    copied = present = 0
    for rule in await source.list_permission_rules(include_revoked=True):
        if rule.rule_id in there:
            present += 1
            continue
        kept = await target.add_permission_rule(attrs.evolve(rule, revoked_at=None))
        if kept.rule_id != rule.rule_id:
            present += 1  # the target holds the same rule in force under another id
            continue
        if rule.revoked_at is not None:
            await target.revoke_permission_rule(rule.rule_id, revoked_at=rule.revoked_at)
        copied += 1
    return copied, present
