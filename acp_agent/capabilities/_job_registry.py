"""The local jobs this home's agents run, on disk: what a restart must kill at once.

A job's facts are on its line's timeline, but they are read only when its
session is opened again, and a dev server left by a SIGKILLed agent should
not hold its port until then. So each local job also has a small file here
(its process group, its leader's start mark, and the agent's own pid and
mark), removed when the job ends. When an agent starts it sweeps the
directory: a job whose agent is no longer running has its group killed (if
the leader is still the same process, `acp_agent.process_marks`) and its
file removed. The timeline stays the record: the session, once opened,
shows the job interrupted.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

from acp_agent.process_marks import DEAD, GONE, kill_group_of, start_mark

__all__ = ("JobRegistry",)

logger = logging.getLogger(__name__)


class JobRegistry:
    """Files naming the local job process groups that run (None directory: none kept)."""

    name = "job registry"

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._pid = os.getpid()
        self._mark = start_mark(self._pid)

    def add(self, job_id: str, pgid: int, mark: str | None) -> None:
        """Note a local job's group; best effort (a full disk must not stop the job)."""
        if self.directory is None:
            return
        entry = {"pgid": pgid, "start_mark": mark, "agent_pid": self._pid, "agent_mark": self._mark}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            temporary = self.directory / f".{job_id}.tmp"
            temporary.write_text(json.dumps(entry))
            temporary.replace(self.directory / f"{job_id}.json")
        except OSError as exc:
            logger.warning("could not note job %s for crash cleanup: %s", job_id, exc)

    def remove(self, job_id: str) -> None:
        if self.directory is not None:
            with contextlib.suppress(OSError):
                (self.directory / f"{job_id}.json").unlink()

    def sweep(self) -> int:
        """Kill the groups of jobs whose agent is gone; returns how many were killed."""
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
                logger.info("killed job %s, left running by agent pid %d", path.stem, agent_pid)
            with contextlib.suppress(OSError):
                path.unlink()
        return killed
