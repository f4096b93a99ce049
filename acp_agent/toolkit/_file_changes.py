"""What a tool says before it changes files, so every change can be rewound.

A tool that writes, removes or moves files calls `ToolContext.changes` first;
the session keeps what the files hold now (a checkpoint) and records the
change before it is made. Tools see only this protocol; the checkpoint store
behind it is the session's (`acp_agent.capabilities.session`'s checkpoints).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

__all__ = ("FileChanges",)


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
