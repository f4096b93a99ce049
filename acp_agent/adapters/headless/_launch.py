"""Starting the agent child process a headless command talks to, before anything else.

`launch_agent` starts `python -m acp_agent` with pipes for its stdin, stdout and
stderr, in a session of its own (a Ctrl-C in the terminal is the command's to handle:
it cancels the turn), with nothing but the standard library loaded: a command starts
its agent as soon as it knows the flags, and loads what talks to it (asyncio, the wire
types, the engine) while the agent starts up on the other core. The connection then
takes the process over (`ClientConnection.attach_process`): `run_attached` loads and
runs what does, then `end_unattached` ends the agent if it never took it over, or left
it running.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Final

__all__ = ("end_unattached", "launch_agent", "run_attached")

#: How long an agent whose input was closed gets to exit before it is killed.
_EXIT_WAIT_S: Final = 5.0


def launch_agent(
    agent_args: Sequence[str], *, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start the agent (`acp-agent` with `agent_args`); `OSError` if it cannot start."""
    return subprocess.Popen(
        [sys.executable, "-m", "acp_agent", *agent_args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=None if env is None else dict(env),
        start_new_session=True,
    )


def run_attached(
    process: subprocess.Popen[bytes],
    run: Callable[[subprocess.Popen[bytes]], Coroutine[Any, Any, int]],
) -> int:
    """`run(process)` in a new event loop, its status; `run` imports what talks to the
    agent when called, so that loads while the agent starts. Then the agent is ended if
    it still runs (`end_unattached`), however `run` ended."""
    try:
        import asyncio

        from acp_agent import attrs_code

        attrs_code.install()  # before the run's modules define their classes
        return asyncio.run(run(process))
    finally:
        end_unattached(process)


def end_unattached(process: subprocess.Popen[bytes]) -> None:
    """End `process` if it still runs (a command that failed before, or while, talking to
    it): its input closed, as an editor ends an agent, then killed if it lingers; its
    pipes closed."""
    if process.poll() is None:
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
