"""`acp-agent lsp`: the agent as a language server on stdio, for editors without ACP.

    acp-agent lsp [--script FILE] [--log-level LEVEL] [--home DIR] [--store URL] ...

The same runtime as the stdio agent (`acp_agent.runtime_setup` reads the same flags
and builds the same parts), served as LSP by `acp_agent.adapters.lsp_front`. New
sessions' mode is `ACP_AGENT_MODE` when it names one, else the default. Sessions
are shared with ACP clients through the store: one an editor made here loads in
any ACP client (not at the same time: a session is open in one process at once).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import acp_agent
from acp_agent.runtime_setup import (
    add_runtime_arguments,
    editor_timeout_s,
    prepare,
    runtime_host,
    runtime_work,
)

__all__ = ("run_lsp_agent",)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-agent lsp",
        description="acp-agent as a language server on stdio: commands (acp-agent.ask, "
        ".cancel, .status, .rewind, .approve, .reject) and code actions for any LSP editor.",
    )
    add_runtime_arguments(parser)
    return parser


def run_lsp_agent(argv: Sequence[str] | None = None) -> int:
    """Serve LSP on stdin/stdout until the editor exits, stdin ends, or SIGTERM or SIGHUP
    comes; ends the process with status 0 then, or returns a usage error's status."""
    args = _parser().parse_args(argv)
    from acp_agent.stdout_guard import claim_stdout

    protocol_stdout = claim_stdout()
    settings = prepare(args)
    if isinstance(settings, int):
        return settings
    # pygls logs every message body at INFO: bodies hold code and prompts.
    logging.getLogger("pygls").setLevel(logging.WARNING)
    from acp_agent.adapters.lsp_front import LspFrontEnd
    from acp_agent.process_groups import GroupRegistry, use_process_groups

    # The runtime runs in a group the front end opens as it serves (and waits for).
    runtime: list[Callable[..., None]] = []

    def start_soon(work: Callable[[], Coroutine[Any, Any, object]], *, name: str) -> None:
        if not runtime:
            raise RuntimeError("the runtime runs only while the LSP front end serves")
        runtime[0](work, name=name)

    host, _models = runtime_host(settings, start_soon)
    groups = GroupRegistry(settings.paths.data_dir / "jobs", reaper=True)
    groups.sweep()
    use_process_groups(groups)
    front = LspFrontEnd(
        host.agent,
        data_dir=settings.paths.data_dir,
        mode=settings.mode_name,
        editor_timeout_s=editor_timeout_s(),
    )
    logger = logging.getLogger("acp_agent")
    logger.info("acp-agent %s serving LSP on stdio (pid %d)", acp_agent.__version__, os.getpid())
    front.serve(
        sys.stdin.buffer,
        protocol_stdout,
        on_close=host.aclose,
        on_start=lambda group: runtime.append(runtime_work(group)),
    )
    logger.info("input ended; exiting")
    # Everything is closed and recorded by now. The thread reading stdin may still wait
    # on it (after `exit` or a signal, the editor need not close it), and the interpreter
    # would join it at exit: the process ends here, once the logs are flushed.
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)
