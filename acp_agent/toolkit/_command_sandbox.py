"""What a tool gets when the call's commands must run confined: the session's sandbox.

The permission mode decides, per call, whether a command runs in the sandbox
(`capabilities.sandboxing`); the tool executor then hands the call a
`CommandSandbox` in its context, and a tool that runs commands starts them
through it: locally (`wrap`, `environment`), or in an editor's terminal
(`in_terminal`: a `TerminalLaunch`, the command line the editor runs, which
says when the editor's side could not start the sandbox). Nothing here knows
bubblewrap: `acp_agent.sandbox.Sandbox` is one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

__all__ = ("CommandSandbox", "TerminalLaunch")


class TerminalLaunch(Protocol):
    """A command confined, as an editor's terminal runs it (`terminal/create`)."""

    @property
    def command(self) -> str: ...

    @property
    def args(self) -> Sequence[str]: ...

    def refused(self, output: str, exit_code: int | None) -> str | None:
        """Why the editor's side could not start the sandbox, when the terminal's end
        shows it (the command did not run, and may run locally in the sandbox instead);
        None when the command ran."""
        ...

    def refuse(self, why: str) -> None:
        """The editor would not start the terminal at all (`TerminalRefused`), for `why`:
        the session's next confined commands run locally."""
        ...


class CommandSandbox(Protocol):
    """Confines the commands of one call to the session's roots and policy."""

    def wrap(self, command: Sequence[str], *, cwd: Path, new_session: bool = False) -> list[str]:
        """The command line that runs `command` in `cwd`, confined."""
        ...

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` as a confined command gets it (the agent's keys taken out)."""
        ...

    def in_terminal(self, shell: str, command: str, *, cwd: Path) -> TerminalLaunch | None:
        """`shell -c command` in `cwd`, confined, as an editor's terminal runs it; None when
        commands run locally only (the session learned that the editor's side cannot
        start the sandbox)."""
        ...

    def kept_in(self, command: str, output: str, *, exit_code: int | None, cwd: Path) -> str | None:
        """What the sandbox kept `command` from doing, read from how it ended, in a phrase
        ("/etc/x is read-only in the sandbox"); None when nothing shows it."""
        ...
