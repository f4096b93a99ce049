"""What a headless run writes: the JSON lines of `--json`, and progress on stderr.

With `--json`, stdout carries one JSON object per line, each with `"version": 1` and
a `type`:

- `session`: `sessionId`, `cwd`, `additionalDirectories`, `resumed` (once, first);
- `update`: `sessionId` and `update`, a `session/update` as the agent sent it;
- `permission`: `sessionId`, `toolCallId`, `title`, `kind`, `decision`
  (`allowed` or `refused`) and `reason`, for every question the policy answered;
- `result` (last): `sessionId`, `stopReason` (null when no turn ended), `exitCode`,
  `messageId`, `usage` (null when the provider reported none; else the last
  `usage_update`'s `used`, `size`, `cost`, and the answer's `turn` and `session`:
  the provider's token counts, `inputTokens`, `outputTokens`, `cachedReadTokens`,
  `cachedWriteTokens`, `thoughtTokens`, `totalTokens`, the `cost` where the model's
  prices are known, and `lines`, each line of work's part: `main`, then each
  branch by id, with its `title`) and `error` (null, or `{kind, message}`).

Without it stdout gets only the agent's final message. Progress (tool calls and
permission decisions) goes to stderr when stderr is a terminal; refusals and errors
always do.

When stdout's reader goes away (`exec --json | head -1`), nothing more is written
there and `reader_gone` says so; the run then ends quietly (`LeavableStdout`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, Final, TextIO

from acp_agent.stdout_guard import LeavableStdout

__all__ = ("FORMAT_VERSION", "Reporter")

#: The version of the `--json` line format; bumped on an incompatible change.
FORMAT_VERSION: Final = 1


class Reporter:
    """Writes a run's JSON lines (or nothing, in text mode) and its stderr progress."""

    def __init__(
        self,
        *,
        json_lines: bool,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        progress: bool | None = None,
    ) -> None:
        self.json_lines = json_lines
        self._stdout = stdout or sys.stdout
        self._stderr = stderr or sys.stderr
        self._progress = self._stderr.isatty() if progress is None else progress
        #: Whoever reads stdout may go away (a closed pipe): nothing more is written there.
        self._out = LeavableStdout(self._stdout)

    @property
    def reader_gone(self) -> bool:
        """Whoever read stdout went away."""
        return self._out.gone.is_set()

    @property
    def on_reader_gone(self) -> Callable[[], object] | None:
        """Called once when the reader goes away (the run cancels its turn); it may be
        called from the task reading the agent, so it must not raise."""
        return self._out.on_gone

    @on_reader_gone.setter
    def on_reader_gone(self, call: Callable[[], object] | None) -> None:
        self._out.on_gone = call

    def line(self, line_type: str, **fields: Any) -> None:
        """One JSON line of `line_type` (only with `--json`)."""
        if self.json_lines:
            record = {"version": FORMAT_VERSION, "type": line_type, **fields}
            self._write(json.dumps(record, ensure_ascii=False) + "\n")

    def text(self, text: str) -> None:
        """The final answer (only without `--json`)."""
        if not self.json_lines:
            self._write(text if text.endswith("\n") or not text else text + "\n")

    def _write(self, text: str) -> None:
        """Write `text` to stdout at once (a closed pipe is noted, never raised)."""
        self._out.write(text)
        self._out.flush()

    def progress(self, message: str) -> None:
        """A progress note, shown only when stderr is a terminal."""
        if self._progress:
            self.warn(message)

    def warn(self, message: str) -> None:
        """A note that is always shown (a refusal, an error)."""
        self._stderr.write(f"acp-agent: {message}\n")
        self._stderr.flush()
