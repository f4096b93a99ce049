"""Rules: what the model must follow, as `<rule op="..." source="..." scope="...">` records.

Where rules come from, and their ids (`source`) and scopes:

================================ ================================ ===============
file                             source (the rule id)             scope
================================ ================================ ===============
`<workspace>/AGENTS.md`          `workspace/AGENTS.md`            `.`
`<workspace>/src/api/AGENTS.md`  `workspace/src/api/AGENTS.md`    `src/api`
`/home/me/lib/AGENTS.md` (a      `root:/home/me/lib/AGENTS.md`    `/home/me/lib`
root besides the cwd)
`/home/me/lib/io/AGENTS.md`      `root:/home/me/lib/io/AGENTS.md` `/home/me/lib/io`
`<config_dir>/AGENTS.md`         `user/AGENTS.md`                 `*`
`<config_dir>/rules/style.md`    `user/rules/style.md`            `*`
(a command)                      `command/<name>`                 as given
================================ ================================ ===============

`<workspace>` is the session's cwd; each of its additional directories is
scanned the same way, its files named and scoped by their absolute paths (a
file under two roots counts once, in the first).

Rules are facts with an operation: `RuleSet` (took effect), `RuleReplaced`
(new text for the same rule), `RuleRevoked` (withdrawn; the record stays),
`RuleExpired` (its validity ended). At the start of each turn the context
engine scans the files and compares each one's content digest with the last
recorded operation for its id: a new file is `set`, an edited one `replace`,
a deleted (or emptied) one `revoke`. Rules from commands are recorded when
the command runs.

A scope is where a rule applies: `*` everything in the session, `.` the
whole workspace, a directory its files and below. The guide explains this.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, Literal, TypeAlias

import attrs

from acp_agent.capabilities.context._guide import GuideEntry
from acp_agent.core import Payload, RuleExpired, RuleReplaced, RuleRevoked, RuleSet
from acp_agent.toolkit import tag
from acp_agent.values import Value

__all__ = (
    "MAX_RULE_CHARS",
    "ROOT_RULE_PREFIX",
    "RULES_GUIDE_ENTRY",
    "RULE_FILE_NAME",
    "SKIPPED_DIRECTORIES",
    "RuleFile",
    "RuleLedger",
    "RuleOp",
    "RuleRecord",
    "Unreadable",
    "command_rule_id",
    "render_rule",
    "render_rule_payload",
    "scan_root_rules",
    "scan_rule_files",
    "scan_user_rules",
    "scan_workspace_rules",
)

logger = logging.getLogger(__name__)

RULE_FILE_NAME: Final = "AGENTS.md"
#: A rule file longer than this is cut, with a note saying so.
MAX_RULE_CHARS: Final = 32_000
#: Directories never searched for AGENTS.md: version control, dependencies, builds.
SKIPPED_DIRECTORIES: Final = frozenset(
    {"node_modules", "__pycache__", "venv", "target", "dist", "build", "vendor"}
)
#: How many directories a workspace scan visits at most (a huge tree is cut short).
MAX_SCANNED_DIRECTORIES: Final = 20_000

#: How the rule ids of files in the workspace's additional directories begin.
ROOT_RULE_PREFIX: Final = "root:"
#: Rule ids managed by the file scan; a managed id whose file is gone is revoked.
_FILE_PREFIXES: Final = ("workspace/", "user/", ROOT_RULE_PREFIX)

RuleOp: TypeAlias = Literal["set", "replace", "revoke", "expired"]

RULES_GUIDE_ENTRY: Final = GuideEntry(
    "context/rules",
    "context",
    order=110,
    text="""\
## Rules: `<rule>`

`<rule op="OP" source="SOURCE" scope="SCOPE">text</rule>` records a change to a rule \
you follow. `source` names the rule: `workspace/.../AGENTS.md` is a file in the \
workspace's cwd, `root:/.../AGENTS.md` a file in another root of the workspace (named by \
its absolute path), `user/...` the person's own rules, `command/...` a rule set by a \
command. `scope` says where it applies:

- `*`: all your work in this session;
- `.`: all work in the cwd (`environment/cwd`);
- a directory such as `src/api` (relative to the cwd) or `/home/me/lib` (absolute): \
work on files in that directory and below it, and commands run for them.

Where rules conflict, the one with the narrower scope wins inside it, and the person's \
messages win over all rules. `OP` says what happened to the rule from that source:

- `set`: the rule takes effect;
- `replace`: this text replaces the rule's earlier text; only the newest version holds;
- `revoke`: the rule no longer holds (the text, if any, says why);
- `expired`: the rule's validity ended.

Only the latest record for a source counts. A revoked or expired rule must not be \
followed any more, even though its earlier text is still in the conversation; this \
affects only that source, in that scope.""",
)


@attrs.frozen
class RuleFile(Value):
    """A rule as found on disk: its id, scope, text and the digest of the text."""

    rule_id: str
    scope: str
    text: str

    @property
    def digest(self) -> str:
        return _digest(self.text)


@attrs.frozen
class RuleRecord(Value):
    """The last recorded operation on a rule, and its text while it holds."""

    rule_id: str
    op: RuleOp
    scope: str
    #: The rule's text (set, replace) or why it ended (revoke); empty for expired.
    text: str
    seq: int

    @property
    def holds(self) -> bool:
        return self.op in ("set", "replace")

    @property
    def digest(self) -> str:
        return _digest(self.text)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: Where a scan puts the rule files it found but could not read: (path, why).
Unreadable: TypeAlias = list[tuple[Path, str]]


def _read_rule_text(path: Path, unreadable: Unreadable | None = None) -> str | None:
    """The file's text, truncated to `MAX_RULE_CHARS`; None when unreadable (kept in
    `unreadable`) or blank."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        logger.debug("cannot read rule file %s: %s", path, exc)
        if unreadable is not None and not isinstance(exc, FileNotFoundError):
            unreadable.append((path, exc.strerror or str(exc)))
        return None
    text = text.strip()
    if not text:
        return None
    if len(text) > MAX_RULE_CHARS:
        text = text[:MAX_RULE_CHARS] + f"\n\n[cut: the file is longer than {MAX_RULE_CHARS} chars]"
    return text


def scan_workspace_rules(
    root: Path,
    *,
    max_directories: int = MAX_SCANNED_DIRECTORIES,
    unreadable: Unreadable | None = None,
) -> list[RuleFile]:
    """Every `AGENTS.md` in the workspace's cwd, root first, each scoped to its directory.

    Hidden directories and `SKIPPED_DIRECTORIES` are not searched; symlinked
    directories are not followed.
    """
    found: list[RuleFile] = []
    for relative, text in _rule_files_under(root, (), max_directories, unreadable):
        scope = "." if relative == "." else relative
        rule_id = "workspace/" + (
            RULE_FILE_NAME if relative == "." else f"{relative}/{RULE_FILE_NAME}"
        )
        found.append(RuleFile(rule_id, scope, text))
    return sorted(found, key=lambda rule: (rule.scope != ".", rule.scope.count("/"), rule.scope))


def scan_root_rules(
    root: Path,
    *,
    skip: Sequence[Path] = (),
    max_directories: int = MAX_SCANNED_DIRECTORIES,
    unreadable: Unreadable | None = None,
) -> list[RuleFile]:
    """Every `AGENTS.md` under `root`, one of the workspace's additional directories, each
    labelled with its root: source `root:<root>/AGENTS.md` (`root:<root>/src/AGENTS.md`),
    scope the absolute directory it is in.

    Directories in `skip` (the roots scanned before this one) are left out, so a
    file is read once, as part of the first root that holds it.
    """
    found: list[RuleFile] = []
    for relative, text in _rule_files_under(root, skip, max_directories, unreadable):
        directory = root if relative == "." else root / relative
        rule_id = f"{ROOT_RULE_PREFIX}{directory / RULE_FILE_NAME}"
        found.append(RuleFile(rule_id, str(directory), text))
    return sorted(found, key=lambda rule: (rule.scope.count("/"), rule.scope))


def _rule_files_under(
    root: Path, skip: Sequence[Path], max_directories: int, unreadable: Unreadable | None
) -> list[tuple[str, str]]:
    """(directory relative to `root`, text) of each rule file under `root`, outside `skip`."""
    if any(root == other or root.is_relative_to(other) for other in skip):
        return []
    found: list[tuple[str, str]] = []
    visited = 0
    for directory, subdirectories, files in os.walk(root):
        visited += 1
        if visited > max_directories:
            logger.warning("rule scan of %s stopped after %d directories", root, max_directories)
            break
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if not name.startswith(".")
            and name not in SKIPPED_DIRECTORIES
            and Path(directory, name) not in skip
        )
        if RULE_FILE_NAME not in files:
            continue
        text = _read_rule_text(Path(directory) / RULE_FILE_NAME, unreadable)
        if text is None:
            continue
        found.append((Path(directory).relative_to(root).as_posix(), text))
    return found


def scan_user_rules(config_dir: Path, *, unreadable: Unreadable | None = None) -> list[RuleFile]:
    """The person's rules: `<config_dir>/AGENTS.md`, then `<config_dir>/rules/*.md` by name."""
    found: list[RuleFile] = []
    text = _read_rule_text(config_dir / RULE_FILE_NAME, unreadable)
    if text is not None:
        found.append(RuleFile(f"user/{RULE_FILE_NAME}", "*", text))
    rules_dir = config_dir / "rules"
    try:
        paths = sorted(rules_dir.glob("*.md"))
    except OSError:
        paths = []
    for path in paths:
        text = _read_rule_text(path, unreadable)
        if text is not None:
            found.append(RuleFile(f"user/rules/{path.name}", "*", text))
    return found


def scan_rule_files(
    workspace: Path,
    config_dir: Path | None,
    additional_roots: Sequence[Path] = (),
    *,
    unreadable: Unreadable | None = None,
) -> list[RuleFile]:
    """User rules first, then the workspace's cwd's, then each additional root's, in a
    stable order (a file under two roots is read as part of the first); the rule files
    that could not be read go to `unreadable`."""
    user = scan_user_rules(config_dir, unreadable=unreadable) if config_dir is not None else []
    found = user + scan_workspace_rules(workspace, unreadable=unreadable)
    scanned = [workspace.resolve()] if additional_roots else []
    for root in additional_roots:
        found += scan_root_rules(root, skip=scanned, unreadable=unreadable)
        scanned.append(root)
    return found


class RuleLedger:
    """The last operation recorded for each rule, folded from recorded rule facts."""

    def __init__(self) -> None:
        #: Rule id -> last record; insertion order is the order of the last operation.
        self._records: dict[str, RuleRecord] = {}

    def apply(self, payload: Payload, seq: int) -> None:
        """Fold one recorded fact (others are ignored)."""
        record: RuleRecord
        if isinstance(payload, RuleSet):
            record = RuleRecord(payload.rule_id, "set", payload.scope, payload.text, seq)
        elif isinstance(payload, RuleReplaced):
            record = RuleRecord(payload.rule_id, "replace", payload.scope, payload.text, seq)
        elif isinstance(payload, RuleRevoked):
            record = RuleRecord(payload.rule_id, "revoke", payload.scope, payload.reason, seq)
        elif isinstance(payload, RuleExpired):
            record = RuleRecord(payload.rule_id, "expired", payload.scope, "", seq)
        else:
            return
        self._records.pop(record.rule_id, None)
        self._records[record.rule_id] = record

    def copy(self) -> RuleLedger:
        ledger = RuleLedger()
        ledger._records = dict(self._records)
        return ledger

    @property
    def records(self) -> Mapping[str, RuleRecord]:
        return dict(self._records)

    def holding(self) -> list[RuleRecord]:
        """The rules that hold now, in the order of their latest operation."""
        return [record for record in self._records.values() if record.holds]

    def changes(self, found: Iterable[RuleFile]) -> list[Payload]:
        """The facts that bring the recorded file rules to what is on disk now.

        New file: `RuleSet`; changed text (or scope): `RuleReplaced`; a file rule
        that holds but is no longer found: `RuleRevoked`. Command rules are left alone.
        """
        facts: list[Payload] = []
        seen: set[str] = set()
        for rule in found:
            seen.add(rule.rule_id)
            known = self._records.get(rule.rule_id)
            if known is None or not known.holds:
                facts.append(RuleSet(rule.rule_id, rule.scope, rule.text))
            elif known.digest != rule.digest or known.scope != rule.scope:
                facts.append(RuleReplaced(rule.rule_id, rule.scope, rule.text))
        for record in self._records.values():
            managed = record.rule_id.startswith(_FILE_PREFIXES)
            if managed and record.holds and record.rule_id not in seen:
                reason = (
                    "its file was deleted, or its directory is no longer a root of the workspace"
                    if record.rule_id.startswith(ROOT_RULE_PREFIX)
                    else "its file was deleted"
                )
                facts.append(RuleRevoked(record.rule_id, record.scope, reason))
        return facts

    def restatement(self) -> Sequence[str]:
        """The rules that hold, each as last given (`set` or `replace`)."""
        return [render_rule(record) for record in self.holding()]


def render_rule(record: RuleRecord) -> str:
    """`<rule op="set" source="workspace/AGENTS.md" scope=".">text</rule>`."""
    attributes = [("op", record.op), ("source", record.rule_id), ("scope", record.scope)]
    return tag("rule", attributes, record.text or None)


def render_rule_payload(payload: Payload, seq: int = 0) -> str | None:
    """The block for a rule fact, or None if `payload` is not one."""
    ledger = RuleLedger()
    ledger.apply(payload, seq)
    records = list(ledger.records.values())
    return render_rule(records[0]) if records else None


def command_rule_id(name: str) -> str:
    """The id of a rule a command sets: `command/<name>`."""
    return f"command/{name}"
