"""Slash commands: the built-in ones, and the person's prompt templates.

A prompt whose first block is text starting with `/<name>`, for a command
that exists, runs that command; any other text starting with `/` is an
ordinary prompt (`/usr/bin is ...`). The rest of the line and the lines
after it are the command's arguments.

Built-in commands (`BUILTIN_COMMANDS`) answer without asking the model; their
answers are shown, not recorded, but what they change is recorded as facts
(the mode and model as `ConfigurationAdopted`, a title as
`SessionMetadataChanged`, a revoked permission rule in the store, a
compaction as `CompactionRecorded`), so it outlives a restart:

=================  ==========================================================
`/help`            the commands, with what each does
`/compact`         summarise the conversation so far (the context engine)
`/model [id]`      show the models, or switch the session's model
`/mode [id]`       show the permission modes, or switch the session's mode
`/permissions`     the remembered permission rules of the workspace;
                   `/permissions revoke <rule id>` revokes one
`/rules`           the rules the model follows: AGENTS.md files, the person's
                   rules, rules set by commands
`/title [text]`    show the session's title, or set it
=================  ==========================================================

Prompt templates are Markdown files, `<name>.md` in `.acp-agent/commands/`
of the workspace or in `commands/` of the user config directory (the
workspace's win a name they share; a built-in name is never taken). The file
is the prompt; `$ARGUMENTS` in it becomes what follows the command (without
`$ARGUMENTS`, the arguments follow the text as a paragraph of their own).
Optional front matter between `---` lines gives `description:` and
`argument-hint:`; nothing else is read. A template is only text the person
sends: it cannot grant permissions, change the mode or run a command (its
expansion is never read as a command again).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, Protocol

import attrs

from acp_agent.capabilities.context import (
    CompactionError,
    CompactionTrigger,
    ContextEngine,
    scan_rule_files,
)
from acp_agent.capabilities.controls import MODE_KEY, MODEL_KEY, InvalidSetting, SessionControls
from acp_agent.capabilities.permissions import list_rules, revoke_rule, rule_text
from acp_agent.capabilities.session._toolset import ToolSet
from acp_agent.content import ContentPart, TextContent
from acp_agent.core import Session, Store, StoreNotFound
from acp_agent.models import (
    DOCTOR_HINT,
    ModelSource,
    ProviderError,
    ProviderNotConfigured,
    ToolSpec,
)
from acp_agent.toolkit import CommandSpec, ExtraCommand
from acp_agent.values import Value

__all__ = (
    "BUILTIN_COMMANDS",
    "COMMANDS_DIRECTORY",
    "MAX_TEMPLATE_BYTES",
    "WORKSPACE_COMMANDS_DIRECTORY",
    "CommandHost",
    "CommandInvocation",
    "CommandRunner",
    "PromptTemplate",
    "available_commands",
    "load_templates",
    "parse_invocation",
)

logger = logging.getLogger(__name__)

#: Where a workspace keeps its prompt templates (relative to the workspace).
WORKSPACE_COMMANDS_DIRECTORY: Final = Path(".acp-agent") / "commands"
#: Where the person keeps theirs (relative to the user config directory).
COMMANDS_DIRECTORY: Final = "commands"
#: A template file larger than this is skipped.
MAX_TEMPLATE_BYTES: Final = 64 * 1024
#: The placeholder for the command's arguments.
ARGUMENTS: Final = "$ARGUMENTS"

_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_FRONT_MATTER_KEYS: Final = ("description", "argument-hint")
_DESCRIPTION_CHARS: Final = 80


BUILTIN_COMMANDS: Final = (
    CommandSpec("help", "Show the commands and what they do"),
    CommandSpec("compact", "Summarise the conversation so far to free context"),
    CommandSpec("model", "Show the models, or switch this session's model", "model id"),
    CommandSpec("mode", "Show the permission modes, or switch this session's mode", "mode id"),
    CommandSpec(
        "permissions", "List remembered permission rules, or revoke one", "revoke <rule id>"
    ),
    CommandSpec("rules", "Show the rules the model follows (AGENTS.md, your rules)"),
    CommandSpec("title", "Show or set this session's title", "new title"),
)
_BUILTIN_NAMES: Final = frozenset(spec.name for spec in BUILTIN_COMMANDS)


@attrs.frozen
class PromptTemplate(Value):
    """A person's command: a Markdown prompt with `$ARGUMENTS`."""

    spec: CommandSpec
    text: str
    origin: Literal["workspace", "user"]
    path: Path

    def expand(self, arguments: str) -> str:
        """The prompt for `arguments` (see the module docstring)."""
        arguments = arguments.strip()
        if ARGUMENTS in self.text:
            return self.text.replace(ARGUMENTS, arguments)
        return f"{self.text}\n\n{arguments}" if arguments else self.text


@attrs.frozen
class CommandInvocation(Value):
    """`/name arguments`, as typed."""

    name: str
    arguments: str
    #: The text block it was typed in.
    text: str


def parse_invocation(
    content: Sequence[ContentPart], names: Sequence[str] | frozenset[str]
) -> CommandInvocation | None:
    """The command a prompt runs, if its first part is the text `/<name>` for one of `names`."""
    if not content or not isinstance(content[0], TextContent):
        return None
    text = content[0].text
    stripped = text.lstrip()
    if not stripped.startswith("/"):
        return None
    name, _, arguments = stripped[1:].partition(" ")
    if "\n" in name:
        name, _, rest = name.partition("\n")
        arguments = f"{rest} {arguments}" if arguments else rest
    if name not in names:
        return None
    return CommandInvocation(name, arguments.strip(), text)


# --- templates ----------------------------------------------------------------------------


def load_templates(workspace: Path, config_dir: Path | None) -> list[PromptTemplate]:
    """The person's templates: the workspace's, then the user's not named alike, by name.

    Built-in names are skipped. Unreadable or oversized files are skipped with a warning.
    """
    found: dict[str, PromptTemplate] = {}
    folders: list[tuple[Path, Literal["workspace", "user"]]] = [
        (workspace / WORKSPACE_COMMANDS_DIRECTORY, "workspace")
    ]
    if config_dir is not None:
        folders.append((config_dir / COMMANDS_DIRECTORY, "user"))
    for folder, origin in folders:
        for template in _templates_in(folder, origin):
            if template.spec.name in _BUILTIN_NAMES:
                logger.warning(
                    "%s: /%s is a built-in command; skipped", template.path, template.spec.name
                )
                continue
            found.setdefault(template.spec.name, template)
    return [found[name] for name in sorted(found)]


def _templates_in(folder: Path, origin: Literal["workspace", "user"]) -> list[PromptTemplate]:
    try:
        paths = sorted(path for path in folder.iterdir() if path.suffix == ".md")
    except OSError:
        return []
    templates = []
    for path in paths:
        name = path.stem
        if not _NAME.match(name) or not path.is_file():
            continue
        try:
            if path.stat().st_size > MAX_TEMPLATE_BYTES:
                logger.warning("%s: larger than %d bytes; skipped", path, MAX_TEMPLATE_BYTES)
                continue
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            logger.warning("%s: cannot be read (%s); skipped", path, exc)
            continue
        fields, text = _front_matter(source, path)
        text = text.strip()
        if not text:
            continue
        description = fields.get("description") or _first_line(text)
        hint = fields.get("argument-hint") or ("arguments" if ARGUMENTS in text else None)
        templates.append(PromptTemplate(CommandSpec(name, description, hint), text, origin, path))
    return templates


def _front_matter(source: str, path: Path) -> tuple[dict[str, str], str]:
    lines = source.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, source
    end = next((i for i, line in enumerate(lines) if i and line.strip() == "---"), None)
    if end is None:
        return {}, source
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        key, colon, value = line.partition(":")
        key = key.strip()
        if not colon or not key:
            continue
        if key in _FRONT_MATTER_KEYS:
            fields[key] = value.strip().strip("\"'")
        else:
            # A template is text the person sends: it cannot set tools, modes or permissions.
            logger.warning("%s: front matter %r ignored (a command is a prompt only)", path, key)
    return fields, "\n".join(lines[end + 1 :])


def _first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    line = line.lstrip("#").strip()
    if len(line) > _DESCRIPTION_CHARS:
        line = line[: _DESCRIPTION_CHARS - 1].rstrip() + "…"
    return line


def available_commands(
    templates: Sequence[PromptTemplate], extra: Sequence[CommandSpec] = ()
) -> list[CommandSpec]:
    """What the editor lists: the built-ins, `extra` built-ins, then the templates."""
    return [*BUILTIN_COMMANDS, *extra, *(template.spec for template in templates)]


# --- running built-ins ---------------------------------------------------------------------


class CommandHost(Protocol):
    """What a command changes through the front end, which also tells the editor."""

    async def adopt(self, values: Mapping[str, Any]) -> None:
        """Record and apply new settings (`mode`, `model`, `thought_level`)."""
        ...

    async def set_title(self, title: str) -> None:
        """Record the session's new title."""
        ...


class CommandRunner:
    """Runs one session's built-in commands; each answers with Markdown to show.

    **Parameters:**

    * `session`: the core session (its main branch, title and workspace).
    * `controls`, `models`: the session's settings and the models to choose from.
    * `store`: where permission rules are kept.
    * `context`, `toolset`: the main branch's context engine and the session's tools
      (`/compact`, `/rules`).
    * `config_dir`: the person's config directory (their rules and templates).
    * `extra`: built-ins other components offer, by name.
    * `clock`: wall time for revocations.
    """

    def __init__(
        self,
        *,
        session: Session,
        controls: SessionControls,
        models: ModelSource,
        store: Store,
        context: ContextEngine,
        toolset: ToolSet,
        config_dir: Path | None,
        extra: Mapping[str, ExtraCommand] | None = None,
        clock: Callable[[], float],
    ) -> None:
        self.session = session
        self.controls = controls
        self.models = models
        self.store = store
        self.context = context
        self.toolset = toolset
        self.config_dir = config_dir
        self.extra = dict(extra or {})
        self.clock = clock

    @property
    def workspace(self) -> Path:
        return Path(self.controls.workspace)

    def templates(self) -> list[PromptTemplate]:
        """The person's templates, read now."""
        return load_templates(self.workspace, self.config_dir)

    def commands(self) -> list[CommandSpec]:
        """Every command, as the editor lists it (templates read now)."""
        extra = [command.spec for command in self.extra.values()]
        return available_commands(self.templates(), extra)

    def builtin_names(self) -> frozenset[str]:
        return _BUILTIN_NAMES | frozenset(self.extra)

    async def run(self, invocation: CommandInvocation, host: CommandHost) -> str:
        """Run a built-in command; returns what to show the person."""
        name, arguments = invocation.name, invocation.arguments
        if name in self.extra:
            return await self.extra[name].run(arguments)
        handler = {
            "help": self._help,
            "compact": self._compact,
            "model": self._model,
            "mode": self._mode,
            "permissions": self._permissions,
            "rules": self._rules,
            "title": self._title,
        }[name]
        return await handler(arguments, host)

    async def _help(self, arguments: str, host: CommandHost) -> str:
        lines = ["Commands:", ""]
        templates = {template.spec.name: template for template in self.templates()}
        for spec in self.commands():
            line = f"- `{spec.usage()}`: {spec.description}"
            template = templates.get(spec.name)
            if template is not None:
                line += f" (from {template.origin} `{template.path}`)"
            lines.append(line)
        return "\n".join(lines)

    async def _compact(self, arguments: str, host: CommandHost) -> str:
        try:
            handle = self.models.open(self.controls.model_id)
        except ProviderNotConfigured as exc:
            return f"Nothing was compacted: {exc}"
        definitions = self.toolset.current.definitions
        tools = [ToolSpec(d.name, d.description, d.input_schema) for d in definitions]
        try:
            recorded = await self.context.compact(
                model=handle.model,
                provider=handle.provider,
                tools=tools,
                trigger=CompactionTrigger.ON_DEMAND,
            )
        except CompactionError as exc:
            return f"Nothing was compacted: {exc}"
        except ProviderError as exc:
            return f"Nothing was compacted: the model request failed: {exc}"
        return (
            "Compacted: the conversation so far is now a summary "
            f"({len(recorded.summary)} characters); rules and state still hold."
        )

    async def _model(self, arguments: str, host: CommandHost) -> str:
        current = self.controls.model_id
        if not arguments:
            if current is None:
                return f"No model is configured for this session.{DOCTOR_HINT}"
            offered = self._choices(MODEL_KEY)
            return (
                f"Model: `{current}`.\n\nAvailable: {offered}\n\nSwitch with `/model <model id>`."
            )
        return await self._change(MODEL_KEY, arguments, host, "Model")

    async def _mode(self, arguments: str, host: CommandHost) -> str:
        if not arguments:
            offered = self._choices(MODE_KEY)
            return (
                f"Mode: `{self.controls.mode.value}`.\n\nModes: {offered}\n\n"
                "Switch with `/mode <mode id>`."
            )
        return await self._change(MODE_KEY, arguments, host, "Mode")

    def _choices(self, option_id: str) -> str:
        for option in self.controls.options(self.models):
            if option.id == option_id:
                return ", ".join(f"`{choice.value}`" for choice in option.choices)
        return "none"

    async def _change(self, key: str, value: str, host: CommandHost, what: str) -> str:
        try:
            values = self.controls.change(key, value.strip(), self.models)
        except InvalidSetting as exc:
            return f"Not changed: {exc}."
        await host.adopt(values)
        return f"{what} set to `{value.strip()}`."

    async def _permissions(self, arguments: str, host: CommandHost) -> str:
        workspace = self.controls.workspace
        rules = await list_rules(self.store, workspace, owner=self.controls.owner)
        verb, _, rule_id = arguments.partition(" ")
        if verb == "revoke":
            rule_id = rule_id.strip()
            if rule_id not in {rule.rule_id for rule in rules}:
                return f"No rule `{rule_id}` holds in {workspace}; `/permissions` lists them."
            try:
                revoked = await revoke_rule(self.store, rule_id, now=self.clock())
            except StoreNotFound:
                return f"No rule `{rule_id}`."
            return f"Revoked `{revoked.rule_id}`: {_rule_line(revoked)} will be asked about again."
        if arguments:
            return "Usage: `/permissions` lists the rules; `/permissions revoke <rule id>`."
        if not rules:
            return f"No permission rules are remembered for {workspace}."
        lines = [f"Permission rules for {workspace}:", ""]
        lines += [f"- `{rule.rule_id}`: {_rule_line(rule)}" for rule in rules]
        lines += ["", "Revoke one with `/permissions revoke <rule id>`."]
        return "\n".join(lines)

    async def _rules(self, arguments: str, host: CommandHost) -> str:
        import anyio.to_thread

        workspace, config_dir = self.workspace, self.config_dir
        roots = self.controls.additional_directories
        files = await anyio.to_thread.run_sync(
            lambda: scan_rule_files(workspace, config_dir, roots)
        )
        ledger = (await self.context.sync()).rules
        commands = [record for record in ledger.holding() if record.rule_id.startswith("command/")]
        if not files and not commands:
            return (
                "No rules: add an AGENTS.md to the workspace, or your own rules to "
                f"{config_dir or 'your config directory'} (AGENTS.md, rules/*.md)."
            )
        lines = ["Rules the model follows:", ""]
        found = [(f.rule_id, f.scope, f.text) for f in files]
        found += [(r.rule_id, r.scope, r.text) for r in commands]
        for rule_id, scope, text in found:
            lines.append(f"- `{rule_id}` (scope `{scope}`): {_summary(text)}")
        return "\n".join(lines)

    async def _title(self, arguments: str, host: CommandHost) -> str:
        title = " ".join(arguments.split())
        if not title:
            current = self.session.record.title
            return f"Title: {current}" if current else "This session has no title yet."
        await host.set_title(title)
        return f"Title set to: {title}"


def _rule_line(rule: Any) -> str:
    decision = "always allow" if rule.decision == "allow" else "always reject"
    tool = f" ({rule.tool})" if rule.scope in ("command_prefix", "exact_command") else ""
    return f"{decision} {rule_text(rule)}{tool}"


def _summary(text: str) -> str:
    line = _first_line(text)
    return line or "(empty)"
