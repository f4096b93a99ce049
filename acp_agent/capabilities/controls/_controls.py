"""A session's settings and the editor's side of it, as the capabilities see them.

One `SessionControls` per open session (a session-scope service). The
editor's side, `client` (its file system and terminals) and `prompter` (asks
the person), is the front end's, given when the session opens; the
workspace's `roots` are the cwd, then the additional directories the client
activated for this attachment. The settings,
`model_id`, `mode`, `reasoning_effort` and the client's `instructions` (its
own system prompt, which the session's guide carries), are facts: `adopt()` records
them as `ConfigurationAdopted` on the main branch and applies them, and
`restore()` applies the last recorded values when a session is loaded, so
a session keeps them across restarts. Each may change at any time; the next
model request or admission uses the new value.

`options()` describes the settings as a front end offers them, the complete
set every time, in this order (wire-neutral; the adapter makes ACP config
options of them):

==================  ==============  ============================================
id (= value key)    category        choices
==================  ==============  ============================================
`mode`              `mode`          `sandboxed` (new sessions'), `ask`,
                                    `accept-edits`, `plan`, `bypass`
`model`             `model`         the configured models usable now, and the
                                    session's own (only when there is a model)
`thought_level`     `thought_level` `default`, `low`, `medium`, `high` (only when
                                    the session's model takes a reasoning effort)
==================  ==============  ============================================

`change(option_id, value)` checks a choice and returns the values to adopt;
choosing a model without reasoning also resets the thought level, so a
request never carries an effort its model would reject.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from acp_agent.capabilities.controls._settings import (
    CONTROLS_PRODUCER,
    DEFAULT_MODE,
    DEFAULT_THOUGHT_LEVEL,
    EFFORTS,
    MODE_KEY,
    MODEL_KEY,
    SYSTEM_PROMPT_KEY,
    THOUGHT_KEY,
    ClientInstructions,
    InvalidSetting,
    SessionOption,
    setting_options,
    workspace_roots,
)
from acp_agent.capabilities.permissions import PermissionMode, PermissionPrompter, RefusingPrompter
from acp_agent.core import Branch, ConfigurationAdopted, Event, new_id
from acp_agent.models import ModelSource, ReasoningEffort
from acp_agent.toolkit import NO_CLIENT, ClientBridge

__all__ = ("SessionControls", "recorded_configuration")


class SessionControls:
    """The model, the permission mode and the editor's side of one session."""

    def __init__(
        self,
        session_id: str,
        cwd: str,
        *,
        client: ClientBridge = NO_CLIENT,
        prompter: PermissionPrompter | None = None,
        on_instructions: Callable[[ClientInstructions | None], None] | None = None,
        owner: str = "",
    ) -> None:
        """`client` and `prompter`: the front end's side (none: no editor, no one asked);
        `on_instructions` hears of the client's instructions each time they are applied
        (the session's guide carries them); `owner`: the person the session belongs to."""
        self.session_id = session_id
        #: The session's person: the permission rules that hold are theirs.
        self.owner = owner
        #: The workspace: the session's root, absolute and resolved; rules are kept per it.
        self.workspace = str(Path(cwd).resolve())
        #: Every root of the workspace: the cwd first, then the additional directories
        #: the front end activated (`set_additional_directories`); none until it does.
        self.roots: tuple[Path, ...] = (Path(self.workspace),)
        #: The editor's file system and terminals.
        self.client = client
        #: Who answers permission questions.
        self.prompter: PermissionPrompter = prompter or RefusingPrompter()
        #: `<provider>/<model>`, or None: none configured when the session started.
        self.model_id: str | None = None
        self.mode = DEFAULT_MODE
        #: None: the model's own default (no effort is sent).
        self.reasoning_effort: ReasoningEffort | None = None
        #: The client's own instructions for the session; None: the agent's only.
        self.instructions: ClientInstructions | None = None
        self._on_instructions = on_instructions

    @property
    def additional_directories(self) -> tuple[Path, ...]:
        """The roots besides the cwd, in order."""
        return self.roots[1:]

    def set_additional_directories(self, directories: Iterable[str]) -> None:
        """Make `directories` the workspace's other roots (resolved; the cwd and repeats are
        left out). Tools, permissions, rules and state use them from their next call."""
        self.roots = workspace_roots(self.workspace, directories)

    async def adopt(self, branch: Branch, values: Mapping[str, Any]) -> None:
        """Record `values` (`model`, `mode`) as adopted on `branch` and apply them."""
        self._apply(values)
        await branch.record_fact(
            ConfigurationAdopted(new_id("cfg"), dict(values)), producer=CONTROLS_PRODUCER
        )

    def values(self) -> dict[str, Any]:
        """The current settings as `adopt` takes them (a fork keeps its source's)."""
        return {
            MODEL_KEY: self.model_id,
            MODE_KEY: self.mode.value,
            THOUGHT_KEY: self.thought_level,
            SYSTEM_PROMPT_KEY: None if self.instructions is None else self.instructions.as_value(),
        }

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
        if THOUGHT_KEY in values:
            effort = values[THOUGHT_KEY]
            self.reasoning_effort = cast(ReasoningEffort, effort) if effort in EFFORTS else None
        if SYSTEM_PROMPT_KEY in values:
            self.instructions = ClientInstructions.from_value(values[SYSTEM_PROMPT_KEY])
            if self._on_instructions is not None:  # every line's next request reads them
                self._on_instructions(self.instructions)

    # --- the settings as options --------------------------------------------------------

    @property
    def thought_level(self) -> str:
        return self.reasoning_effort or DEFAULT_THOUGHT_LEVEL

    def options(self, models: ModelSource) -> list[SessionOption]:
        """Every setting with its choices and current value (see the module docstring)."""
        return setting_options(models, self.mode, self.model_id, self.thought_level)

    def change(self, option_id: str, value: str, models: ModelSource) -> dict[str, Any]:
        """The values to adopt for choosing `value` in option `option_id`.

        `InvalidSetting` when the option is not offered now or the value is not one
        of its choices.
        """
        options = {option.id: option for option in self.options(models)}
        option = options.get(option_id)
        if option is None:
            known = ", ".join(options)
            raise InvalidSetting(f"no option {option_id!r} (options: {known})", unknown_option=True)
        if value not in {choice.value for choice in option.choices}:
            known = ", ".join(choice.value for choice in option.choices)
            raise InvalidSetting(f"{option_id}: no choice {value!r} (choices: {known})")
        values: dict[str, Any] = {option_id: value}
        resets_effort = option_id == MODEL_KEY and not models.traits(value).reasoning
        if resets_effort and self.reasoning_effort is not None:
            values[THOUGHT_KEY] = DEFAULT_THOUGHT_LEVEL
        return values


def recorded_configuration(events: Iterable[Event]) -> dict[str, Any]:
    """The configuration values in force after `events`: later adoptions override earlier."""
    values: dict[str, Any] = {}
    for event in events:
        if isinstance(event.payload, ConfigurationAdopted):
            values.update(event.payload.values)
    return values
