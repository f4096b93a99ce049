"""The tools for background jobs, and the person's `/jobs`.

They live with the capabilities, not in `acp_agent.tools`, since they work
the runtime (`JobManager`); `shell` with `background` starts the jobs.
Every line of work is offered them; a job is named by its id.

==============  ================================================================
`job_output`    `job_id` (optional: all jobs), `tail_bytes`, `wait_s`: the state
                and the last output of a job (waiting up to `wait_s` for its end)
`job_stop`      `job_id`: stop it (SIGTERM, then SIGKILL), its processes too
==============  ================================================================

What they return says "you" to the model; the person reads the same with
"the agent" (`Job.outcome`). A job is named by its id, or by its start as
`/jobs` shows it (`job_` and 8 hex digits).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from acp_agent.capabilities.jobs._manager import Job, JobManager, JobState, NoSuchJob
from acp_agent.toolkit import (
    CommandSpec,
    ExtraCommand,
    RuntimeTool,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolResult,
    object_schema,
    text_result,
)

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
            "\n".join(job.summary() for job in jobs),
            raw={"jobs": [_describe(j) for j in jobs]},
            shown="\n".join(job.summary(reader="person") for job in jobs),
        )
    job = manager.job(job_id)
    limit = int(_number(arguments, "tail_bytes", _DEFAULT_TAIL, _MAX_TAIL))
    wait_s = _number(arguments, "wait_s", 0.0, _MAX_WAIT_S)
    if wait_s:
        await manager.wait(job, wait_s)
    output = await manager.output(job)
    shown = _tail(output.text, limit) if output.text else "(no output yet)"
    output_text = f"Output ({output.total_bytes} bytes in all):\n{shown}"
    return text_result(
        f"{job.summary()}\n{output_text}",
        raw={**_describe(job), "output_bytes": output.total_bytes},
        shown=f"{job.summary(reader='person')}\n{output_text}",
    )


async def _stop(manager: JobManager, arguments: Mapping[str, Any]) -> ToolResult:
    job_id = _job_id(arguments, required=True)
    assert job_id is not None
    job = manager.job(job_id)
    if job.state is not JobState.RUNNING:
        return text_result(
            f"Nothing to stop: {job.summary()}",
            raw=_describe(job),
            shown=f"Nothing to stop: {job.summary(reader='person')}",
        )
    job = await manager.stop(job_id, by="model")
    return text_result(
        f"Stopped: {job.summary()}",
        raw=_describe(job),
        shown=f"Stopped: {job.summary(reader='person')}",
    )


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


#: How much of a job's id `/jobs` shows (`job_` and 8 hex digits): a command takes it.
_SHORT_ID: Final = 12
#: How much of a command, and of the end of a job's output, `/jobs` shows.
_COMMAND_CHARS: Final = 40
_SHOWN_OUTPUT: Final = 4096


def _fenced(text: str) -> str:
    """`text` in a Markdown code block no line of it can close."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}\n{text.rstrip(chr(10))}\n{fence}"


def _short_command(command: str) -> str:
    first, _, rest = command.strip().partition("\n")
    if len(first) > _COMMAND_CHARS:
        return first[: _COMMAND_CHARS - 1] + "…"
    return first + ("…" if rest else "")


def _ran(manager: JobManager, job: Job) -> str:
    if job.duration_s is not None:
        return f"after {job.duration_s:.1f} s"
    if job.state is JobState.RUNNING and job.started_at:
        return f"for {manager.now() - job.started_at:.0f} s so far"
    return ""


def job_commands(manager: JobManager) -> dict[str, ExtraCommand]:
    """`/jobs` (list them), `/jobs <job id>` (one, with its output) and `/jobs stop <job id>`."""

    async def jobs(arguments: str) -> str:
        words = arguments.split()
        if words and words[0] == "stop":
            if len(words) != 2:
                return "Usage: `/jobs stop <job id>`."
            try:
                job = await manager.stop(words[1], by="person")
            except NoSuchJob as exc:
                return f"Not stopped: {exc}."
            return f"`{job.job_id[:_SHORT_ID]}` {job.outcome(reader='person')}."
        if len(words) == 1:
            try:
                return await _one(manager.job(words[0]))
            except NoSuchJob as exc:
                return f"Not found: {exc}."
        if words:
            return "Usage: `/jobs`, `/jobs <job id>` or `/jobs stop <job id>`."
        listed = manager.jobs()
        if not listed:
            return "No background jobs in this session."
        lines = ["Background jobs:", ""]
        for job in listed:
            line = "" if job.belongs_to == "main" else f", branch {job.belongs_to!r}"
            ran = _ran(manager, job)
            lines.append(
                f"- `{job.job_id[:_SHORT_ID]}` `{_short_command(job.command)}`: "
                f"{job.outcome(reader='person')}{f' {ran}' if ran else ''}{line}"
            )
        lines += ["", "`/jobs <job id>` shows one with its output; `/jobs stop <job id>` stops it."]
        return "\n".join(lines)

    async def _one(job: Job) -> str:
        output = await manager.output(job)
        ran = _ran(manager, job)
        text = [
            f"`{job.job_id[:_SHORT_ID]}` `{job.command}` {job.outcome(reader='person')}"
            f"{f' {ran}' if ran else ''}.",
        ]
        if output.text:
            text.append(f"Its output ({output.total_bytes} bytes in all), the end of it:")
            text.append(_fenced(_tail(output.text, _SHOWN_OUTPUT)))
        else:
            text.append("It printed nothing (yet).")
        return "\n\n".join(text)

    return {
        "jobs": ExtraCommand(
            CommandSpec(
                "jobs",
                "List the background jobs, show one (`/jobs <job id>`) or stop one",
                "stop <job id>",
            ),
            jobs,
        )
    }
