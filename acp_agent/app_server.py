"""`acp-agent server`: the app server, one runtime for any number of ACP clients.

    acp-agent server [--socket PATH] [--listen ws://127.0.0.1:PORT [--allow-remote]
                     [--allow-origin ORIGIN]...] [the stdio agent's flags]

Hosts the runtime (sessions, store, MCP and language servers, jobs) for as
long as it runs, and serves ACP on a Unix socket private to the person
(`<state folder>/server/acp.sock`, or `--socket` / `ACP_AGENT_SOCKET`; the
folder 0700, the socket 0600) and, when asked, on WebSocket (`--listen`),
where every client must present a token (see `acp_agent.adapters.server`).
Each connection is a client exactly as over stdio; `_acp-agent/attach` lets
several follow one session. Editors reach it through `acp-agent --connect`.

SIGTERM, SIGHUP and SIGINT stop it: every connection ends as the end of
stdin ends the stdio agent (running turns recorded as interrupted), the
runtime closes, the socket, `server.pid` and the WebSocket token file are
removed.

A start that fails for a reason the person can fix says so in one line on
stderr, with no traceback, and leaves nothing behind: status 2 for a place or
address that cannot be used (the socket's folder, a port in use, another
server on the socket), 1 for a session store that cannot be opened.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

import acp_agent
from acp_agent import attrs_code
from acp_agent.runtime_flags import add_runtime_arguments
from acp_agent.runtime_setup import (
    USAGE_ERROR,
    RuntimeSettings,
    editor_timeout_s,
    prepare,
    runtime_host,
    runtime_work,
    write_stall_s,
)

if TYPE_CHECKING:
    from acp_agent.adapters.acp import RuntimeHost
    from acp_agent.adapters.server import AppServer, ListenAddress

__all__ = ("run_server",)

logger = logging.getLogger("acp_agent")

#: Exit status when what the server needs around it (its store) is not there.
_UNAVAILABLE = 1


class _StoreNotOpened(Exception):
    """The session store could not be opened, so the server does not start."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-agent server",
        description="The app server: one agent runtime that any number of ACP clients share "
        "(editors through `acp-agent --connect`, other clients over the Unix socket or "
        "WebSocket).",
    )
    parser.add_argument(
        "--socket",
        type=Path,
        default=None,
        metavar="PATH",
        help="the Unix socket to listen on (env ACP_AGENT_SOCKET; default: "
        "<state folder>/server/acp.sock)",
    )
    parser.add_argument(
        "--listen",
        default=None,
        metavar="ws://HOST:PORT",
        help="serve ACP on WebSocket too, at ws://HOST:PORT/acp (port 0: any free one); "
        "clients send Authorization: Bearer <token> (ACP_AGENT_SERVER_TOKEN, else drawn at "
        "each start and written to a 0600 file whose path is printed)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --listen name an address that is not loopback (anyone who reaches it "
        "with the token can run commands)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web page origin (e.g. http://127.0.0.1:8080) allowed to connect; requests "
        "from any other page are refused (repeatable)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name the WebSocket listener may be reached by (its Host header; "
        "repeatable); other names are refused, against DNS rebinding",
    )
    parser.add_argument(
        "--web",
        action="store_true",
        help="serve the web page on the WebSocket listener (default ws://127.0.0.1:0) and "
        "print a one-time link to open it",
    )
    add_runtime_arguments(parser)
    return parser


def run_server(argv: Sequence[str] | None = None) -> int:
    """Run the app server until a stop signal; returns the exit status."""
    args = _parser().parse_args(argv)
    settings = prepare(args)
    if isinstance(settings, int):
        return settings
    from acp_agent.adapters.server import AddressRefused, PlaceError, default_socket

    socket = args.socket or default_socket(settings.paths.state_dir)
    address = None
    if args.web and args.listen is None:
        args.listen = "ws://127.0.0.1:0"
    if args.listen is not None:
        from acp_agent.adapters.server import listen_address

        try:
            address = listen_address(args.listen, allow_remote=args.allow_remote)
        except AddressRefused as exc:
            print(f"acp-agent server: {exc}", file=sys.stderr)
            return USAGE_ERROR
    # What stops a start is told in one line; the server has stopped (and removed what it
    # made) before it is.
    try:
        status = asyncio.run(_serve(settings, socket, address))
    except (PlaceError, AddressRefused) as exc:
        print(f"acp-agent server: {exc}", file=sys.stderr)
        status = USAGE_ERROR
    except _StoreNotOpened as exc:
        print(f"acp-agent server: {exc}", file=sys.stderr)
        status = _UNAVAILABLE
    # `os._exit` runs no exit hooks: the attrs methods this run compiled are kept here.
    attrs_code.save()
    logging.shutdown()
    sys.stderr.flush()
    # As the stdio agent does: everything is closed and recorded by now.
    os._exit(status)


async def _serve(settings: RuntimeSettings, socket: Path, address: ListenAddress | None) -> int:
    from acp_agent.adapters.server import AppServer
    from acp_agent.process_groups import GroupRegistry, use_process_groups

    # Commands and servers the runtime starts are noted and reaped as the stdio agent's are.
    groups = GroupRegistry(settings.paths.data_dir / "jobs", reaper=True)
    groups.sweep()
    use_process_groups(groups)
    failure: Exception | None = None
    # The runtime and the sessions being assembled run in this group, which ends (waiting
    # for them) once the server has stopped.
    async with anyio.create_task_group() as runtime_tasks:
        start_soon = runtime_work(runtime_tasks)
        host, models = runtime_host(settings, start_soon)
        server = AppServer(
            host,
            models,
            start_soon=start_soon,
            config_dir=settings.paths.config_dir,
            mode=settings.mode_name,
            unstable=settings.args.unstable,
            editor_timeout_s=editor_timeout_s(),
            stall_s=write_stall_s(),
        )
        try:
            await _listen_until_stopped(server, host, settings, socket, address)
        except Exception as exc:
            failure = exc  # raised as it is (a bad place), not in the group's ExceptionGroup
        finally:
            runtime_tasks.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return 0


async def _listen_until_stopped(
    server: AppServer,
    host: RuntimeHost,
    settings: RuntimeSettings,
    socket: Path,
    address: ListenAddress | None,
) -> None:
    """Listen and serve until a stop signal, then stop the server (and its runtime)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await server.listen_unix(socket)
        if address is not None:
            await _listen_websocket(server, address, settings.args, socket)
        await _open_store(host, settings)
        await server.open()
        print(f"acp-agent server: listening on unix:{socket}", file=sys.stderr, flush=True)
        logger.info(
            "acp-agent %s app server (pid %d) on unix:%s",
            acp_agent.__version__,
            os.getpid(),
            socket,
        )
        await stop.wait()
        logger.info("stopping the app server")
    finally:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await server.stop()


async def _open_store(host: RuntimeHost, settings: RuntimeSettings) -> None:
    """Open the session store before the runtime; `_StoreNotOpened` if it cannot be.

    On its own first: the runtime, opening it, would log its failure as an error with a
    traceback, where a store that is unreachable or misnamed is the person's to fix and
    told in one line. The log file keeps the line too.
    """
    from acp_agent.adapters.acp import RuntimeUnavailable
    from acp_agent.url_credentials import redact_url_credentials

    try:
        await host.store()
    except RuntimeUnavailable as exc:
        logger.info("the app server cannot start: %s", exc)
        # Printed, not logged, so the log's redaction is not on the way: a URL's password
        # is hidden here (the store's message hides it already; this is not left to it).
        said = redact_url_credentials(str(exc))
        raise _StoreNotOpened(
            f"{said}; make it reachable or name another store (--store, ACP_AGENT_STORE, "
            f"or [store] url in {settings.paths.config_dir / 'config.toml'})"
        ) from None


async def _listen_websocket(
    server: AppServer, address: ListenAddress, args: argparse.Namespace, socket: Path
) -> None:
    from acp_agent.adapters.server import (
        WebSocketGate,
        listen_websocket,
        server_token,
        token_file,
        token_table,
    )

    token, file = server_token(token_file(socket))
    if file is not None:
        # Drawn for this run alone: gone with the server (the next start draws another).
        server.on_stop(partial(_remove, file))
    web = None
    if args.web:
        from acp_agent.adapters.server import WebLogin

        web = WebLogin()
    gate = WebSocketGate(
        token,
        address,
        origins=args.allow_origin,
        hosts=args.allow_host,
        web=web,
        person=server.person,
        people=token_table(),
    )
    _, port = await listen_websocket(server, address, gate)
    host = f"[{address.host}]" if ":" in address.host else address.host
    if web is not None:
        print(
            f"acp-agent server: the web page (this link works once): {web.url(host, port)}",
            file=sys.stderr,
            flush=True,
        )
    where = (
        f"the token is in {file}" if file is not None else "the token is $ACP_AGENT_SERVER_TOKEN"
    )
    print(
        f"acp-agent server: listening on ws://{host}:{port}/acp ({where})",
        file=sys.stderr,
        flush=True,
    )


async def _remove(file: Path) -> None:
    """Remove `file` if it is still there."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(file)  # a small file, as the server's stop removes its socket
