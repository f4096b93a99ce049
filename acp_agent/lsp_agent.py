"""`acp-agent lsp`: the agent as a language server on stdio, for editors without ACP.

    acp-agent lsp [--script FILE] [--log-level LEVEL] [--home DIR] [--store URL] ...
    acp-agent lsp --connect [--socket PATH] [--home DIR] [--log-level LEVEL]

Embedded (the default): the same runtime as the stdio agent (`acp_agent.runtime_setup`
reads the same flags and builds the same parts), served as LSP by
`acp_agent.adapters.lsp_front`. New sessions' mode is `ACP_AGENT_MODE` when it names
one, else the default. Sessions are shared with ACP clients through the store: one an
editor made here loads in any ACP client (not at the same time: a session is open in
one process at once).

Attached (`--connect`, or `[server] connect = true` in config.toml): no runtime here;
the language server is a client of the running app server (`acp-agent server`) on
its socket, and each folder's session is the server's, followed live by its other
clients (an ACP editor through `acp-agent --connect`, `acp-agent watch`, the web
page). With no server listening, it starts one when `[server] start = true` (or
`ACP_AGENT_SERVER_START=1`) says so; otherwise it tells the person how to start one,
and never falls back to a runtime of its own (the session would not be shared).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn

import acp_agent
from acp_agent import attrs_code
from acp_agent.runtime_flags import add_runtime_arguments
from acp_agent.runtime_setup import (
    RuntimeSettings,
    editor_timeout_s,
    prepare,
    runtime_host,
    runtime_work,
)

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

__all__ = ("run_lsp_agent",)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-agent lsp",
        description="acp-agent as a language server on stdio: commands (acp-agent.ask, "
        ".cancel, .status, .rewind, .approve, .reject) and code actions for any LSP editor.",
    )
    add_runtime_arguments(parser)
    parser.add_argument(
        "--connect",
        action="store_true",
        help="attach to a running `acp-agent server` instead of hosting the agent here "
        "(also [server] connect = true in config.toml): the sessions are the server's, "
        "shared live with its other clients",
    )
    parser.add_argument(
        "--socket",
        default=None,
        metavar="PATH",
        help="with --connect: the server's Unix socket (env ACP_AGENT_SOCKET; default: the "
        "server's in the state folder)",
    )
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
    if args.connect or _connect_configured(args):
        _serve_attached(settings, protocol_stdout, argv)
    from acp_agent.adapters.lsp_front import EmbeddedSessions, LspFrontEnd
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
    data_dir = settings.paths.data_dir
    front = LspFrontEnd(
        EmbeddedSessions(host.agent, data_dir=data_dir, mode=settings.mode_name),
        data_dir=data_dir,
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
    _exit()


def _serve_attached(
    settings: RuntimeSettings, protocol_stdout: BinaryIO, argv: Sequence[str] | None
) -> NoReturn:
    """Serve LSP with the sessions on the app server (see the module docstring)."""
    from acp_agent.adapters.lsp_front import LspFrontEnd, ServerLink, ServerSessions
    from acp_agent.adapters.server import server_arguments, server_socket, start_server

    args = settings.args
    socket, may_start = server_socket(args.home, args.socket)
    start_args = server_arguments(list(sys.argv[2:] if argv is None else argv))
    link = ServerLink(
        str(socket), start=partial(start_server, socket, start_args) if may_start else None
    )
    data_dir = settings.paths.data_dir
    front = LspFrontEnd(
        ServerSessions(link, data_dir=data_dir),
        data_dir=data_dir,
        editor_timeout_s=editor_timeout_s(),
    )
    logger = logging.getLogger("acp_agent")
    logger.info(
        "acp-agent %s serving LSP on stdio (pid %d), sessions on the server at %s",
        acp_agent.__version__,
        os.getpid(),
        socket,
    )

    async def nothing_to_close() -> None:
        """The link closes with the front end's sessions; no runtime runs here."""

    def connect_in(group: TaskGroup) -> None:
        """The link's task owns the connection, in the group the front end waits for."""
        group.start_soon(link.run, name="acp-agent lsp: the server link")

    front.serve(sys.stdin.buffer, protocol_stdout, on_close=nothing_to_close, on_start=connect_in)
    _exit()


def _connect_configured(args: argparse.Namespace) -> bool:
    """Whether config.toml says `[server] connect = true`."""
    from acp_agent.adapters.server import server_settings
    from acp_agent.paths import resolve_paths

    return server_settings(resolve_paths(args.home).config_dir / "config.toml").connect


def _exit() -> NoReturn:
    logger = logging.getLogger("acp_agent")
    logger.info("input ended; exiting")
    # Everything is closed and recorded by now. The thread reading stdin may still wait
    # on it (after `exit` or a signal, the editor need not close it), and the interpreter
    # would join it at exit: the process ends here, once the logs are flushed.
    # `os._exit` runs no exit hooks: the attrs methods this run compiled are kept here.
    attrs_code.save()
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)
