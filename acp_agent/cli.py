"""The `acp-agent` command: the stdio agent, the app server, or a headless command.

    acp-agent [options]                         the stdio agent: ACP for the editor that
                                                launched it (`serve` is an older name for it)
    acp-agent --connect [options]               the same, as a bridge to a running server
    acp-agent server [options]                  the app server: many clients, one runtime
    acp-agent watch [SESSION] [options]         follow (and steer) a server's session
    acp-agent exec [options] PROMPT             one prompt, the answer on stdout
    acp-agent sessions list|show|export|delete  the stored sessions
    acp-agent check -- AGENT COMMAND...         check any ACP agent against the protocol
    acp-agent doctor [options]                  what works in this set-up, what to fix
    acp-agent store migrate --to URL            copy the sessions into another store
    acp-agent lsp [options]                     a language server for editors without ACP

Only the command's own modules load: an editor times spawn -> `initialize`, so
serving imports nothing of the headless front ends (nor of doctor), and the reverse.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from typing import Final

__all__ = ("main",)

#: The collector's youngest-generation threshold while the stdio agent starts (see `main`).
_STARTUP_GC_THRESHOLD: Final = 50_000

#: The commands other than the stdio agent (the first argument names them).
_COMMANDS: Final = frozenset(
    ("exec", "sessions", "check", "doctor", "server", "watch", "lsp", "store")
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command `argv` names (default: the process's arguments); its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else None
    if command not in _COMMANDS:
        # Starting, the stdio agent makes the objects it keeps (its modules, classes and
        # functions): the collector's youngest generation walked them ~130 times for
        # nothing before the first session was open, a seventh of the start-up's CPU. It
        # collects rarely until the runtime is open and frozen out of the generations,
        # then as usual (`acp_agent.adapters.acp._host`).
        gc.set_threshold(_STARTUP_GC_THRESHOLD)
        from acp_agent.stdio_agent import run_stdio_agent

        # It installs `attrs_code` once it knows it is no bridge (which loads no attrs).
        # `serve` is kept as an older name of the stdio agent (editor configs name it).
        return run_stdio_agent(args[1:] if command == "serve" else args)
    # The headless commands start their agent first, then load attrs (installing
    # `attrs_code` themselves).
    if command == "exec":
        from acp_agent.adapters.headless import run_exec

        return run_exec(args[1:])
    if command == "sessions":
        from acp_agent.adapters.headless import run_sessions

        return run_sessions(args[1:])
    # Before any class of ours is defined: the methods attrs compiled for them in an
    # earlier run (`acp_agent.attrs_code`).
    from acp_agent import attrs_code

    attrs_code.install()
    if command == "check":
        from acp_agent.adapters.check import run_check

        return run_check(args[1:])
    if command == "doctor":
        from acp_agent.adapters.doctor import run_doctor

        return run_doctor(args[1:])
    if command == "server":
        from acp_agent.app_server import run_server

        return run_server(args[1:])
    if command == "watch":
        from acp_agent.adapters.watch import run_watch

        return run_watch(args[1:])
    if command == "lsp":
        from acp_agent.lsp_agent import run_lsp_agent

        return run_lsp_agent(args[1:])
    assert command == "store", command
    from acp_agent.adapters.store_admin import run_store

    return run_store(args[1:])
