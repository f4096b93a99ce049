"""The process groups this home's agents run, noted on disk: what the next start kills.

Each group an agent starts has a small file here (its process group, its
leader's start mark, and the agent's own pid and mark), removed when the
group ends. The reaper (`_reaper`) ends a dead agent's groups at once; these
notes are the backstop for when it could not (it was killed too, or never
started): when an agent starts it sweeps the directory, and a group whose
agent is no longer running has its group killed (if the leader is still the
same process, `acp_agent.process_marks`) and its file removed. A session's
timeline stays the record: opened again, it shows a job interrupted.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

from acp_agent.process_marks import DEAD, GONE, kill_group_of, start_mark

__all__ = ("GroupNotes",)

logger = logging.getLogger(__name__)


class GroupNotes:
    """Files naming the process groups that run (None directory: none kept)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._pid = os.getpid()
        self._mark = start_mark(self._pid)

    def path_of(self, name: str) -> Path | None:
        """Where the note called `name` is kept (None: notes are not kept)."""
        return None if self.directory is None else self.directory / f"{name}.json"

    def add(self, name: str, pgid: int, mark: str | None) -> str | None:
        """Note a group; returns why it could not be noted (a full disk), None once it is."""
        path = self.path_of(name)
        if path is None:
            return "no folder is kept for them"
        entry = {"pgid": pgid, "start_mark": mark, "agent_pid": self._pid, "agent_mark": self._mark}
        temporary = path.with_name(f".{name}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(entry))
            temporary.replace(path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temporary.unlink()
            return f"{path.parent}: {exc.strerror or exc}"
        return None

    def remove(self, name: str) -> None:
        path = self.path_of(name)
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()

    def sweep(self) -> int:
        """Kill the groups whose agent is gone; returns how many were killed."""
        if self.directory is None or not self.directory.is_dir():
            return 0
        killed = 0
        for path in self.directory.glob("*.json"):
            try:
                entry = json.loads(path.read_text())
                pgid, mark = int(entry["pgid"]), entry.get("start_mark")
                agent_pid, agent_mark = int(entry["agent_pid"]), entry.get("agent_mark")
            except (OSError, ValueError, KeyError, TypeError):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            agent_now = start_mark(agent_pid)
            if agent_now not in (GONE, DEAD) and agent_now == agent_mark:
                continue  # its agent runs (this one, or another on the same home)
            if agent_now is None:
                continue  # no /proc: we cannot tell, leave it
            if kill_group_of(pgid, mark):
                killed += 1
                logger.info("killed group %s, left running by agent pid %d", path.stem, agent_pid)
            with contextlib.suppress(OSError):
                path.unlink()
        return killed
