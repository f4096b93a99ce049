"""State: dynamic values the model reads as `<state source="...">value</state>` messages.

A `StateSource` reads one or more named values (`environment/date`,
`git/branch`, ...). At the start of each turn the context engine reads every
source and records only what changed since the last recorded value of that
name: a `StateSet` for a new or different value, a `StateCleared` when a
source no longer has one. The guide never changes for this; the change is a
new message after the old one, and the later value from a source is current.

Sources take what they read from the outside as parameters (a clock, the
process environment as a mapping, a cwd), so tests inject them instead of
changing the process.
"""

from __future__ import annotations

import datetime
import logging
import os
import platform
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, Protocol

import anyio
import attrs

from acp_agent.capabilities.context._guide import GuideEntry
from acp_agent.core import Payload, StateCleared, StateSet
from acp_agent.toolkit import tag
from acp_agent.values import Value

__all__ = (
    "STATE_GUIDE_ENTRY",
    "AdditionalDirectoriesSource",
    "BranchIdentitySource",
    "DateSource",
    "Environment",
    "GitSource",
    "PlatformSource",
    "StateLedger",
    "StateSource",
    "ValueSource",
    "WorkingDirectorySource",
    "default_state_sources",
    "read_all",
    "render_state",
    "render_state_cleared",
)

logger = logging.getLogger(__name__)

#: How long a git query may take before the turn goes on without it.
GIT_TIMEOUT_S: Final = 5.0

STATE_GUIDE_ENTRY: Final = GuideEntry(
    "context/state",
    "context",
    order=100,
    text="""\
## State: `<state>`

`<state source="S">value</state>` gives the current value of a dynamic fact from \
source S. A later `<state>` from the same source replaces the earlier value: earlier \
ones still explain what happened before them, but only the latest one is current. \
`<state source="S" cleared="true"/>` withdraws the value: S has none until a new \
`<state>` from it arrives. Sources include:

- `environment/date`: today's date in the person's time zone (YYYY-MM-DD).
- `environment/cwd`: the workspace root; relative paths are relative to it.
- `environment/additional_directories`: the workspace's other roots, one absolute path \
a line (none: the cwd is its only root). Files under them are as much the workspace as \
the cwd's; name them by absolute path.
- `environment/os`, `environment/shell`: the operating system and the person's shell.
- `git/branch`, `git/status`: the checked-out git branch, and whether the working tree \
has uncommitted changes.
- `session/commands`, `session/skills`: commands and skills available in this session.
- `branch/identity`: which line of work this conversation is: `main`, or a branch \
started from another one. History inherited from a parent is the parent's past.

State is refreshed when a turn starts, so a value can be stale by the time you act on \
it: check it when it matters.""",
)


class StateSource(Protocol):
    """Reads current values by source name; None means the source has no value now."""

    async def read(self) -> Mapping[str, str | None]:
        """The values now. A name left out is not read this time (its value stays)."""
        ...


@attrs.frozen
class Environment(Value):
    """What the process runs in: operating system, the person's shell, its variables."""

    os_name: str
    shell: str | None
    variables: Mapping[str, str] = attrs.field(factory=dict)

    @classmethod
    def detect(cls, variables: Mapping[str, str] | None = None) -> Environment:
        """This process's environment (read, never changed)."""
        env = dict(os.environ if variables is None else variables)
        system = platform.system() or "unknown"
        release = platform.release()
        os_name = f"{system} {release} ({platform.machine()})" if release else system
        shell = env.get("SHELL") or env.get("COMSPEC")
        return cls(os_name, shell, env)


def _local_now() -> datetime.datetime:
    return datetime.datetime.now().astimezone()


@attrs.frozen
class DateSource(Value):
    """`environment/date`: today's date by `clock` (an aware datetime in the person's zone)."""

    clock: Callable[[], datetime.datetime] = _local_now

    async def read(self) -> Mapping[str, str | None]:
        return {"environment/date": self.clock().date().isoformat()}


@attrs.frozen
class WorkingDirectorySource(Value):
    """`environment/cwd`: the session's workspace root."""

    cwd: str

    async def read(self) -> Mapping[str, str | None]:
        return {"environment/cwd": self.cwd}


@attrs.frozen
class AdditionalDirectoriesSource(Value):
    """`environment/additional_directories`: the workspace's roots besides the cwd, one a
    line, read from `directories` each time (a load or resume may change them); None
    when there are none."""

    directories: Callable[[], Sequence[str | os.PathLike[str]]]

    async def read(self) -> Mapping[str, str | None]:
        lines = [str(directory) for directory in self.directories()]
        return {"environment/additional_directories": "\n".join(lines) or None}


@attrs.frozen
class PlatformSource(Value):
    """`environment/os` and `environment/shell`, from an `Environment`."""

    environment: Environment

    async def read(self) -> Mapping[str, str | None]:
        return {
            "environment/os": self.environment.os_name,
            "environment/shell": self.environment.shell,
        }


@attrs.frozen
class ValueSource(Value):
    """One named value from a callable: available commands, skills, anything a component knows.

    `value()` returns None when the value does not apply (it is then cleared).
    """

    name: str
    value: Callable[[], str | None]

    async def read(self) -> Mapping[str, str | None]:
        return {self.name: self.value()}


@attrs.frozen
class BranchIdentitySource(Value):
    """`branch/identity`: which line of work the conversation is.

    `main` for a session's main branch; otherwise the branch's label (or id),
    where it started, and its task when it has one, e.g. `read-tests: branch
    br_1 of br_0 from #97 (the history before belongs to br_0). Task: ...`.
    """

    label: str | None
    branch_id: str
    parent: str | None = None
    cut_seq: int = 0
    task: str | None = None

    async def read(self) -> Mapping[str, str | None]:
        name = self.label or self.branch_id
        if self.parent is None:
            return {"branch/identity": name}
        value = f"{name}: branch of {self.parent} from #{self.cut_seq}"
        if self.task is not None:
            value = (
                f"{name}: branch {self.branch_id} of {self.parent}, from #{self.cut_seq} "
                f"(the history before that belongs to {self.parent}). Task: {self.task}"
            )
        return {"branch/identity": value}


@attrs.frozen
class GitSource(Value):
    """`git/branch` and `git/status` of the repository at `cwd`, from one `git status`.

    Outside a repository (or without git) both are None, so earlier values are
    cleared. A query that hangs longer than `timeout_s` reads nothing this time.
    """

    cwd: str
    environment: Environment
    timeout_s: float = GIT_TIMEOUT_S

    async def read(self) -> Mapping[str, str | None]:
        command = ["git", "-C", self.cwd, "status", "--porcelain=v2", "--branch"]
        # Optional locks off: a status must not take the index lock under the person.
        env = {**self.environment.variables, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
        with anyio.move_on_after(self.timeout_s):
            try:
                result = await anyio.run_process(command, env=env, check=False)
            except OSError as exc:
                logger.debug("git is not usable here: %s", exc)
                return {"git/branch": None, "git/status": None}
            if result.returncode != 0:
                return {"git/branch": None, "git/status": None}
            return _parse_git_status(result.stdout.decode("utf-8", "replace"))
        logger.warning(
            "git status in %s took over %ss; state not refreshed", self.cwd, self.timeout_s
        )
        return {}


def _parse_git_status(output: str) -> Mapping[str, str | None]:
    head = oid = None
    changed = 0
    for line in output.splitlines():
        if line.startswith("# branch.head "):
            head = line.removeprefix("# branch.head ")
        elif line.startswith("# branch.oid "):
            oid = line.removeprefix("# branch.oid ")
        elif line and not line.startswith("#"):
            changed += 1
    if head == "(detached)":
        head = f"detached at {oid[:12]}" if oid and oid != "(initial)" else "detached"
    status = "clean" if changed == 0 else "uncommitted changes"
    return {"git/branch": head, "git/status": status}


def default_state_sources(
    cwd: str,
    *,
    environment: Environment,
    clock: Callable[[], datetime.datetime] | None = None,
    identity: BranchIdentitySource | None = None,
    additional_directories: Callable[[], Sequence[str | os.PathLike[str]]] | None = None,
) -> list[StateSource]:
    """The built-in sources for a workspace: date, cwd (and the other roots, when
    `additional_directories` gives them), OS and shell, git, branch identity.

    `clock` defaults to the local wall clock.
    """
    sources: list[StateSource] = [
        DateSource(clock if clock is not None else _local_now),
        WorkingDirectorySource(cwd),
    ]
    if additional_directories is not None:
        sources.append(AdditionalDirectoriesSource(additional_directories))
    sources += [
        PlatformSource(environment),
        GitSource(cwd, environment),
    ]
    if identity is not None:
        sources.append(identity)
    return sources


async def read_all(sources: Iterable[StateSource]) -> dict[str, str | None]:
    """Every source's values, in source order; a failing source is logged and skipped."""
    values: dict[str, str | None] = {}
    for source in sources:
        try:
            values.update(await source.read())
        except Exception:
            logger.exception("state source %r failed; its values stay as they were", source)
    return values


class StateLedger:
    """The current value of every source, folded from recorded state facts."""

    def __init__(self) -> None:
        #: Source -> (value, seq it was set at); insertion order is the order of last set.
        self._current: dict[str, tuple[str, int]] = {}

    def apply(self, payload: Payload, seq: int) -> None:
        """Fold one recorded fact (others are ignored)."""
        if isinstance(payload, StateSet):
            self._current.pop(payload.source, None)
            self._current[payload.source] = (payload.value, seq)
        elif isinstance(payload, StateCleared):
            self._current.pop(payload.source, None)

    def copy(self) -> StateLedger:
        ledger = StateLedger()
        ledger._current = dict(self._current)
        return ledger

    @property
    def current(self) -> Mapping[str, str]:
        """Source -> current value, in the order the values were last set."""
        return {source: value for source, (value, _) in self._current.items()}

    def changes(self, values: Mapping[str, str | None]) -> list[Payload]:
        """The facts that bring the ledger to `values`: only what differs."""
        facts: list[Payload] = []
        for source, value in values.items():
            known = self._current.get(source)
            if value is None:
                if known is not None:
                    facts.append(StateCleared(source))
            elif known is None or known[0] != value:
                facts.append(StateSet(source, value))
        return facts

    def restatement(self) -> Sequence[str]:
        """The current values as blocks, for a restatement after compaction."""
        return [render_state(source, value) for source, value in self.current.items()]


def render_state(source: str, value: str) -> str:
    """`<state source="environment/date">2026-11-30</state>`."""
    return tag("state", [("source", source)], value)


def render_state_cleared(source: str) -> str:
    """`<state source="git/branch" cleared="true"/>`."""
    return tag("state", [("source", source), ("cleared", "true")])
