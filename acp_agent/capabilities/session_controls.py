"""A session's settings and the editor's side of it, as the capabilities see them.

One `SessionControls` per open session (a session-scope service). The
front end (the ACP adapter) fills in the editor's side, `client` (its file
system and terminals) and `prompter` (asks the person), right after opening
the session. The settings, `model_id` and `mode`, are facts: `adopt()`
records them as `ConfigurationAdopted` on the main branch and applies them,
and `restore()` applies the last recorded values when a session is loaded,
so a session keeps its model and mode across restarts. Either may change at
any time; the next model request or admission uses the new value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from acp_agent.capabilities.client_bridge import NO_CLIENT, ClientBridge
from acp_agent.capabilities.permissions import (
    PermissionMode,
    PermissionPrompter,
    RefusingPrompter,
)
from acp_agent.core import Branch, ConfigurationAdopted, Event, new_id

__all__ = ("MODEL_KEY", "MODE_KEY", "PRODUCER", "SessionControls", "recorded_configuration")

#: The producer of the configuration facts.
PRODUCER: Final = "capabilities.session"
#: `ConfigurationAdopted` value keys.
MODEL_KEY: Final = "model"
MODE_KEY: Final = "mode"


class SessionControls:
    """The model, the permission mode and the editor's side of one session."""

    def __init__(self, session_id: str, cwd: str) -> None:
        self.session_id = session_id
        #: The workspace: the session's root, absolute and resolved; rules are kept per it.
        self.workspace = str(Path(cwd).resolve())
        self.roots: tuple[Path, ...] = (Path(self.workspace),)
        #: The editor's file system and terminals (none until the front end says).
        self.client: ClientBridge = NO_CLIENT
        #: Who answers permission questions (no one until the front end says).
        self.prompter: PermissionPrompter = RefusingPrompter()
        #: `<provider>/<model>`, or None: none configured when the session started.
        self.model_id: str | None = None
        self.mode = PermissionMode.ASK

    async def adopt(self, branch: Branch, values: Mapping[str, Any]) -> None:
        """Record `values` (`model`, `mode`) as adopted on `branch` and apply them."""
        self._apply(values)
        await branch.record_fact(
            ConfigurationAdopted(new_id("cfg"), dict(values)), producer=PRODUCER
        )

    def restore(self, events: Iterable[Event]) -> dict[str, Any]:
        """Apply the configuration `events` last recorded; returns it."""
        values = recorded_configuration(events)
        self._apply(values)
        return values

    def _apply(self, values: Mapping[str, Any]) -> None:
        if MODEL_KEY in values:
            model = values[MODEL_KEY]
            self.model_id = model if isinstance(model, str) and model else None
        if MODE_KEY in values:
            try:
                self.mode = PermissionMode(values[MODE_KEY])
            except ValueError:
                self.mode = PermissionMode.ASK


def recorded_configuration(events: Iterable[Event]) -> dict[str, Any]:
    """The configuration values in force after `events`: later adoptions override earlier."""
    values: dict[str, Any] = {}
    for event in events:
        if isinstance(event.payload, ConfigurationAdopted):
            values.update(event.payload.values)
    return values
