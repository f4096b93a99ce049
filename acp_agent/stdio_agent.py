"""`acp-agent` (also `acp-agent serve`): the stdio agent, ACP for the editor that launched us.

    acp-agent [--script FILE] [--log-level LEVEL] [--home DIR] [--store URL]
              [--max-turn-requests N] [--max-branches N] [--max-jobs N] [--unstable]

The embedded default: one process per editor window, hosting its own runtime
(`acp_agent.runtime_setup` reads the flags and builds it), serving ACP on
stdin and stdout. `serve` is only an older name for the same thing; the app
server that many clients share is `acp-agent server` (`acp_agent.app_server`),
and `--connect` makes this process a thin bridge to it instead
(`acp_agent.adapters.server.run_bridge`).

Each flag has an environment twin (`ACP_AGENT_SCRIPT`, `ACP_AGENT_LOG_LEVEL`,
`ACP_AGENT_HOME`, `ACP_AGENT_STORE`, `ACP_AGENT_MAX_TURN_REQUESTS`,
`ACP_AGENT_MAX_BRANCHES`, `ACP_AGENT_MAX_JOBS`); the flag wins. The model of
new sessions is the script's (`scripted/<file name>`) with `--script`, else
`ACP_AGENT_MODEL`, else the config file's `default_model`, else one the API
key variables make available (see `acp_agent.models._config`). Their mode is
`ACP_AGENT_MODE` when it names one (`ask`, say), else `sandboxed`.

The store opens in the connection's event loop once `initialize` is answered,
or on first use. Heavy imports wait until after argument parsing: editors and
the startup benchmark time spawn -> `initialize`.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

import acp_agent
from acp_agent import attrs_code
from acp_agent.runtime_flags import add_runtime_arguments

if TYPE_CHECKING:
    from acp_agent.runtime_setup import RuntimeSettings

__all__ = ("run_stdio_agent",)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-agent",
        description="A coding agent served over the Agent Client Protocol on stdio.",
        epilog="acp-agent server: the app server many clients share (Unix socket, WebSocket); "
        "acp-agent --connect: this stdio command as a bridge to it. Headless commands: "
        "acp-agent exec PROMPT (one prompt, the answer on stdout); "
        "acp-agent sessions list|show|export|delete; acp-agent doctor (what works in this "
        "set-up, what to fix); acp-agent check -- AGENT COMMAND (check any ACP agent "
        "against the protocol's rules); acp-agent store migrate --to URL (copy the sessions "
        "into another store); acp-agent lsp (the agent as a language server, for editors "
        "without ACP). Each has --help.",
    )
    add_runtime_arguments(parser)
    parser.add_argument(
        "--connect",
        action="store_true",
        help="be a thin bridge to a running `acp-agent server` instead of hosting the "
        "agent here (also [server] connect = true in config.toml); see `acp-agent server`",
    )
    parser.add_argument(
        "--socket",
        default=None,
        metavar="PATH",
        help="with --connect: the server's Unix socket (env ACP_AGENT_SOCKET; default: the "
        "server's in the state folder)",
    )
    return parser


def run_stdio_agent(argv: Sequence[str] | None = None) -> int:
    """Serve ACP on stdin/stdout until stdin ends; returns the exit status.

    SIGTERM, SIGHUP and SIGINT stop the agent the way the end of stdin does:
    running turns are interrupted and recorded, the commands it started and
    its MCP servers are ended, the store is closed, and the process exits
    with status 0. Another SIGTERM or SIGHUP during that shutdown kills the
    process at once (it dies by that signal; what was still being stopped
    may be left running).
    """
    args = _parser().parse_args(argv)
    if args.connect or _connect_configured(args):
        from acp_agent.adapters.server import run_bridge

        return run_bridge(args.home, socket=args.socket, start_args=_passed_on(argv))

    # Not the bridge: now (before any class of ours is defined) the methods attrs
    # compiled for them in an earlier run (`acp_agent.attrs_code`). The bridge loads
    # no attrs at all: it costs as much as the interpreter's own start.
    attrs_code.install()
    from acp_agent.runtime_setup import prepare

    # From here on only protocol messages may reach fd 1.
    from acp_agent.stdout_guard import claim_stdout

    protocol_stdout = claim_stdout()
    settings = prepare(args)
    if isinstance(settings, int):
        return settings
    return _serve_stdio(settings, protocol_stdout)


def _connect_configured(args: argparse.Namespace) -> bool:
    """Whether config.toml says `[server] connect = true` (read only if it names `[server]`)."""
    from acp_agent.paths import resolve_paths

    config_file = resolve_paths(args.home).config_dir / "config.toml"
    try:
        text = config_file.read_bytes()
    except OSError:
        return False
    if b"[server]" not in text:
        return False
    from acp_agent.adapters.server import server_settings

    return server_settings(config_file).connect


def _passed_on(argv: Sequence[str] | None) -> list[str]:
    """The flags a server this bridge starts should get: ours, less the bridge's own."""
    from acp_agent.adapters.server import server_arguments

    return server_arguments(list(sys.argv[1:] if argv is None else argv))


def _serve_stdio(settings: RuntimeSettings, protocol_stdout: BinaryIO) -> int:
    from acp_agent.adapters.acp import AcpAgent
    from acp_agent.adapters.acp._warmup import (
        PROVIDER_MODULES,
        SESSION_MODULES,
        TOOL_MODULES,
        Warmup,
        prepare_event_readers,
        prepare_wire_types,
        warmup_enabled,
    )
    from acp_agent.runtime_setup import editor_timeout_s, runtime_host, write_stall_s
    from protocol.connection import AgentConnection

    args, paths = settings.args, settings.paths
    connection = AgentConnection(unstable=args.unstable)
    # The runtime lives in the connection's task group, which waits for it at the end.
    host, models = runtime_host(settings, connection.start_soon)
    warmup = None
    if warmup_enabled():
        # HTTP and the providers only when a real model answers by default.
        warm = (
            SESSION_MODULES
            + (() if settings.script is not None else PROVIDER_MODULES)
            + TOOL_MODULES
        )
        warmup = Warmup(
            warm,
            # A request gets the GIL first: from when its line is read, not only once
            # its handler runs (the loop may be busy until then); so does a new
            # session's assembly, which imports what the warm-up would.
            busy=lambda: (
                connection.protocol.running_handlers > 0
                or connection.input_waiting > 0
                or agent.assembling
            ),
            # The model's HTTP client, which the first prompt built itself, then the
            # converter's functions for its wire types, then what a first load reads
            # the stored events with; last, the attrs methods compiled by this first
            # run after an install or upgrade, kept for the next (`attrs_code`).
            then=[
                models.prepare,
                prepare_wire_types(connection.protocol.converter),
                prepare_event_readers,
                attrs_code.save,
            ],
        )
    agent = AcpAgent(
        connection,
        host,
        models,
        config_dir=paths.config_dir,
        warmup=warmup,
        editor_timeout_s=editor_timeout_s(),
        mode=settings.mode_name,
    )
    # v1 now; v2 instead if the client's `initialize` asks for it (ACP_AGENT_PROTOCOL).
    from acp_agent.adapters.acp2 import choose_protocol

    v2_agents: list[Any] = []

    def use_v2() -> None:
        from acp_agent.adapters.acp2._agent import AcpV2Agent

        v2_agents.append(
            AcpV2Agent(
                connection, host, models, config_dir=paths.config_dir, mode=settings.mode_name
            )
        )
        v2_agents[-1].register()

    async def close_v2() -> None:
        for v2_agent in v2_agents:
            await v2_agent.aclose()

    choose_protocol(connection, v1=agent.register, v2=use_v2)
    # Sessions still being assembled stop first (giving their leases back), then the runtime.
    connection.on_shutdown(agent.aclose)
    connection.on_shutdown(close_v2)
    connection.on_shutdown(host.aclose)
    if os.environ.get("ACP_AGENT_DEBUG") == "1":
        from acp_agent.adapters.acp._debug import register_debug

        register_debug(connection, warmup)

    logger = logging.getLogger("acp_agent")
    logger.info("acp-agent %s serving ACP on stdio (pid %d)", acp_agent.__version__, os.getpid())
    # Every process group this agent starts is registered before it runs: a reaper ends
    # them if the agent dies, and a note on disk lets the next start end what it could not.
    # Those a dead agent left noted end now, before `initialize` is answered.
    from acp_agent.process_groups import GroupRegistry, use_process_groups

    groups = GroupRegistry(paths.data_dir / "jobs", reaper=True)
    groups.sweep()
    use_process_groups(groups)
    # SIGTERM and SIGHUP end the input as the end of stdin does (SIGINT: asyncio.run does).
    connection.start_io(
        stdin=sys.stdin.buffer,
        stdout=protocol_stdout,
        stop_signals=(signal.SIGTERM, signal.SIGHUP),
        write_stall_s=write_stall_s(),
    )
    logger.info("input ended; exiting")
    # Everything is closed and recorded by now (the runtime, the store, the MCP servers),
    # however the input ended, so the status is 0 for a signal too.
    # Tearing down the interpreter's ~900 modules would take half a second of the one
    # an editor waits, so the process ends here, once the logs are flushed.
    # `os._exit` runs no exit hooks: the attrs methods this run compiled are kept here.
    attrs_code.save()
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)
