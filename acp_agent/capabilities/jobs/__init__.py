"""Background jobs: commands that run while their line of work goes on, and report back.

`JobManager` (a session service) owns what a tool call hands over through
the tool kit's `JobHost`; `job_tools` are the model's tools for jobs and
`job_commands` the person's `/jobs`; `SavedOutputs` keeps a running job's
output so far in the store, for when its agent is gone.
"""

from __future__ import annotations

from acp_agent.capabilities.jobs._manager import (
    DEFAULT_JOB_LIMIT,
    JOBS_GUIDE_ENTRY,
    JobManager,
    NoSuchJob,
)
from acp_agent.capabilities.jobs._saved_output import SavedOutputs
from acp_agent.capabilities.jobs._tools import job_commands, job_tools

__all__ = (
    "DEFAULT_JOB_LIMIT",
    "JOBS_GUIDE_ENTRY",
    "JobManager",
    "NoSuchJob",
    "SavedOutputs",
    "job_commands",
    "job_tools",
)
