"""The tools for background jobs, and the person's `/jobs`.

They live with the capabilities, not in `acp_agent.tools`, since they work
the runtime (`JobManager`); `shell` with `background` starts the jobs.
Every line of work is offered them; a job is named by its id.

==============  ================================================================
`job_output`    `job_id` (optional: all jobs), `tail_bytes`, `wait_s`: the state
                and the last output of a job (waiting up to `wait_s` for its end)
`job_stop`      `job_id`: stop it (SIGTERM, then SIGKILL), its processes too
==============  ================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from acp_agent.capabilities._jobs import Job, JobManager, JobState, NoSuchJob
from acp_agent.capabilities._runtime_tool import RuntimeTool, object_schema, text_result
from acp_agent.capabilities._slash_commands import CommandSpec, ExtraCommand
from acp_agent.capabilities._tool import ToolDefinition, ToolInputError, ToolKind, ToolResult

__all__ = ("JOB_TOOL_NAMES", "job_commands", "job_tools")

_DEFAULT_TAIL: Final = 4096
_MAX_TAIL: Final = 32 * 1024
_MAX_WAIT_S: Final = 600.0


def _describe(job: Job) -> dict[str, Any]:
    return {
        "job_id": job.job_id,
        "command": job.command,
        "state": job.state.value,
        "exit_code": job.exit.exit_code if job.exit else None,
        "signal": job.exit.signal if job.exit else None,
        "duration_s": job.duration_s,
        "branch_id": job.branch_id,
    }


def _number(arguments: Mapping[str, Any], name: str, default: float, most: float) -> float:
    value = arguments.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ToolInputError(f"`{name}` must be a non-negative number")
    return min(float(value), most)


def _tail(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    kept = data[-limit:].decode("utf-8", "replace")
    return f"[... {len(data) - limit} earlier bytes not shown ...]\n{kept}"


def _job_id(arguments: Mapping[str, Any], *, required: bool) -> str | None:
    value = arguments.get("job_id")
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError("`job_id` must be a job id, as `shell` returned it")
    return value


async def _output(manager: JobManager, arguments: Mapping[str, Any]) -> ToolResult:
    job_id = _job_id(arguments, required=False)
    if job_id is None:
        jobs = manager.jobs()
        if not jobs:
            return text_result("No background jobs in this session.", raw={"jobs": []})
        return text_result(
            "\n".join(job.summary() for job in jobs), raw={"jobs": [_describe(j) for j in jobs]}
        )
    job = manager.job(job_id)
    limit = int(_number(arguments, "tail_bytes", _DEFAULT_TAIL, _MAX_TAIL))
    wait_s = _number(arguments, "wait_s", 0.0, _MAX_WAIT_S)
    if wait_s:
        await manager.wait(job, wait_s)
    output = await manager.output(job)
    shown = _tail(output.text, limit) if output.text else "(no output yet)"
    text = f"{job.summary()}\nOutput ({output.total_bytes} bytes in all):\n{shown}"
    return text_result(text, raw={**_describe(job), "output_bytes": output.total_bytes})


async def _stop(manager: JobManager, arguments: Mapping[str, Any]) -> ToolResult:
    job_id = _job_id(arguments, required=True)
    assert job_id is not None
    job = manager.job(job_id)
    if job.state is not JobState.RUNNING:
        return text_result(f"Nothing to stop: {job.summary()}", raw=_describe(job))
    job = await manager.stop(job_id, by="model")
    return text_result(f"Stopped: {job.summary()}", raw=_describe(job))


_ID: Final = {"type": "string", "description": "The job's id, as `shell` returned it."}

_DEFINITIONS: Final = (
    (
        ToolDefinition(
            "job_output",
            "A background job's state and the end of its output so far (without `job_id`: "
            "every job's state). `wait_s` waits up to that many seconds for it to end first.",
            object_schema(
                {
                    "job_id": _ID,
                    "tail_bytes": {
                        "type": "integer",
                        "description": f"How much of the end of the output (default "
                        f"{_DEFAULT_TAIL}, at most {_MAX_TAIL}).",
                    },
                    "wait_s": {"type": "number", "description": "Wait for the end first."},
                }
            ),
            ToolKind.OTHER,
        ),
        lambda a: f"Job output {a.get('job_id') or ''}".strip(),
        _output,
    ),
    (
        ToolDefinition(
            "job_stop",
            "Stop a background job and every process it started (SIGTERM, then SIGKILL).",
            object_schema({"job_id": _ID}, ["job_id"]),
            ToolKind.OTHER,
        ),
        lambda a: f"Stop job {a.get('job_id') or ''}".strip(),
        _stop,
    ),
)

#: The job tools' names.
JOB_TOOL_NAMES: Final = frozenset(definition.name for definition, _, _ in _DEFINITIONS)


def job_tools(manager: JobManager) -> list[RuntimeTool[JobManager]]:
    """The tools, bound to a session's manager."""
    return [
        RuntimeTool(definition, title, act, manager, expected=(NoSuchJob,))
        for definition, title, act in _DEFINITIONS
    ]


def job_commands(manager: JobManager) -> dict[str, ExtraCommand]:
    """`/jobs` (list them) and `/jobs stop <id>` (stop one)."""

    async def jobs(arguments: str) -> str:
        words = arguments.split()
        if words and words[0] == "stop":
            if len(words) != 2:
                return "Usage: `/jobs stop <job id>`."
            try:
                job = await manager.stop(words[1], by="person")
            except NoSuchJob as exc:
                return f"Not stopped: {exc}."
            return f"`{job.job_id}` {job.outcome(reader='person')}."
        if words:
            return "Usage: `/jobs` lists the background jobs; `/jobs stop <job id>` stops one."
        listed = manager.jobs()
        if not listed:
            return "No background jobs in this session."
        rows = ["| Job | Command | State | Line | Ran |", "|---|---|---|---|---|"]
        for job in listed:
            command = job.command.replace("|", "\\|").replace("\n", " ")
            if job.duration_s is not None:
                ran = f"{job.duration_s:.1f} s"
            elif job.state is JobState.RUNNING and job.started_at:
                ran = f"{manager.now() - job.started_at:.0f} s so far"
            else:
                ran = ""
            line = job.line.replace("|", "\\|")
            rows.append(
                f"| `{job.job_id}` | `{command}` | {job.outcome(reader='person')} "
                f"| {line} | {ran} |"
            )
        return "\n".join(rows) + "\n\nStop one with `/jobs stop <job id>`."

    return {
        "jobs": ExtraCommand(
            CommandSpec("jobs", "List the background jobs; `/jobs stop <id>` stops one", "stop id"),
            jobs,
        )
    }
