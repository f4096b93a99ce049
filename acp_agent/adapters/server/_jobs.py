"""What attached clients receive for background jobs: `_acp-agent/job` as one starts and ends.

No `session/update` carries a job's state: its end reaches the model, and the
person sees a "Job … ended" row in a turn of the main line (`JobEndShown`),
never between turns, as ACP's contract for a client that did not attach
requires. A client that attached asked for everything the session does, so
it is told about the main line's jobs when they happen, turn or no turn:

    <- _acp-agent/job {"sessionId": S, "jobId": ..., "callId": ..., "command": ...,
                       "state": "running" | "exited" | "stopped" | "killed" |
                                "interrupted" | "lost",
                       "exitCode": 0, "signal": null, "durationS": 1.2,
                       "output": "<its last lines>", "outputBytes": n,
                       "_meta": {"acp-agent": {"cursor": "<seq>"}}}

one when a job starts (`running`, with `cwd`) and one when it ends. Both are
made of the timeline's own facts (`JobStarted`, `JobEnded`), so a replay
sends them where they happened and a cursor resumes after them. A branch's
jobs are its own (its steps show them); their ends reach the main line as its
rows. Clients that never attached get none of this.
"""

from __future__ import annotations

from typing import Any, Final

from acp_agent.agent import Event, JobEnded, JobStarted

__all__ = ("JOB_METHOD", "job_notice")

#: Told to attached clients as a job of the main line starts and ends.
JOB_METHOD: Final = "_acp-agent/job"
#: How much of a job's output the notice of its end carries (its last lines).
_TAIL_LINES: Final = 20
_TAIL_CHARS: Final = 4000


def job_notice(session_id: str, event: Event, meta: dict[str, Any]) -> dict[str, Any] | None:
    """The `_acp-agent/job` params `event` makes (None: not a job's fact); `meta` its `_meta`."""
    payload = event.payload
    if isinstance(payload, JobStarted):
        return {
            "sessionId": session_id,
            "jobId": payload.job_id,
            "callId": str(payload.call_id),
            "command": payload.command,
            "cwd": payload.cwd,
            "state": "running",
            "_meta": meta,
        }
    if isinstance(payload, JobEnded):
        return {
            "sessionId": session_id,
            "jobId": payload.job_id,
            "state": payload.state,
            "exitCode": payload.exit_code,
            "signal": payload.signal,
            "durationS": payload.duration_s,
            "output": _tail(payload.output),
            "outputBytes": payload.output_bytes,
            "stoppedBy": payload.stopped_by,
            "_meta": meta,
        }
    return None


def _tail(output: str) -> str:
    lines = output.splitlines()[-_TAIL_LINES:]
    return "\n".join(lines)[-_TAIL_CHARS:]
