"""The bubblewrap command line that confines one command to a policy and a session's roots.

    bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp
          --bind ROOT ROOT ...            the roots, tool caches, the private temp folder
          --ro-bind ROOT/.git/hooks ...   protected inside a root
          --perms 0111 --tmpfs SECRET_DIR  --ro-bind /dev/null SECRET_FILE ...
          --unshare-pid --unshare-ipc [--unshare-net] --die-with-parent --cap-drop ALL
          --remount-ro SECRET_DIR ... --setenv TMPDIR ... --chdir CWD -- COMMAND...

The whole file system is read-only, `/dev` and `/proc` are the sandbox's own,
`/tmp` is an empty one per command, except that the places programs are run from
there (folders on `PATH`, the agent's own Python) stay visible, read-only: a
clone or a venv under `/tmp` keeps its tools. Mounts go shallowest first, so the deeper
of two nested places wins (at one path: hidden over protected over writable).
A hidden folder is an empty read-only tmpfs that may be traversed but not
listed (a root inside it stays reachable); a hidden file is `/dev/null`
mounted without devices, so opening it fails with EACCES. Places that do not
exist when the command starts are left out (bwrap needs its mount sources).

`--cap-drop ALL` matters when the agent runs as root: bwrap keeps root's
capabilities otherwise, and a command could remount `/` read-write. The
command stays in the process group it was started in (no `--new-session`), so
killing the group reaches it; and `--die-with-parent` ends the sandbox, with a
command that left the group, when bwrap itself dies. A command started with
no controlling terminal (as `tools._process` starts them) has nothing to gain
from a new session; one run in a terminal (`new_session`) has.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

import attrs

from acp_agent.sandbox._denials import describe_found, find_denials
from acp_agent.sandbox._policy import SandboxPolicy
from acp_agent.sandbox._terminal import TerminalWrap, terminal_wrap
from acp_agent.values import Value

__all__ = ("Sandbox", "bwrap_argv", "places_in_tmp", "program_places_in_tmp")

#: A hidden folder: traversable (to reach a root inside it), not listable, not writable.
_HIDDEN_DIR_PERMS: Final = "0111"


class _Kind(enum.IntEnum):
    """What a place is in the sandbox; at one path the higher value wins."""

    #: Under `/tmp`, where programs are run from: shown read-only over the empty `/tmp`.
    VISIBLE = 0
    WRITABLE = 1
    PROTECTED = 2
    HIDDEN = 3


@attrs.frozen
class _Mount:
    path: Path
    kind: _Kind
    is_dir: bool

    def options(self) -> Iterator[str]:
        place = str(self.path)
        if self.kind is _Kind.WRITABLE:
            yield from ("--bind", place, place)
        elif self.kind in (_Kind.PROTECTED, _Kind.VISIBLE):
            yield from ("--ro-bind", place, place)
        elif self.is_dir:
            yield from ("--perms", _HIDDEN_DIR_PERMS, "--tmpfs", place)
        else:
            yield from ("--ro-bind", "/dev/null", place)


@attrs.frozen
class Sandbox(Value):
    """A policy applied to a session's roots: what a local command is wrapped in.

    `bwrap` is the program to run (a path from `probe_sandbox`, or the name). It is
    what the tools take as a `CommandSandbox` (`acp_agent.toolkit`): the command
    line (`wrap`), the environment (`environment`), the command line an editor's
    terminal runs (`in_terminal`) and what was kept in (`kept_in`).
    """

    policy: SandboxPolicy
    roots: tuple[Path, ...]
    bwrap: str = "bwrap"

    def wrap(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        new_session: bool = False,
        show: Sequence[Path] = (),
    ) -> list[str]:
        """`command` confined (see `bwrap_argv`); `show`: more places under `/tmp` it
        reads (a server's own program, `places_in_tmp`)."""
        return bwrap_argv(
            command,
            roots=self.roots,
            cwd=cwd,
            policy=self.policy,
            bwrap=self.bwrap,
            new_session=new_session,
            visible=[*program_places_in_tmp(), *show],
        )

    def in_terminal(
        self, shell: str, command: str, *, cwd: Path, tried: bool = False
    ) -> TerminalWrap:
        """`shell -c command` in `cwd`, confined, as an editor's terminal runs it: with the
        editor's `bwrap` (its PATH's, not `self.bwrap`) and environment, the hidden
        variables taken out there (see `_terminal`). Tried first unless `tried`: a bare
        `Sandbox` remembers nothing (the session's sandbox does)."""
        argv = bwrap_argv(
            [],
            roots=self.roots,
            cwd=cwd,
            policy=self.policy,
            new_session=True,
            visible=program_places_in_tmp(),
        )
        return terminal_wrap(
            argv, shell=shell, command=command, hidden_env=self.policy.hidden_env, tried=tried
        )

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` without the variables the policy hides (taken out before bwrap starts, so
        no process of the sandbox, bwrap's own included, holds them)."""
        hidden = set(self.policy.hidden_env)
        return {name: value for name, value in env.items() if name not in hidden}

    def kept_in(self, command: str, output: str, *, exit_code: int | None, cwd: Path) -> str | None:
        """What the sandbox kept `command` from doing, in a phrase (None: nothing seen)."""
        shown_in_tmp = [*self.roots, *program_places_in_tmp()]
        if self.policy.temp_dir is not None:
            shown_in_tmp.append(self.policy.temp_dir)
        shown = [place.resolve() for place in shown_in_tmp]
        found = find_denials(
            output, exit_code=exit_code, policy=self.policy, cwd=cwd, shown_in_tmp=shown
        )
        return describe_found(found)


def bwrap_argv(
    command: Sequence[str],
    *,
    roots: Sequence[Path],
    cwd: Path,
    policy: SandboxPolicy,
    bwrap: str = "bwrap",
    new_session: bool = False,
    visible: Sequence[Path] = (),
) -> list[str]:
    """The bwrap command line running `command` in `cwd`, confined to `policy` and `roots`.

    `new_session`: the command gets a session of its own (for one run in a terminal,
    where it could otherwise push input into that terminal); it then leaves its
    process group, and only bwrap's death (`--die-with-parent`) ends it. `visible`:
    places under `/tmp` shown read-only over its empty `/tmp` (`program_places_in_tmp`).
    """
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    mounts = _mounts(roots, policy, visible)
    for mount in mounts:
        argv += mount.options()
    argv += ["--unshare-pid", "--unshare-ipc"]
    if not policy.network:
        argv.append("--unshare-net")
    argv += ["--die-with-parent", "--cap-drop", "ALL"]
    if new_session:
        argv.append("--new-session")
    # Last: a root inside a hidden folder needed its mount point made there first.
    for mount in mounts:
        if mount.kind is _Kind.HIDDEN and mount.is_dir:
            argv += ["--remount-ro", str(mount.path)]
    temp = policy.temp_dir.resolve() if policy.temp_dir is not None else Path("/tmp")
    argv += ["--setenv", "TMPDIR", str(temp), "--chdir", str(cwd), "--", *command]
    return argv


def _mounts(roots: Sequence[Path], policy: SandboxPolicy, visible: Sequence[Path]) -> list[_Mount]:
    """Every place that exists now, once (the stronger kind at one path), shallowest first."""
    planned: dict[Path, _Mount] = {}

    def plan(path: Path, kind: _Kind) -> None:
        try:
            real = path.resolve()
            is_dir = real.is_dir()
            exists = is_dir or real.exists()
        except (OSError, RuntimeError):  # a loop of links, a folder we may not search
            return
        if not exists:
            return
        known = planned.get(real)
        if known is None or kind > known.kind:
            planned[real] = _Mount(real, kind, is_dir)

    for place in visible:
        plan(place, _Kind.VISIBLE)
    for place in (*roots, *policy.writable):
        plan(place, _Kind.WRITABLE)
    if policy.temp_dir is not None:
        plan(policy.temp_dir, _Kind.WRITABLE)
    for root in roots:
        for inside in policy.protected_in_roots:
            plan(root / inside, _Kind.PROTECTED)
    for place in policy.hidden:
        plan(place, _Kind.HIDDEN)
    return sorted(planned.values(), key=lambda mount: (len(mount.path.parts), mount.kind))


def places_in_tmp(argv: Sequence[str]) -> list[Path]:
    """The folders under `/tmp` holding the files `argv` names by absolute path (a
    server's program, its script), which the sandbox's empty `/tmp` would hide."""
    tmp = Path("/tmp")
    places = []
    for word in argv:
        path = Path(word)
        if not path.is_absolute() or tmp not in path.parents:
            continue
        try:
            if path.is_file():
                places.append(path.parent)
            elif path.is_dir():
                places.append(path)
        except OSError:
            continue
    return places


def program_places_in_tmp() -> list[Path]:
    """The folders under `/tmp` that programs are run from: those on `PATH` and the
    agent's own interpreter's prefix (its venv), which the empty `/tmp` would hide."""
    tmp = Path("/tmp")
    candidates = [Path(entry) for entry in os.environ.get("PATH", "").split(os.pathsep) if entry]
    candidates += [Path(sys.prefix), Path(sys.base_prefix)]
    return [place for place in candidates if place.is_absolute() and tmp in place.parents]
