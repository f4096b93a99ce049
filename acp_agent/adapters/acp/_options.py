"""A session's settings on the wire: `modes` and `configOptions`, always complete.

The permission mode is offered twice, kept in step: as the legacy `modes`
(`session/set_mode`, `current_mode_update`) and as the `mode` config option;
the model and the thinking effort are config options only (see
`acp_agent.capabilities.session` for which options exist when).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from acp_agent.agent import MODES, SessionOption
from acp_agent.models import ModelSource
from protocol import types

if TYPE_CHECKING:
    from acp_agent.agent import PermissionMode

__all__ = (
    "Settings",
    "config_option_update",
    "config_options",
    "mode_state",
    "mode_update",
    "session_settings",
)

_CATEGORIES = {category.value: category for category in types.SessionConfigOptionCategory}


class Settings(Protocol):
    """A session's settings: an open one's (`SessionControls`), or a new one's as it was
    written (`NewSession`), answered before the session opens."""

    @property
    def mode(self) -> PermissionMode: ...

    def options(self, models: ModelSource) -> list[SessionOption]: ...


def session_settings(controls: Settings, models: ModelSource) -> dict[str, Any]:
    """The `modes` and `configOptions` every session response carries, complete."""
    return {"modes": mode_state(controls), "config_options": config_options(controls, models)}


def mode_state(controls: Settings) -> types.SessionModeState:
    """The legacy modes: every permission mode, and the current one."""
    return types.SessionModeState(
        current_mode_id=controls.mode.value,
        available_modes=[
            types.SessionMode(id=choice.value, name=choice.name, description=choice.description)
            for choice in MODES
        ],
    )


def config_options(controls: Settings, models: ModelSource) -> list[types.SessionConfigOption]:
    """Every config option with its current value, in priority order."""
    return [_option(option) for option in controls.options(models)]


def _option(option: SessionOption) -> types.SessionConfigOption:
    return types.SessionConfigOptionSelect(
        id=option.id,
        name=option.name,
        description=option.description,
        category=_CATEGORIES.get(option.category),
        current_value=option.current,
        options=[
            types.SessionConfigSelectOption(
                value=choice.value, name=choice.name, description=choice.description
            )
            for choice in option.choices
        ],
    )


def mode_update(controls: Settings) -> types.CurrentModeUpdate:
    return types.CurrentModeUpdate(current_mode_id=controls.mode.value)


def config_option_update(controls: Settings, models: ModelSource) -> types.ConfigOptionUpdate:
    return types.ConfigOptionUpdate(config_options=config_options(controls, models))
