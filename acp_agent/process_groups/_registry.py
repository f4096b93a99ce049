"""The process groups this agent runs: each registered before it starts, ended if we die.

Commands (of the main line and of every branch), background jobs, language
servers and MCP stdio servers each lead a process group of their own. The
agent's `GroupRegistry` registers each group twice, before its command runs
(`gate`, see `_gate`):

- with the **reaper** (`_reaper`, through `_link`): a small process holding a
  pipe from the agent, which kills the registered groups as soon as the pipe
  closes, however the agent died, and exits;
- in a **note on disk** (`_notes`): the next start's sweep ends what neither
  the agent nor its reaper could (both killed at once).

A group is released once it is over. Where neither registration can be made
(the disk full and the reaper gone), the command still runs, and its
`Registration.unguarded` says that nothing would end it after a crash: the
tool result tells the person. Without the reaper and a notes folder (a
registry not configured: in-process tests, front ends that start no
commands) the command starts as it is and nothing is promised.

One registry per agent process (`process_groups()`), configured at start by
`acp_agent.stdio_agent`.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from acp_agent.process_groups._notes import GroupNotes
from acp_agent.process_marks import start_mark

if TYPE_CHECKING:
    from acp_agent.process_groups._gate import Gate
    from acp_agent.process_groups._link import ReaperLink

__all__ = ("GroupRegistry", "Registration", "process_groups", "use_process_groups")

logger = logging.getLogger(__name__)


class Registration:
    """One registered group, until `release`."""

    def __init__(self, registry: GroupRegistry, name: str, pgid: int, unguarded: str | None):
        self._registry = registry
        self.name = name
        self.pgid = pgid
        #: Why nothing would end this group if the agent died (None: something would).
        self.unguarded = unguarded
        self._released = False

    def release(self) -> None:
        """The group is over (killed, its leader reaped or about to be); idempotent."""
        if not self._released:
            self._released = True
            self._registry._release(self.name)


class GroupRegistry:
    """Registers this agent's process groups (see the module docstring).

    **Parameters:**

    * `notes_dir`: where groups are noted for the next start's sweep (None: not noted).
    * `reaper`: keep a reaper process that ends the groups when the agent dies.
    """

    def __init__(self, notes_dir: Path | None = None, *, reaper: bool = False) -> None:
        self._notes = GroupNotes(notes_dir)
        self._reaper = reaper
        #: Made with the first group (the agent's start does not pay for it).
        self._link: ReaperLink | None = None
        self._names = itertools.count(1)
        self._pid = os.getpid()

    @property
    def enabled(self) -> bool:
        """Whether groups are registered at all (else commands start ungated)."""
        return self._reaper or self._notes.directory is not None

    @property
    def reaper_pid(self) -> int | None:
        """The reaper's pid once one runs."""
        return None if self._link is None else self._link.pid

    def gate(
        self,
        argv: Sequence[str],
        *,
        protocol_stdin: bool = False,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> Gate:
        """The door for a command about to start in a group of its own; `gate.admit(pid)`
        returns its `Registration` (None when the registry is not enabled)."""
        # Loaded with the first command, not at the agent's start (subprocess, shutil).
        from acp_agent.process_groups._gate import Gate

        register = self._register if self.enabled else None
        return Gate(argv, register, protocol_stdin=protocol_stdin, env=env, cwd=cwd)

    def sweep(self) -> int:
        """End the groups dead agents left noted; how many were killed (at start)."""
        return self._notes.sweep()

    def close(self) -> None:
        """Let the reaper go (it ends what is still registered, and exits)."""
        if self._link is not None:
            self._link.close()

    def _register(self, pgid: int) -> Registration:
        name = f"{self._pid}-{next(self._names)}"
        mark = start_mark(pgid)
        if mark is None:
            # No /proc: a group cannot be told from a later one reusing its id, so
            # neither the reaper nor a sweep may kill it; nothing is promised here.
            return Registration(self, name, pgid, None)
        # The reaper first, told where the note goes: killed between the two, the reaper
        # still ends the group (not yet started: the gate is shut) and removes its note.
        unheld: str | None = "no reaper is kept"
        if self._reaper:
            unheld = self._reaper_link().hold(name, pgid, mark, self._notes.path_of(name))
        unnoted = self._notes.add(name, pgid, mark)
        unguarded = None
        if unnoted is not None and unheld is not None:
            unguarded = f"{unnoted}; {unheld}"
            logger.warning("group %d is registered nowhere (%s)", pgid, unguarded)
        elif unnoted is not None and self._notes.directory is not None:
            logger.warning("group %d is not noted on disk (%s); the reaper holds it", pgid, unnoted)
        return Registration(self, name, pgid, unguarded)

    def _reaper_link(self) -> ReaperLink:
        if self._link is None:
            from acp_agent.process_groups._link import ReaperLink  # with the first group

            self._link = ReaperLink()
        return self._link

    def _release(self, name: str) -> None:
        self._notes.remove(name)
        if self._link is not None:
            self._link.let_go(name)


_registry = GroupRegistry()


def process_groups() -> GroupRegistry:
    """This process's registry (not enabled until `use_process_groups`)."""
    return _registry


def use_process_groups(registry: GroupRegistry) -> None:
    """Make `registry` the one every command, job and server of this process uses."""
    global _registry
    _registry = registry
