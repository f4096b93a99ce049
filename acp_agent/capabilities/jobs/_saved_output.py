"""A running job's output so far, kept in the session's store, for when its agent is gone.

A job is a process on one machine: it cannot follow its session when another
agent takes the session over (or the agent is killed). What can is what it
printed: while a local job runs, its kept output (head and tail, at most
about 32 KB) goes into the store as the session's output `job/<job id>`, half a
second after it starts, then at most every `SAVE_EVERY_S`, each time only when
it grew. The agent that next opens the
session records the job interrupted with that output, so the model and the
person read what it printed before it was cut off.
"""

from __future__ import annotations

import json
import logging
from typing import Final

from acp_agent.core import SessionId, Store, StoreError
from acp_agent.toolkit import JobOutput

__all__ = ("FIRST_SAVE_S", "SAVE_EVERY_S", "SavedOutputs")

logger = logging.getLogger(__name__)

#: When a running job's output is first kept (if it printed), and how often after that.
FIRST_SAVE_S: Final = 0.5
SAVE_EVERY_S: Final = 2.0
_KEY_PREFIX: Final = "job/"


class SavedOutputs:
    """One session's jobs' output so far, in `store` (None: not kept)."""

    def __init__(self, store: Store | None, session_id: SessionId) -> None:
        self.store = store
        self.session_id = session_id

    async def save(self, job_id: str, output: JobOutput) -> None:
        """Keep `output` as the job's output so far (a store that fails is logged)."""
        if self.store is None:
            return
        data = json.dumps({"text": output.text, "total_bytes": output.total_bytes})
        try:
            await self.store.put_output(self.session_id, _KEY_PREFIX + job_id, [data.encode()])
        except StoreError as exc:
            logger.warning("the output of job %s so far was not kept: %s", job_id, exc)

    async def load(self, job_id: str) -> JobOutput | None:
        """The job's output as last kept; None when none was (or it cannot be read)."""
        if self.store is None:
            return None
        try:
            data = await self.store.get_output(self.session_id, _KEY_PREFIX + job_id, 0)
        except StoreError as exc:
            logger.warning("the output of job %s so far was not read: %s", job_id, exc)
            return None
        if data is None:
            return None
        try:
            saved = json.loads(data)
            return JobOutput(str(saved["text"]), int(saved["total_bytes"]))
        except (ValueError, KeyError, TypeError):
            logger.warning("the output of job %s so far is not readable", job_id)
            return None
