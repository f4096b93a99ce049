"""A session's configuration options in v2's shape: v1's set, each `id` named `configId`.

The same options as over v1 (`adapters/acp/_options`: the model, the permission
mode, the thinking effort); v2 has no modes, so the mode is only an option. The
set goes in the answers to `session/new`, `session/resume` and
`session/set_config_option`, and as a `config_option_update` when something else
changes a setting (a slash command such as `/mode`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.converter import shared_converter

if TYPE_CHECKING:
    from acp_agent.agent import SessionHandle
    from acp_agent.models import ModelSource
    from protocol.v2 import types

__all__ = ("config_option_update", "options")


def options(handle: SessionHandle, models: ModelSource) -> list[types.SessionConfigOption]:
    """The session's complete option set, typed as v2's."""
    from acp_agent.adapters.acp._options import config_options
    from protocol.v2 import types

    converter = shared_converter(include_unstable=True)
    listed = converter.unstructure(config_options(handle.controls, models))
    for option in listed:
        option["configId"] = option.pop("id")
    return converter.structure(listed, list[types.SessionConfigOption])


def config_option_update(handle: SessionHandle, models: ModelSource) -> dict[str, Any]:
    """The `config_option_update` body carrying the complete set (it replaces the last)."""
    converter = shared_converter(include_unstable=True)
    return {
        "sessionUpdate": "config_option_update",
        "configOptions": converter.unstructure(options(handle, models)),
    }
