"""Which session each workspace folder has, kept across editor restarts.

One JSON object in the agent's data folder maps a folder's resolved path to its
session's id; the LSP front end loads that session when the editor opens the folder
again, and makes a new one when there is none (or it was deleted).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ("WorkspaceSessions",)


class WorkspaceSessions:
    """The folder -> session map in `path` (read on each use: several editors share it)."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}

    def session_of(self, folder: str) -> str | None:
        """The session last used for `folder`, if any."""
        return self._read().get(folder)

    def remember(self, folder: str, session_id: str) -> None:
        """Record `session_id` as `folder`'s session (written atomically)."""
        data = self._read()
        data[folder] = session_id
        self._path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._path.with_name(f".{self._path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
        temporary.replace(self._path)
