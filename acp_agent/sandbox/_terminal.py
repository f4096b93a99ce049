"""The command line an editor's terminal runs to run a command in the sandbox.

The editor runs it (`terminal/create`), on its side, in its environment:

    /bin/sh -c SCRIPT acp-agent-sandbox SHELL COMMAND MARK \\
        /usr/bin/env -u KEY ... bwrap OPTIONS... --

SCRIPT is a constant: it first starts the sandbox on `SHELL -c :` (a few
milliseconds), and where that fails (no bwrap on the editor's PATH, no user
namespaces there, an older bwrap missing an option, no such shell) it prints
MARK and what failed and exits `NO_SANDBOX_STATUS`, before the command ran;
else it execs the sandbox on `SHELL -c COMMAND`. Once a session's editor has
started the sandbox, its later commands skip the trial (`tried`). Every part is an argument of
its own, never spliced into a script, so no quoting is ours: COMMAND reaches
the shell in the sandbox exactly as the model wrote it, whatever quotes, pipes
and `$VARS` it holds (an editor that runs a command line through its own shell,
as Zed does, quotes each argument).

`env -u` takes the hidden variables out before bwrap starts: bwrap's own
`--unsetenv` would leave them in bwrap's process, which is the sandbox's pid 1
and whose `/proc/1/environ` a command can read. The sandbox gets a session of
its own (`--new-session`: in a terminal a command could otherwise push input
into it) and a pid namespace whose first process dies with bwrap
(`--die-with-parent`): killing bwrap, the terminal's process once the script
execs it, ends everything in the sandbox, a process that left its group too.
`bwrap` is found on the editor's PATH, not the agent's: it is the editor's
side that must have it.

MARK carries a random token per launch. A command in the sandbox cannot see
it (the script's arguments live outside the sandbox's pid namespace), so its
own output cannot pass for a refusal (`TerminalWrap.refused`).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Final

import attrs

from acp_agent.values import Value

__all__ = ("NO_SANDBOX_STATUS", "TerminalWrap", "terminal_wrap")

#: The exit status of a terminal whose side could not start the sandbox (the command
#: did not run); with the launch's mark in its output, never a command's own.
NO_SANDBOX_STATUS: Final = 86
#: Where the hidden variables are taken out (coreutils' and busybox's env both take -u).
_ENV: Final = "/usr/bin/env"
#: The script's name ($0), as `ps` and error messages show it.
_NAME: Final = "acp-agent-sandbox"
#: The sandbox tried on `SHELL -c :`, then run on the command. No quote or backslash
#: in it: an editor's shell (fish, say) quoting it has nothing to get wrong.
_SCRIPT: Final = (
    "shell=$1 command=$2 mark=$3; shift 3; "
    'why=$("$@" "$shell" -c : 2>&1) || '
    f'{{ printf "%s: %s" "$mark" "${{why:-exit status $?}}"; echo; exit {NO_SANDBOX_STATUS}; }}; '
    'exec "$@" "$shell" -c "$command"'
)
#: The same, once the editor's side has started the sandbox in this session: no trial
#: start (a second sandbox start, about 7 ms a command). Should its bwrap fail after all,
#: the command fails as any command does, with bwrap's message in its output.
_SCRIPT_TRIED: Final = 'shell=$1 command=$2 mark=$3; shift 3; exec "$@" "$shell" -c "$command"'
#: The most of the editor side's message a refusal keeps.
_WHY_CHARS: Final = 300


@attrs.frozen
class TerminalWrap(Value):
    """What an editor's terminal runs (`command` with `args`) to run a command in the
    sandbox, and how to tell that its side could not (`refused`)."""

    command: str
    args: tuple[str, ...]
    #: The line the script prints before the reason it could not start the sandbox.
    mark: str

    def refuse(self, why: str) -> None:
        """Nothing to remember: a bare wrap is tried each time (the session's remembers)."""

    def refused(self, output: str, exit_code: int | None) -> str | None:
        """Why the editor's side could not start the sandbox, when the terminal's end
        shows it (the command did not run); None when the command ran."""
        if exit_code != NO_SANDBOX_STATUS:
            return None
        start = output.find(self.mark + ": ")
        if start < 0:
            return None
        # A terminal may wrap a long line: the words after the mark, spaced once.
        why = " ".join(output[start + len(self.mark) + 2 :].split())
        return why[:_WHY_CHARS] or "no message"


def terminal_wrap(
    sandbox_argv: Sequence[str],
    *,
    shell: str,
    command: str,
    hidden_env: Sequence[str],
    tried: bool = False,
) -> TerminalWrap:
    """`shell -c command` in the sandbox `sandbox_argv` opens (bwrap and its options, up to
    and including `--`), as an editor's terminal runs it, without `hidden_env`; with no
    trial start when `tried` (the editor's side has started the sandbox before)."""
    mark = f"acp-agent [{secrets.token_hex(4)}]: no sandbox in this terminal"
    unset = [part for name in hidden_env for part in ("-u", name)]
    prefix = [_ENV, *unset] if unset else []
    script = _SCRIPT_TRIED if tried else _SCRIPT
    args = ("-c", script, _NAME, shell, command, mark, *prefix, *sandbox_argv)
    return TerminalWrap("/bin/sh", args, mark)
