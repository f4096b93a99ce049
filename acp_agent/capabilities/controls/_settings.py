"""A session's settings as data: the keys, the choices, the options a front end offers.

What answering `session/new` needs of the controls (the options, the first
settings to record), apart from `SessionControls` (`_controls`), the session
service that holds them with the front end's side and loads with the runtime.
See `_controls` for what each option offers and when.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from acp_agent.capabilities.permissions import PermissionMode
from acp_agent.models import ModelSource
from acp_agent.values import Value

__all__ = (
    "CONTROLS_PRODUCER",
    "DEFAULT_MODE",
    "DEFAULT_THOUGHT_LEVEL",
    "EFFORTS",
    "INSTRUCTION_MODES",
    "MODEL_KEY",
    "MODES",
    "MODE_KEY",
    "SYSTEM_PROMPT_KEY",
    "THOUGHT_KEY",
    "THOUGHT_LEVELS",
    "Choice",
    "ClientInstructions",
    "InvalidSetting",
    "SessionOption",
    "first_settings",
    "mode_named",
    "setting_options",
    "workspace_roots",
)

#: The producer of the configuration facts.
CONTROLS_PRODUCER: Final = "capabilities.session"
#: `ConfigurationAdopted` value keys, which are also the option ids.
MODEL_KEY: Final = "model"
MODE_KEY: Final = "mode"
THOUGHT_KEY: Final = "thought_level"
#: The client's instructions (`ClientInstructions.as_value()`, or None): no option.
SYSTEM_PROMPT_KEY: Final = "system_prompt"
#: The thought level that sends no reasoning effort: the model's own default.
DEFAULT_THOUGHT_LEVEL: Final = "default"


class InvalidSetting(ValueError):
    """A setting or choice that does not exist (the message says which, and what does);
    `unknown_option` when the setting itself is not offered, so a front end can name the
    field at fault (the option's id, not its value)."""

    def __init__(self, message: str, *, unknown_option: bool = False) -> None:
        super().__init__(message)
        self.unknown_option = unknown_option


@attrs.frozen
class Choice(Value):
    """One value an option can take."""

    value: str
    name: str
    description: str | None = None


#: How a client's instructions combine with the agent's.
INSTRUCTION_MODES: Final = ("append", "override")


@attrs.frozen
class ClientInstructions(Value):
    """A client's own instructions for a session (ACP's `systemPrompt`): added to the
    agent's (`append`) or in place of them (`override`); the session's guide carries
    them (`acp_agent.capabilities.context.apply_instructions`)."""

    mode: str = attrs.field(validator=attrs.validators.in_(INSTRUCTION_MODES))
    text: str

    def as_value(self) -> dict[str, str]:
        """As a recorded configuration value."""
        return {"mode": self.mode, "text": self.text}

    @classmethod
    def from_value(cls, value: Any) -> ClientInstructions | None:
        """The instructions a recorded value holds (None: none, or one this version
        cannot read)."""
        if not isinstance(value, Mapping):
            return None
        mode, text = value.get("mode"), value.get("text")
        if mode not in INSTRUCTION_MODES or not isinstance(text, str):
            return None
        return cls(mode, text)


@attrs.frozen
class SessionOption(Value):
    """A setting as a front end offers it: its choices and the current one."""

    id: str
    name: str
    #: `mode`, `model` or `thought_level`.
    category: str
    current: str
    choices: tuple[Choice, ...]
    description: str | None = None


#: The permission modes, as a picker offers them (see `acp_agent.capabilities.permissions`).
MODES: Final = (
    Choice(
        PermissionMode.SANDBOXED.value,
        "Sandboxed",
        "Edit files and run commands in the sandbox without asking; ask before leaving it "
        "and before network access",
    ),
    Choice(PermissionMode.ASK.value, "Ask", "Ask before edits, commands and network access"),
    Choice(
        PermissionMode.ACCEPT_EDITS.value,
        "Accept edits",
        "Edit files without asking; ask before commands and network access",
    ),
    Choice(PermissionMode.PLAN.value, "Plan", "Read-only: look around and plan, change nothing"),
    Choice(
        PermissionMode.BYPASS.value,
        "Bypass permissions",
        "Run everything without asking, commands outside the sandbox (paths outside the "
        "workspace are still asked about)",
    ),
)
#: A new session's mode, unless the person names another (`mode_named`).
DEFAULT_MODE: Final = PermissionMode.SANDBOXED
#: The reasoning efforts, for models that take one.
THOUGHT_LEVELS: Final = (
    Choice(
        DEFAULT_THOUGHT_LEVEL,
        "Default",
        "No effort requested: the model's own default (Claude models do not think)",
    ),
    Choice("low", "Low", "Think briefly"),
    Choice("medium", "Medium", "Think more"),
    Choice("high", "High", "Think hardest"),
)
#: The reasoning efforts a model may be asked for (`ReasoningEffort`).
EFFORTS: Final = {"low", "medium", "high"}


def mode_named(name: str | None) -> PermissionMode:
    """The mode `name` names (`ACP_AGENT_MODE`), `DEFAULT_MODE` for none or an unknown one."""
    try:
        return PermissionMode(name) if name else DEFAULT_MODE
    except ValueError:
        return DEFAULT_MODE


def first_settings(
    model_id: str | None, mode: PermissionMode, instructions: ClientInstructions | None
) -> dict[str, Any]:
    """What a new session records of its settings with itself (`ConfigurationAdopted`
    values): its model and mode, and the client's instructions when given."""
    values: dict[str, Any] = {MODEL_KEY: model_id, MODE_KEY: mode.value}
    if instructions is not None:
        values[SYSTEM_PROMPT_KEY] = instructions.as_value()
    return values


def setting_options(
    models: ModelSource, mode: PermissionMode, model_id: str | None, thought_level: str
) -> list[SessionOption]:
    """Every setting with its choices and current value, in priority order: the mode,
    then (with a model) the model and, for a model that reasons, the thinking effort."""
    options = [
        SessionOption(
            MODE_KEY,
            "Mode",
            "mode",
            mode.value,
            MODES,
            "What the agent may do without asking",
        )
    ]
    if model_id is not None:
        offered = [*models.available_models()]
        if model_id not in offered:
            offered.insert(0, model_id)
        options.append(
            SessionOption(
                MODEL_KEY,
                "Model",
                "model",
                model_id,
                tuple(Choice(model, model) for model in offered),
                "The model that answers in this session",
            )
        )
        if models.traits(model_id).reasoning:
            options.append(
                SessionOption(
                    THOUGHT_KEY,
                    "Thinking",
                    "thought_level",
                    thought_level,
                    THOUGHT_LEVELS,
                    "How hard the model reasons before it answers",
                )
            )
    return options


def workspace_roots(cwd: str, additional_directories: Iterable[str]) -> tuple[Path, ...]:
    """The roots of a workspace: `cwd`, then each additional directory once, resolved, in
    order; one that resolves to the cwd (or to a root before it) is left out."""
    roots = [Path(cwd).resolve()]
    for directory in additional_directories:
        root = Path(directory).resolve()
        if root not in roots:
            roots.append(root)
    return tuple(roots)
