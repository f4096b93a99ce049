"""Running one command in a terminal the editor owns, to its end, and giving the terminal up.

`run_in_terminal` asks the editor to start the command (`terminal/create`),
embeds the terminal in the call at once (the person watches it live), waits
for its exit against the command's timeout while keeping the start of its
output (the terminal drops output from the start once over its limit), kills
it on timeout, and reads its final output. Every request but the wait has a
deadline of its own: a start the editor does not confirm raises
`ClientTimedOut` (after the start, a cancel still reaches the terminal, which
is killed and released); an output or kill it does not answer is kept in
`TerminalRun.unanswered` for the result to say. However the run ends, the
terminal is released: on an error at once, else by the caller, after the
result that shows it reached the editor (`TerminalRun.release_once_shown`),
or at once when the caller replaces it (`release_now`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final

import anyio
import anyio.lowlevel
import attrs

from acp_agent.toolkit import (
    ClientBridge,
    ClientTerminal,
    ClientTimedOut,
    ProgressSink,
    TerminalContent,
    TerminalExit,
)

__all__ = ("TerminalRun", "run_in_terminal")

logger = logging.getLogger(__name__)

#: Bounded waits while cleaning up a client terminal.
_CLEANUP_WAIT_S: Final = 5.0
#: How often the start of the output is read while the command runs.
_REFRESH_S: Final = 0.5


async def _cleanup(step: Callable[[], Awaitable[None]]) -> None:
    """One request to the editor while cleaning up: bounded, and a failure only logged
    (the terminal is being given up either way)."""
    with anyio.move_on_after(_CLEANUP_WAIT_S):
        try:
            await step()
        except Exception as exc:
            logger.info("cleaning up a client terminal: %s", exc)


@attrs.define
class TerminalRun:
    """How a command in an editor's terminal ended, as far as the editor said."""

    terminal: ClientTerminal
    #: The terminal's final output (its last `output_byte_limit` bytes).
    output: str = ""
    truncated: bool = False
    #: The start of the output, kept while the terminal still held it.
    head: bytes = b""
    exited: TerminalExit | None = None
    timed_out: bool = False
    #: The request the editor did not answer after the start (output, or the kill).
    unanswered: ClientTimedOut | None = None

    @property
    def terminal_id(self) -> str:
        return self.terminal.terminal_id

    @property
    def exit_code(self) -> int | None:
        return self.exited.exit_code if self.exited else None

    @property
    def signal(self) -> str | None:
        return self.exited.signal if self.exited else None

    def release_once_shown(self, client: ClientBridge) -> Callable[[], Awaitable[None]]:
        """The release, for after the result showing the terminal reached the editor
        (killing the command first when its end is not known)."""
        # A kill the editor left unanswered is not asked again: the release kills too (ACP).
        kill_first = self.exited is None and not (
            self.unanswered is not None and self.unanswered.request == "terminal/kill"
        )

        async def release() -> None:
            # The result shows the terminal too: released only once it reached the editor.
            await client.updates_sent()
            if kill_first:
                await _cleanup(self.terminal.kill)
            await _cleanup(self.terminal.release)

        return release

    async def release_now(self) -> None:
        """Give the terminal up at once (its command ended; the call shows something else)."""
        with anyio.CancelScope(shield=True):
            if self.exited is None:
                await _cleanup(self.terminal.kill)
            await _cleanup(self.terminal.release)


async def run_in_terminal(
    client: ClientBridge,
    progress: ProgressSink,
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    timeout_s: float,
    output_byte_limit: int,
    head_bytes: int,
) -> TerminalRun:
    """Run `command` with `args` in an editor's terminal until it ends or `timeout_s`
    passes (then it is killed); `ClientTimedOut` when the editor did not confirm the start
    (the command may be running). A cancel kills and releases the terminal."""
    # Shielded (the request has its own deadline): a cancel that came while the editor
    # was starting the command must still learn its terminal, to kill and release it
    # below, or the command would run on in the editor unseen.
    with anyio.CancelScope(shield=True):
        terminal = await client.create_terminal(
            command, args, env=env, cwd=cwd, output_byte_limit=output_byte_limit
        )
    run = TerminalRun(terminal)
    try:
        await anyio.lowlevel.checkpoint()  # a cancel during the start ends it here
        # Embedded, and sent, before its exit is awaited: the editor shows it live.
        await progress.content([TerminalContent(terminal.terminal_id)])
        await progress.flush()
        await client.updates_sent()
        # The exit is awaited as long as the command may run (its own timeout bounds
        # it); every other request to the editor has a deadline of its own.
        with anyio.move_on_after(timeout_s) as deadline:
            exit_seen = anyio.Event()
            async with anyio.create_task_group() as group:

                async def keep_head() -> None:
                    # The terminal drops output from the start once over its limit:
                    # remember the start while it is still there. It stops between
                    # requests, never cancelling one in flight.
                    while not exit_seen.is_set():
                        try:
                            seen = await terminal.output()
                        except ClientTimedOut:
                            return  # the start is a nicety; the exit is what counts
                        if seen.truncated:
                            return
                        run.head = seen.output.encode("utf-8")[:head_bytes]
                        if seen.exit is not None or len(run.head) >= head_bytes:
                            return
                        with anyio.move_on_after(_REFRESH_S):
                            await exit_seen.wait()

                group.start_soon(keep_head)
                run.exited = await terminal.wait_for_exit()
                exit_seen.set()
        run.timed_out = deadline.cancelled_caught
        try:
            if run.timed_out:
                await terminal.kill()
                with contextlib.suppress(ClientTimedOut):  # its status is then unknown
                    run.exited = await terminal.wait_for_exit(bounded=True)
            final = await terminal.output()
        except ClientTimedOut as exc:
            run.unanswered = exc
        else:
            if final.exit is not None:
                run.exited = final.exit
            run.output, run.truncated = final.output, final.truncated
    except BaseException:
        with anyio.CancelScope(shield=True):
            if run.exited is None:
                await _cleanup(terminal.kill)
            await _cleanup(terminal.release)
        raise
    return run
