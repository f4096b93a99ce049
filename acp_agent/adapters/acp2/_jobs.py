"""Background jobs as v2 background work: each job of the main line is a display terminal.

A job (`JobStarted`: a command `shell` left running in the background) is
announced as an agent-owned terminal, `job-<job id>`, with its command and cwd,
cancellable; from then on the state snapshots list it in `background` until its
end (`JobEnded`) is shown: its kept output (`output`, a replacement snapshot in
base64) and its exit status, before the snapshot that no longer lists it (v2's
order). `terminal/cancel` on a job's terminal stops the job, as `/jobs stop` does.

v2: an agent that reports background work must include the complete list on
every `state_update` of the session; acp-agent always reports it (`[]` when no
job runs), so the stream stamps `listed()` on each one it sends.
"""

from __future__ import annotations

import base64
from typing import Any, Final

from acp_agent.agent import JobEnded, JobStarted, Payload

__all__ = ("JOB_TERMINAL_PREFIX", "BackgroundJobs")

#: A job's terminal id is this and the job's id.
JOB_TERMINAL_PREFIX: Final = "job-"


class BackgroundJobs:
    """The main line's jobs still running, as one stream has seen them (in order)."""

    def __init__(self) -> None:
        self._running: dict[str, None] = {}

    def listed(self) -> list[dict[str, Any]]:
        """The `background` list of a state snapshot now."""
        return [{"type": "terminal", "terminalId": terminal} for terminal in self._running]

    def bodies(self, payload: Payload) -> list[dict[str, Any]]:
        """What a job's fact shows (none for another fact), the running list updated."""
        if isinstance(payload, JobStarted):
            terminal = JOB_TERMINAL_PREFIX + payload.job_id
            self._running[terminal] = None
            return [
                {
                    "sessionUpdate": "terminal_update",
                    "terminalId": terminal,
                    "command": payload.command,
                    "cwd": payload.cwd,
                    "capabilities": {"cancel": {}},
                }
            ]
        if isinstance(payload, JobEnded):
            terminal = JOB_TERMINAL_PREFIX + payload.job_id
            self._running.pop(terminal, None)
            output = base64.b64encode(payload.output.encode()).decode()
            status = {"exitCode": payload.exit_code, "signal": payload.signal}
            return [
                {
                    "sessionUpdate": "terminal_update",
                    "terminalId": terminal,
                    "output": {"data": output},
                    "exitStatus": status,
                    "capabilities": None,
                }
            ]
        return []
