"""What a tool says before it changes files, so every change can be rewound.

A tool that writes, removes or moves files calls `ToolContext.changes` first;
the session keeps what the files hold now (a checkpoint) and records the
change before it is made. A command cannot say beforehand what it will
change: a tool runs one that is confined to the roots (sandboxed) inside
`watching()`, which keeps what the roots' files hold before it starts and
records what it changed once it ends (`CommandFiles`). Tools see only this
protocol; the checkpoint store behind it is the session's
(`acp_agent.capabilities.session`'s checkpoints).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

import attrs

from acp_agent.values import Value

__all__ = ("CommandFiles", "FileChanges")


@attrs.define
class CommandFiles(Value):
    """What a command changed in the roots, filled in when `watching()` ends."""

    #: Files whose content (or link, or mode) changed.
    changed: list[Path] = attrs.field(factory=list)
    created: list[Path] = attrs.field(factory=list)
    removed: list[Path] = attrs.field(factory=list)
    #: Why its changes are not known (None: they are), e.g. too many files to watch.
    untracked: str | None = None

    @property
    def count(self) -> int:
        return len(self.changed) + len(self.created) + len(self.removed)


class FileChanges(Protocol):
    """Called before each change, under the tool's path lock; each returns once the
    change and the prior content are on record (raises only for a broken store)."""

    async def before_write(self, path: Path, data: bytes) -> None:
        """`path` is about to hold exactly `data` (created, or replaced)."""
        ...

    async def before_remove(self, path: Path) -> None:
        """`path` (a file, a symlink, or a directory with all it holds) is about to go."""
        ...

    async def before_move(self, source: Path, destination: Path) -> None:
        """`source` (with all it holds) is about to become `destination`."""
        ...

    async def after_unconfirmed_write(self, path: Path) -> None:
        """A write to `path` announced by `before_write` may or may not have happened
        (the editor did not confirm it): treat what `path` holds from now on as changed
        outside the agent."""
        ...

    def watching(self) -> AbstractAsyncContextManager[CommandFiles]:
        """Around a command confined to the roots: entering keeps what their files hold,
        leaving (however the command ended) records what changed and fills in the
        `CommandFiles` it gave."""
        ...
