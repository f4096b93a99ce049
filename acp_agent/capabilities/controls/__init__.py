"""What the person sets for a session: the permission mode, the model, the thinking effort,
and the client's own instructions (`ClientInstructions`).

`SessionControls` (a session service) holds them with the session's roots and
the front end's side (the editor bridge, the prompter), and offers them as
options (`MODES`, `DEFAULT_MODE` first, `mode_named` for the person's choice;
`SessionOption`; `MODE_KEY`, `MODEL_KEY`); a value it does not offer is
`InvalidSetting`. `setting_options` and `first_settings` are the options and the
recorded settings of values no session holds yet (a new one's answer), from
`_settings`, which loads without the session service. `workspace_roots` is the
session's cwd and its other roots. Its own package, low in the capabilities:
answering `session/new` needs it and nothing else of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from acp_agent.capabilities.controls._settings import (
    CONTROLS_PRODUCER,
    DEFAULT_MODE,
    DEFAULT_THOUGHT_LEVEL,
    INSTRUCTION_MODES,
    MODE_KEY,
    MODEL_KEY,
    MODES,
    SYSTEM_PROMPT_KEY,
    ClientInstructions,
    InvalidSetting,
    SessionOption,
    first_settings,
    mode_named,
    setting_options,
    workspace_roots,
)
from acp_agent.lazy_face import lazy_face as _lazy_face

if TYPE_CHECKING:
    from acp_agent.capabilities.controls._controls import SessionControls

__all__ = (
    "CONTROLS_PRODUCER",
    "DEFAULT_MODE",
    "DEFAULT_THOUGHT_LEVEL",
    "INSTRUCTION_MODES",
    "MODEL_KEY",
    "MODES",
    "MODE_KEY",
    "SYSTEM_PROMPT_KEY",
    "ClientInstructions",
    "InvalidSetting",
    "SessionControls",
    "SessionOption",
    "first_settings",
    "mode_named",
    "setting_options",
    "workspace_roots",
)

#: The session service and its helpers, loaded with their module on first use: a new
#: session's answer needs only the settings (`_settings`).
_LAZY_NAMES: Final = {"SessionControls": "_controls"}

__getattr__, __dir__ = _lazy_face(__name__, _LAZY_NAMES)
