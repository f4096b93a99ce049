"""What the person sets for a session: the permission mode, the model, the thinking effort,
and the client's own instructions (`ClientInstructions`).

`SessionControls` (a session service) holds them with the session's roots and
the front end's side (the editor bridge, the prompter), and offers them as
options (`MODES`, `DEFAULT_MODE` first, `mode_named` for the person's choice;
`SessionOption`; `MODE_KEY`, `MODEL_KEY`); a value it does
not offer is `InvalidSetting`. `workspace_roots` is the session's cwd and its
other roots. Its own package, low in the capabilities: answering `session/new`
needs it and nothing else of them.
"""

from __future__ import annotations

from acp_agent.capabilities.controls._controls import (
    DEFAULT_MODE,
    INSTRUCTION_MODES,
    MODE_KEY,
    MODEL_KEY,
    MODES,
    SYSTEM_PROMPT_KEY,
    ClientInstructions,
    InvalidSetting,
    SessionControls,
    SessionOption,
    mode_named,
    workspace_roots,
)

__all__ = (
    "DEFAULT_MODE",
    "INSTRUCTION_MODES",
    "MODEL_KEY",
    "MODES",
    "MODE_KEY",
    "SYSTEM_PROMPT_KEY",
    "ClientInstructions",
    "InvalidSetting",
    "SessionControls",
    "SessionOption",
    "mode_named",
    "workspace_roots",
)
