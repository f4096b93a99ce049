"""Permission to run a tool call: modes, remembered rules, and asking the person.

Admission decides from three things only: the session's mode, the rules the
person chose to remember for the workspace, and the person's answer when
asked. Nothing the model or a tool produces (file contents, tool output, tags
in messages) can grant permission: none of it reaches this module.

Modes (`PermissionMode`):

==============  ===============================================================
`sandboxed`     the default: reads and edits run; commands run in the command
                sandbox without asking (`confined`); a command that asks to
                leave it, network and anything else are asked about (unless a
                rule allows them)
`ask`           reads run; edits, commands, network and anything else are
                asked about (unless a rule allows them)
`accept-edits`  edits run without asking too; commands and network are asked
`plan`          read-only: reads run; every side effect is refused, with an
                explanation the model reads
`bypass`        everything runs without asking, commands outside the sandbox
==============  ===============================================================

Whatever the mode, a call touching paths outside the session's roots is
asked about (with the paths named), and a rule that rejects a call refuses it.
Where the sandbox cannot run, the sandboxed mode asks about every command as
`ask` does (the caller passes `confined=False` and says why in the question).

A command rule ("always allow commands starting with `pip install`") lets the
command run without asking outside the sandbox: in `ask` and `accept-edits`
every command runs outside it, and in `sandboxed` such a rule answers the
question of leaving it. Commands only ever run sandboxed in `sandboxed`.

The question offers four answers: allow once, allow always, reject once,
reject always. "Always" becomes a `PermissionRule` kept in the store for the
workspace and the tool, narrowed by what the call needs: a command prefix
(`git status`, `pytest -q`) for commands, a path glob for edits (`src/**`,
relative to the cwd, or `/home/me/lib/src/**`, absolute, for a file in
another root of the workspace: its additional directories), the whole tool
otherwise (and for MCP tools, named `mcp__<server>__<tool>`). Rules are
listed with `list_rules` and revoked with `revoke_rule`; a rule that says
what one in force says is kept once.

A command-prefix rule never matches a command line that chains, pipes,
redirects or loops (`;`, `&&`, `|`, `>`, `$(`, backticks, newlines):
`git status; rm -rf ~` is asked about even where `git status` is always
allowed. "Always" on such a command remembers that exact command line (an
exact-command rule, the one kind that covers a chain), and nothing longer or
shorter. An "always" answer is offered only when the rule it would keep
covers the very call asked about, so the same call is not asked again.
"""

from __future__ import annotations

import enum
import fnmatch
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Final, Protocol

import attrs

from acp_agent.capabilities.permissions._modes import PermissionMode
from acp_agent.core import CallId, PermissionRule, SessionId, Store, new_id
from acp_agent.toolkit import ContentPart, Effect, Location, PermissionNeed, ToolKind
from acp_agent.values import Value

__all__ = (
    "MCP_TOOL_PREFIX",
    "Allow",
    "Ask",
    "Decision",
    "PermissionAnswer",
    "PermissionChoice",
    "PermissionOption",
    "PermissionPrompter",
    "PermissionQuestion",
    "Refuse",
    "RefusingPrompter",
    "RuleDecision",
    "RuleScope",
    "command_prefix",
    "confined",
    "decide",
    "list_rules",
    "options_for",
    "remember",
    "revoke_rule",
    "rule_for",
    "rule_matches",
    "rule_text",
)

#: Tools from MCP servers are named `mcp__<server>__<tool>`; their rules name the tool.
MCP_TOOL_PREFIX: Final = "mcp__"

#: Shell syntax that chains, substitutes or redirects: no command-prefix rule covers it.
_COMPOUND: Final = re.compile(r"[;&|<>`\n\r]|\$\(")


class PermissionChoice(enum.StrEnum):
    """The answers a person can give; the value is the ACP option kind and our option id."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT_ONCE = "reject_once"
    REJECT_ALWAYS = "reject_always"

    @property
    def allows(self) -> bool:
        return self in (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS)

    @property
    def remembered(self) -> bool:
        return self in (PermissionChoice.ALLOW_ALWAYS, PermissionChoice.REJECT_ALWAYS)


class RuleScope(enum.StrEnum):
    """What a remembered rule matches, besides its workspace and tool."""

    #: Every call of the tool.
    TOOL = "tool"
    #: Commands starting with these words (whole words), without chaining.
    COMMAND_PREFIX = "command_prefix"
    #: This command line exactly (surrounding blanks aside), chained or not.
    EXACT_COMMAND = "exact_command"
    #: Paths matching a glob relative to the workspace's cwd, or an absolute one for the
    #: other roots (`**` spans folders).
    PATH_GLOB = "path_glob"
    #: Every call of one MCP server's tool.
    MCP_TOOL = "mcp_tool"


class RuleDecision(enum.StrEnum):
    ALLOW = "allow"
    DENY = "deny"


# --- the question and its answer ------------------------------------------------------


@attrs.frozen
class PermissionOption(Value):
    """One answer offered: its id (the choice's value), its kind and its label."""

    choice: PermissionChoice
    label: str

    @property
    def option_id(self) -> str:
        return self.choice.value


@attrs.frozen
class PermissionQuestion(Value):
    """What the person is asked about one call, with everything they need to decide."""

    permission_id: str
    call_id: str
    tool: str
    title: str
    kind: ToolKind
    #: The full command or path(s), shown whole.
    target: str
    #: Why it is asked, when there is more to say (e.g. paths outside the workspace).
    note: str | None
    arguments: Mapping[str, Any]
    locations: tuple[Location, ...]
    options: tuple[PermissionOption, ...]
    #: The branch whose call it is, when it is not the main line's.
    branch_id: str | None = None
    #: What the call would change, worked out before asking (a diff); shown with it.
    content: tuple[ContentPart, ...] = ()
    #: The call reaches outside every root of the workspace (a path, a command's cwd).
    outside_roots: bool = False


@attrs.frozen
class PermissionAnswer(Value):
    """The person's choice; `None` when the question was withdrawn (the turn ended), or
    when the client could not answer it: `unanswered` then says why (it answered with
    an error, or with no answer), so nobody is told the turn was cancelled."""

    choice: PermissionChoice | None
    unanswered: str | None = None

    @property
    def cancelled(self) -> bool:
        return self.choice is None and self.unanswered is None


class PermissionPrompter(Protocol):
    """Asks the person; the ACP adapter does it with `session/request_permission`.

    Cancelling the caller withdraws the question. A question the client cannot
    answer (it went away) is answered cancelled.
    """

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer: ...


class RefusingPrompter:
    """No one to ask: every question is answered "reject once"."""

    async def ask(self, question: PermissionQuestion) -> PermissionAnswer:
        return PermissionAnswer(PermissionChoice.REJECT_ONCE)


# --- decisions ------------------------------------------------------------------------


@attrs.frozen
class Allow(Value):
    """Run the call; `reason` says why, for the log."""

    reason: str


@attrs.frozen
class Refuse(Value):
    """Do not run the call; `explanation` is what the model reads, `shown` what the person
    reads (None: the explanation)."""

    explanation: str
    shown: str | None = None


@attrs.frozen
class Ask(Value):
    """Ask the person, offering `options`; `note` adds what they should know."""

    options: tuple[PermissionOption, ...]
    note: str | None = None


Decision = Allow | Refuse | Ask


def confined(mode: PermissionMode, need: PermissionNeed, *, sandbox_runs: bool) -> bool:
    """Whether a call runs in the command sandbox: a command that did not ask to leave it,
    in the sandboxed mode, where the sandbox runs (`sandbox_runs`)."""
    return (
        mode is PermissionMode.SANDBOXED
        and need.effect is Effect.EXECUTE
        and need.sandboxable
        and sandbox_runs
    )


def decide(
    mode: PermissionMode,
    tool: str,
    need: PermissionNeed,
    rules: Sequence[PermissionRule],
    workspace: str,
    roots: Sequence[str] = (),
    *,
    sandboxed: bool = False,
) -> Decision:
    """What admission does with a call of `tool` that needs `need`, before anyone is asked.

    `workspace` is the cwd, whose rules these are; `roots`, the workspace's other roots.
    `sandboxed`: the call runs in the command sandbox (`confined`), so it needs no
    question of its own.
    """
    outside = bool(need.outside_workspace)
    for rule in rules:
        if rule.decision == RuleDecision.DENY and rule_matches(rule, tool, need, workspace):
            return Refuse(
                f"Not run: the person chose to always reject {rule_text(rule)} in this "
                "workspace. Do not try to get around it; ask the person if it is needed.",
                f"Not run: you chose to always reject {rule_text(rule)} in this workspace "
                "(`/permissions` lists the rules).",
            )
    if mode is PermissionMode.PLAN and need.effect is not Effect.READ_ONLY:
        return Refuse(
            "Not run: the session is in plan mode, which is read-only. Only calls that read "
            "run; describe the change or command you would make instead, and the person can "
            "leave plan mode to let you make it.",
            "Not run: this session is in plan mode, where only reads run "
            "(`/mode <mode id>` switches it).",
        )
    if outside:
        paths = ", ".join(need.outside_workspace)
        # The tool's note names each outside path and why (a symlink, an absolute path).
        note = need.note or f"Outside the workspace: {paths}"
        return Ask(options_for(tool, need, workspace, roots), note)
    if mode is PermissionMode.BYPASS:
        return Allow("bypass mode")
    if need.effect is Effect.READ_ONLY:
        return Allow("reads inside the workspace run without asking")
    if sandboxed:
        return Allow("sandboxed mode: it runs in the command sandbox")
    edits_run = (PermissionMode.ACCEPT_EDITS, PermissionMode.SANDBOXED)
    if mode in edits_run and need.effect is Effect.EDIT:
        return Allow(f"{mode.value} mode")
    for rule in rules:
        if rule.decision == RuleDecision.ALLOW and rule_matches(rule, tool, need, workspace):
            return Allow(f"rule {rule.rule_id}")
    why = f"Asked because no rule of this workspace allows it ({mode.value} mode)."
    outside_sandbox = mode is PermissionMode.SANDBOXED and need.effect is Effect.EXECUTE
    if outside_sandbox:
        why = "Asked because no rule of this workspace lets it run outside the sandbox."
    options = options_for(tool, need, workspace, roots, outside_sandbox=outside_sandbox)
    return Ask(options, _joined(need.note, why))


def _joined(*notes: str | None) -> str:
    return "\n".join(note for note in notes if note)


def options_for(
    tool: str,
    need: PermissionNeed,
    workspace: str,
    roots: Sequence[str] = (),
    *,
    outside_sandbox: bool = False,
) -> tuple[PermissionOption, ...]:
    """The answers to offer, labelled with what "always" would remember.

    Paths outside the workspace are always asked, so "allow always" is not offered;
    neither "always" is offered when the rule it keeps would not cover this very call.
    `outside_sandbox`: the question is about running a command outside the sandbox,
    which is what an "always allow" keeps (its label says so).
    """
    scope, pattern = rule_for(tool, need, workspace, roots)
    allow_once = PermissionOption(PermissionChoice.ALLOW_ONCE, "Allow once")
    reject_once = PermissionOption(PermissionChoice.REJECT_ONCE, "Reject")
    if not _covers_itself(tool, need, workspace, scope, pattern):
        return (allow_once, reject_once)
    what = (
        "this exact command"
        if scope is RuleScope.EXACT_COMMAND
        else _scope_text(tool, scope, pattern)
    )
    reject_always = PermissionOption(
        PermissionChoice.REJECT_ALWAYS, f"Always reject {what} in this workspace"
    )
    if need.outside_workspace:
        return (allow_once, reject_once, reject_always)
    where = " outside the sandbox" if outside_sandbox else ""
    allow_always = PermissionOption(
        PermissionChoice.ALLOW_ALWAYS, f"Always allow {what}{where} in this workspace"
    )
    return (allow_once, allow_always, reject_once, reject_always)


def _covers_itself(
    tool: str, need: PermissionNeed, workspace: str, scope: RuleScope, pattern: str
) -> bool:
    """Whether the rule an "always" answer keeps would match the very call it answers."""
    draft = PermissionRule("", workspace, tool, scope.value, pattern, RuleDecision.ALLOW, 0.0)
    return rule_matches(draft, tool, need, workspace)


# --- rules ----------------------------------------------------------------------------


def rule_for(
    tool: str, need: PermissionNeed, workspace: str, roots: Sequence[str] = ()
) -> tuple[RuleScope, str]:
    """The scope and pattern an "always" answer about this call remembers.

    A path in the cwd (`workspace`) gives a glob relative to it (`src/**`); one in
    another root of `roots` an absolute glob of its folder (`/home/me/lib/src/**`).
    """
    if tool.startswith(MCP_TOOL_PREFIX):
        return RuleScope.MCP_TOOL, ""
    if need.effect is Effect.EXECUTE and need.target:
        prefix = command_prefix(need.target)
        if _prefix_covers(prefix, need.target):
            return RuleScope.COMMAND_PREFIX, prefix
        return RuleScope.EXACT_COMMAND, need.target.strip()
    if need.effect in (Effect.EDIT, Effect.READ_ONLY) and need.paths:
        # Several files (a move's two): the folder that holds them all.
        folder = os.path.commonpath([str(PurePosixPath(path).parent) for path in need.paths])
        relative = _relative(folder, workspace)
        if relative is not None:
            return RuleScope.PATH_GLOB, "**" if relative == "." else f"{relative}/**"
        if any(_relative(folder, root) is not None for root in roots):
            return RuleScope.PATH_GLOB, f"{folder}/**"
    elif need.effect in (Effect.EDIT, Effect.READ_ONLY) and need.target:
        relative = _relative(need.target, workspace)
        if relative is not None:
            parent = PurePosixPath(relative).parent
            return RuleScope.PATH_GLOB, "**" if str(parent) == "." else f"{parent}/**"
        if any(_relative(need.target, root) is not None for root in roots):
            return RuleScope.PATH_GLOB, f"{PurePosixPath(need.target).parent}/**"
    return RuleScope.TOOL, ""


def command_prefix(command: str) -> str:
    """The leading words of a command that an "always" rule keeps: `git status`, `pytest -q`.

    The program and the next word, unless that word names a path, a value or
    a pattern (contains `/`, `=`, `.`, `~`, `$`, `*` or `?`); only the first
    command of a chain counts (`cd build && make` keeps `cd build`), though no
    prefix rule covers a chain: `rule_for` keeps such a command line exactly.
    """
    first = _COMPOUND.split(command, maxsplit=1)[0]
    try:
        words = shlex.split(first)
    except ValueError:
        words = first.split()
    if not words:
        return command.strip()
    kept = words[:1]
    if len(words) > 1 and not any(mark in words[1] for mark in "/=.~$*?"):
        kept.append(words[1])
    return " ".join(kept)


def rule_matches(rule: PermissionRule, tool: str, need: PermissionNeed, workspace: str) -> bool:
    """Whether `rule` covers a call of `tool` needing `need` in `workspace`."""
    if rule.revoked_at is not None or rule.workspace != workspace or rule.tool != tool:
        return False
    scope = rule.scope
    if scope in (RuleScope.TOOL, RuleScope.MCP_TOOL):
        return True
    if scope == RuleScope.COMMAND_PREFIX:
        return _prefix_covers(rule.pattern, need.target)
    if scope == RuleScope.EXACT_COMMAND:
        return bool(rule.pattern) and need.target.strip() == rule.pattern
    if scope == RuleScope.PATH_GLOB:
        paths = need.paths or (need.target,)
        return all(_path_matches(rule.pattern, path, workspace) for path in paths)
    return False


def _path_matches(pattern: str, path: str, workspace: str) -> bool:
    """Whether a path glob rule covers `path` (absolute)."""
    if pattern.startswith("/"):  # a folder of another root, named absolutely
        return _glob_matches(pattern, PurePosixPath(path).as_posix())
    relative = _relative(path, workspace)
    return relative is not None and _glob_matches(pattern, relative)


def _prefix_covers(pattern: str, command: str) -> bool:
    """Whether a command starts with the pattern's words and neither chains nor redirects."""
    command = command.strip()
    if not command or _COMPOUND.search(command):
        return False
    try:
        words, prefix = shlex.split(command), shlex.split(pattern)
    except ValueError:
        return False
    return bool(prefix) and words[: len(prefix)] == prefix


async def list_rules(
    store: Store, workspace: str | None = None, *, owner: str | None = None
) -> list[PermissionRule]:
    """The rules in force (not revoked), oldest first, for one workspace or all, and one
    person's or everyone's."""
    return await store.list_permission_rules(workspace=workspace, owner=owner)


async def revoke_rule(store: Store, rule_id: str, *, now: float) -> PermissionRule:
    """Revoke a rule; it stays in the store as a record. `StoreNotFound` if unknown."""
    return await store.revoke_permission_rule(rule_id, revoked_at=now)


async def remember(
    store: Store,
    *,
    choice: PermissionChoice,
    tool: str,
    need: PermissionNeed,
    workspace: str,
    session_id: str,
    call_id: str,
    now: float,
    roots: Sequence[str] = (),
    owner: str = "",
    new_rule_id: Callable[[], str] = lambda: new_id("rule"),
) -> PermissionRule | None:
    """Keep an "always" answer as a rule for the workspace and `owner` (the person whose
    session asked); None for a "once" answer.

    Returns the rule in force: one the store already keeps when it says the same.
    `roots` are the workspace's other roots (see `rule_for`).
    """
    if not choice.remembered:
        return None
    scope, pattern = rule_for(tool, need, workspace, roots)
    rule = PermissionRule(
        rule_id=new_rule_id(),
        workspace=workspace,
        tool=tool,
        scope=scope.value,
        pattern=pattern,
        decision=(
            RuleDecision.ALLOW.value
            if choice is PermissionChoice.ALLOW_ALWAYS
            else RuleDecision.DENY.value
        ),
        created_at=now,
        session_id=SessionId(session_id),
        call_id=CallId(call_id),
        owner=owner,
    )
    return await store.add_permission_rule(rule)


def _relative(target: str, workspace: str) -> str | None:
    try:
        relative = Path(target).relative_to(workspace)
    except ValueError:
        return None
    return relative.as_posix()


def _glob_matches(pattern: str, relative: str) -> bool:
    if pattern == "**":
        return True
    if pattern.endswith("/**"):
        folder = pattern[:-3]
        return relative == folder or relative.startswith(folder + "/")
    return fnmatch.fnmatchcase(relative, pattern)


#: What an "always" rule of a file tool covers, in plain words.
_FILE_ACTIONS: Final = {
    "edit": "edits to",
    "write": "writes to",
    "delete": "deleting",
    "move": "moving",
    "read": "reading",
}


def _scope_text(tool: str, scope: RuleScope, pattern: str) -> str:
    """What a rule covers, in plain words (no markdown: option names are shown as is)."""
    if scope is RuleScope.COMMAND_PREFIX:
        return f"commands starting with {pattern}"
    if scope is RuleScope.EXACT_COMMAND:
        return f"exactly the command {pattern}"
    if scope is RuleScope.PATH_GLOB:
        action = _FILE_ACTIONS.get(tool, f"the {tool} tool on")
        folder = pattern.removesuffix("**").rstrip("/")
        return f"{action} files under {folder}/" if folder else f"{action} any file"
    if scope is RuleScope.MCP_TOOL and tool.startswith(MCP_TOOL_PREFIX):
        server, _, name = tool.removeprefix(MCP_TOOL_PREFIX).partition("__")
        return f"the MCP tool {server}/{name}" if name else f"the MCP tool {server}"
    return f"the {tool} tool"


def rule_text(rule: PermissionRule) -> str:
    """What a remembered rule covers, in plain words: "commands starting with git status"."""
    return _scope_text(rule.tool, RuleScope(rule.scope), rule.pattern)
