"""Holding a new group's leader at the door until its group is registered.

A gated command is started as `/bin/sh -c 'read -r _ || exit 125; exec "$@"'`
followed by the command: the leader (leading a process group of its own)
reads one line before it becomes the command, and the agent writes that line
only once the group is registered (`admit`). A crash before that closes the
agent's end: the read fails and the leader exits without running anything.
So no command of ours runs unregistered, however the agent dies.

The line comes on the command's stdin: from a pipe of the gate's own for a
command whose stdin is empty (`/dev/null` once admitted), or as the first
line on the protocol pipe of a server that talks over its stdin
(`protocol_stdin`: the caller writes `first_line` before anything else).
`exec` keeps the pid, so the group's leader is the command itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from acp_agent.process_groups._registry import Registration

__all__ = ("Gate",)

#: The leader waits for a line, then becomes the command (`exec` keeps its pid).
_WAIT: Final = 'IFS= read -r _ || exit 125; exec "$@"'
_OPEN: Final = b"\n"


class Gate:
    """One command's door; see the module docstring. Use it as a context manager:
    leaving it without `admit` sends the leader away (it exits 125, having run nothing).

    **Parameters:**

    * `argv`: the command; its program is looked up now, as `subprocess` would (so a
      missing one is `FileNotFoundError` here, not an exit status of the shell).
    * `register`: registers a started group (its pid) and returns its `Registration`.
    * `protocol_stdin`: the command talks over its stdin (a language or MCP server).
    * `env`, `cwd`: the command's, for the lookup.
    """

    def __init__(
        self,
        argv: Sequence[str],
        register: Callable[[int], Registration] | None,
        *,
        protocol_stdin: bool = False,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> None:
        self._register = register
        self._opener: int | None = None
        self._read_end: int | None = None
        #: What the child's stdin is to be (`subprocess.DEVNULL`, `PIPE`, or the gate's pipe).
        self.stdin: int = subprocess.PIPE if protocol_stdin else subprocess.DEVNULL
        #: What a caller with `protocol_stdin` writes first on the command's stdin.
        self.first_line = b""
        #: The command to start.
        self.argv = list(argv)
        if register is None:
            return  # nothing registers groups here: the command starts as it is
        program = _resolved(argv[0], env, cwd)
        if protocol_stdin:
            self.argv = ["/bin/sh", "-c", _WAIT, "sh", program, *argv[1:]]
            self.first_line = _OPEN
        else:
            self._read_end, self._opener = os.pipe()
            self.stdin = self._read_end
            self.argv = ["/bin/sh", "-c", _WAIT + " </dev/null", "sh", program, *argv[1:]]

    def admit(self, pid: int) -> Registration | None:
        """Register the started group led by `pid`, then let its command run; returns
        what registering returned (None where nothing registers)."""
        self._close_read_end()
        if self._register is None:
            return None
        registration = self._register(pid)
        if self._opener is not None:
            with contextlib.suppress(OSError):  # the leader died: there is nothing to run
                os.write(self._opener, _OPEN)
            self.close()
        return registration

    def close(self) -> None:
        """Close the gate's pipe (a leader not admitted exits); idempotent."""
        self._close_read_end()
        if self._opener is not None:
            os.close(self._opener)
            self._opener = None

    def _close_read_end(self) -> None:
        if self._read_end is not None:
            os.close(self._read_end)
            self._read_end = None

    def __enter__(self) -> Gate:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _resolved(program: str, env: Mapping[str, str] | None, cwd: str | Path | None) -> str:
    """`program` as `subprocess` would run it: a path as given, a name found on PATH."""
    if os.sep in program:
        path = Path(cwd or ".", program) if not os.path.isabs(program) else Path(program)
        if not path.exists():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        return program
    found = shutil.which(program, path=os.pathsep.join(os.get_exec_path(env)))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    return found
