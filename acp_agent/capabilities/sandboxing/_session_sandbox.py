"""One session's command sandbox: whether it runs, its policy, what it kept in.

The sandboxed mode runs a command confined when the sandbox runs here
(`support`, probed once per session in a worker thread: bwrap runs once per
process). A confined call gets a `CallSandbox`: the policy (with the session's
private temporary folder, made on first use and removed when the session
closes) on the session's roots, which also remembers what the sandbox kept
each command in, so the question of running it outside says why the sandbox
was not enough (`why_leave`). Where the sandbox cannot run, the first question
about a command says why and how to enable it, the later ones only that it
cannot (`unavailable_note`); the person is also told once in the session, as a
notice (a warning: commands run with all their rights).

Where the editor offers terminals, a confined command runs in one, the sandbox
wrapped around it (`CallSandbox.in_terminal`); once a terminal shows that the
editor's side cannot start the sandbox (`terminals_refused`), that command and
every later one of the session run locally in the sandbox instead.
"""

from __future__ import annotations

import collections
import logging
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

import anyio
import attrs

from acp_agent.sandbox import (
    Sandbox,
    SandboxPolicy,
    SandboxSupport,
    SandboxUnavailable,
    TerminalWrap,
)
from acp_agent.toolkit import NO_NOTICES, Notice, NoticeSeverity, NoticeSink
from acp_agent.values import Value

__all__ = ("DOCTOR_HINT", "CallSandbox", "SessionSandbox", "SessionTerminalLaunch")

logger = logging.getLogger(__name__)

#: Where the person learns how to enable the sandbox.
DOCTOR_HINT: Final = "`acp-agent doctor` says how to enable it"
#: How many commands' denials are remembered (the latest ones).
_REMEMBERED: Final = 64


class SessionSandbox:
    """A session's command sandbox (a session service; `aclose` at the session's end).

    **Parameters:**

    * `policy`: the person's policy (no temporary folder: the session gets its own).
    * `probe`: whether bwrap runs here (blocking; `probe_sandbox`).
    * `notices`: where the person is told, once, that the sandbox cannot run.
    """

    def __init__(
        self,
        policy: SandboxPolicy,
        probe: Callable[[], SandboxSupport],
        *,
        notices: NoticeSink = NO_NOTICES,
    ) -> None:
        self._policy = policy
        self._probe = probe
        self._notices = notices
        self._support: SandboxSupport | None = None
        self._probing = anyio.Lock()
        self._temp: Path | None = None
        self._kept_in: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._told_unavailable = False
        self._terminals_refused: str | None = None
        self._terminals_started = False

    async def support(self) -> SandboxSupport:
        """Whether commands can run sandboxed here, or why not (probed once)."""
        async with self._probing:
            if self._support is None:
                self._support = await anyio.to_thread.run_sync(self._probe)
                if not self._support.available:
                    logger.warning("commands cannot run sandboxed: %s", self._support.reason)
            return self._support

    def for_call(self, roots: Sequence[Path]) -> CallSandbox:
        """The sandbox a confined call's commands run in (after `support` said it runs)."""
        return CallSandbox(self.sandbox(roots), self)

    def sandbox(self, roots: Sequence[Path], *, network: bool = False) -> Sandbox:
        """The policy on `roots` (network as asked); `SandboxUnavailable` when it cannot
        run here (after `support`: call that first)."""
        support = self._support
        if support is None or not support.available or support.bwrap is None:
            raise SandboxUnavailable(support or SandboxSupport(None, "not probed yet"))
        policy = attrs.evolve(self._policy, temp_dir=self._temp_dir(), network=network)
        return Sandbox(policy, tuple(roots), bwrap=support.bwrap)

    def remember(self, command: str, kept_in: str) -> None:
        """The sandbox kept `command` in, as `kept_in` says (the last few are kept)."""
        key = command.strip()
        self._kept_in.pop(key, None)
        self._kept_in[key] = kept_in
        while len(self._kept_in) > _REMEMBERED:
            self._kept_in.popitem(last=False)

    def why_leave(self, command: str) -> str:
        """What the question of running `command` outside the sandbox says first."""
        kept_in = self._kept_in.get(command.strip())
        if kept_in is not None:
            return (
                "Run outside the sandbox, with all your rights. When it ran in the sandbox, "
                f"the sandbox kept it in: {kept_in}."
            )
        return (
            "Run outside the sandbox, with all your rights. No run of this command in the "
            "sandbox was kept in during this session: the model asks to leave it anyway."
        )

    def unavailable_note(self, support: SandboxSupport) -> str:
        """Why a command is asked about in the sandboxed mode where the sandbox cannot run:
        in full the first time in the session, in short after."""
        if self._told_unavailable:
            return "Asked because commands cannot run in the sandbox here."
        self._told_unavailable = True
        fix = f" ({support.fix})" if support.fix else ""
        self._notices(
            Notice(
                NoticeSeverity.WARNING,
                "Commands cannot run in the sandbox here",
                f"{support.reason}. So every command is asked about, and runs with all your "
                f"rights. acp-agent doctor says how to enable it{fix}.",
            )
        )
        return (
            f"Commands cannot run in the sandbox here: {support.reason}. So every command "
            f"is asked about, and runs with all your rights. {DOCTOR_HINT}{fix}."
        )

    @property
    def told_unavailable(self) -> bool:
        """Whether the person was told this session that the sandbox cannot run."""
        return self._told_unavailable

    @property
    def terminals_refused(self) -> str | None:
        """Why the editor's terminals cannot start the sandbox, once one showed it (None:
        none did); from then on the session's confined commands run locally."""
        return self._terminals_refused

    @property
    def terminals_started(self) -> bool:
        """Whether an editor terminal of this session started the sandbox (its later
        commands skip the trial start)."""
        return self._terminals_started

    def terminal_started(self) -> None:
        """An editor terminal started the sandbox and ran its command."""
        self._terminals_started = True

    def refuse_terminals(self, why: str) -> None:
        """An editor terminal could not start the sandbox, saying `why`."""
        if self._terminals_refused is None:
            logger.warning("the editor's terminals cannot start the sandbox: %s", why)
            self._terminals_refused = why

    def _temp_dir(self) -> Path:
        if self._temp is None:
            self._temp = Path(tempfile.mkdtemp(prefix="acp-agent-sandbox-tmp-"))
        return self._temp

    async def aclose(self) -> None:
        """Remove the session's temporary folder (its commands and jobs are over)."""
        temp, self._temp = self._temp, None
        if temp is not None:
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(temp, ignore_errors=True))


@attrs.frozen
class CallSandbox(Value):
    """A confined call's `CommandSandbox`: the session's sandbox on its roots, reporting
    what it kept each command in back to the session."""

    sandbox: Sandbox
    session: SessionSandbox = attrs.field(eq=False, repr=False)

    def wrap(self, command: Sequence[str], *, cwd: Path, new_session: bool = False) -> list[str]:
        return self.sandbox.wrap(command, cwd=cwd, new_session=new_session)

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        return self.sandbox.environment(env)

    def in_terminal(self, shell: str, command: str, *, cwd: Path) -> SessionTerminalLaunch | None:
        if self.session.terminals_refused is not None:
            return None
        tried = self.session.terminals_started
        launch = self.sandbox.in_terminal(shell, command, cwd=cwd, tried=tried)
        return SessionTerminalLaunch(launch, self.session)

    def kept_in(self, command: str, output: str, *, exit_code: int | None, cwd: Path) -> str | None:
        found = self.sandbox.kept_in(command, output, exit_code=exit_code, cwd=cwd)
        if found is not None:
            self.session.remember(command, found)
        return found


@attrs.frozen
class SessionTerminalLaunch(Value):
    """A confined command as an editor's terminal runs it, telling the session when the
    editor's side could not start the sandbox (its later commands then run locally)."""

    launch: TerminalWrap
    session: SessionSandbox = attrs.field(eq=False, repr=False)

    @property
    def command(self) -> str:
        return self.launch.command

    @property
    def args(self) -> tuple[str, ...]:
        return self.launch.args

    def refuse(self, why: str) -> None:
        self.session.refuse_terminals(why)

    def refused(self, output: str, exit_code: int | None) -> str | None:
        why = self.launch.refused(output, exit_code)
        if why is not None:
            self.session.refuse_terminals(why)
        elif exit_code is not None:  # it ended on its own: the trial start, if any, passed
            self.session.terminal_started()
        return why
