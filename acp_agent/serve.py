"""`acp-agent` (or `acp-agent serve`): serve ACP on stdio for the editor that launched us.

    acp-agent [--script FILE] [--log-level LEVEL] [--home DIR] [--store URL]
              [--max-turn-requests N] [--max-branches N] [--max-jobs N] [--unstable]

Each flag has an environment twin (`ACP_AGENT_SCRIPT`, `ACP_AGENT_LOG_LEVEL`,
`ACP_AGENT_HOME`, `ACP_AGENT_STORE`, `ACP_AGENT_MAX_TURN_REQUESTS`,
`ACP_AGENT_MAX_BRANCHES`, `ACP_AGENT_MAX_JOBS`);
the flag wins. The model of
new sessions is the script's (`scripted/<file name>`) with `--script`, else
`ACP_AGENT_MODEL`, else the config file's `default_model`, else one the API
key variables make available (see `acp_agent.models._config`). Their mode is
`ACP_AGENT_MODE` when it names one (`ask`, say), else `sandboxed`.

Assembly: the models (`<config dir>/config.toml` and the environment), the
built-in tools, the capabilities and MCP servers registered for every
session and branch,
the runtime over the store (the SQLite file in the data directory unless
`--store`, `ACP_AGENT_STORE` or `[store] url` names another, such as a
PostgreSQL database: `acp_agent.store._location`; opened in the connection's
event loop once `initialize` is answered, or on first use), and the ACP adapter. Heavy imports
wait until after argument parsing: editors and the startup benchmark time
spawn → `initialize`.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import acp_agent

if TYPE_CHECKING:
    from acp_agent.core import ServiceRegistry, Store

__all__ = ("serve",)

#: Exit status for a bad command line or script (argparse uses 2 too).
_USAGE_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-agent",
        description="A coding agent served over the Agent Client Protocol on stdio.",
        epilog="Headless commands: acp-agent exec PROMPT (one prompt, the answer on stdout); "
        "acp-agent sessions list|show|export|delete; acp-agent doctor (what works in this "
        "set-up, what to fix); acp-agent check -- AGENT COMMAND (check any ACP agent "
        "against the protocol's rules); acp-agent store migrate --to URL (copy the sessions "
        "into another store). Each has --help.",
    )
    parser.add_argument(
        "--script",
        type=Path,
        default=os.environ.get("ACP_AGENT_SCRIPT") or None,
        metavar="FILE",
        help="play scripted model replies from FILE (env ACP_AGENT_SCRIPT)",
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("ACP_AGENT_LOG_LEVEL") or "INFO",
        metavar="LEVEL",
        help="log file level, DEBUG..CRITICAL (env ACP_AGENT_LOG_LEVEL; default INFO; "
        "stderr shows WARNING and above)",
    )
    parser.add_argument(
        "--home",
        type=Path,
        default=os.environ.get("ACP_AGENT_HOME") or None,
        metavar="DIR",
        help="keep config, data, state and logs under DIR (env ACP_AGENT_HOME; "
        "default: the platform's user folders)",
    )
    parser.add_argument(
        "--store",
        default=None,  # the environment's and the config's are read where the store opens
        metavar="URL",
        help="keep sessions in the store at URL: postgresql://user@host/dbname for a team's "
        "PostgreSQL, or sqlite:PATH (env ACP_AGENT_STORE; else [store] url in config.toml; "
        "default: the SQLite file in the data folder)",
    )
    parser.add_argument(
        "--max-turn-requests",
        type=_positive_int,
        default=os.environ.get("ACP_AGENT_MAX_TURN_REQUESTS") or None,
        metavar="N",
        help="model requests one turn may make before it stops with max_turn_requests "
        "(env ACP_AGENT_MAX_TURN_REQUESTS; default 50)",
    )
    parser.add_argument(
        "--max-branches",
        type=_positive_int,
        default=os.environ.get("ACP_AGENT_MAX_BRANCHES") or None,
        metavar="N",
        help="branches the model may have working at once in a session "
        "(env ACP_AGENT_MAX_BRANCHES; default 4)",
    )
    parser.add_argument(
        "--max-jobs",
        type=_positive_int,
        default=os.environ.get("ACP_AGENT_MAX_JOBS") or None,
        metavar="N",
        help="background jobs (shell with background) that may run at once in a session "
        "(env ACP_AGENT_MAX_JOBS; default 8)",
    )
    parser.add_argument(
        "--unstable",
        action="store_true",
        help="opt in to the unstable ACP methods (session/fork); negotiated shapes need no flag",
    )
    parser.add_argument("--version", action="version", version=f"acp-agent {acp_agent.__version__}")
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def serve(argv: Sequence[str] | None = None) -> int:
    """Serve ACP on stdin/stdout until stdin ends; returns the exit status.

    SIGTERM, SIGHUP and SIGINT stop the agent the way the end of stdin does:
    running turns are interrupted and recorded, the commands it started and
    its MCP servers are ended, the store is closed, and the process exits
    with status 0. Another SIGTERM or SIGHUP during that shutdown kills the
    process at once (it dies by that signal; what was still being stopped
    may be left running).
    """
    args = _parser().parse_args(argv)

    # From here on only protocol messages may reach fd 1.
    from acp_agent.stdout_guard import claim_stdout

    protocol_stdout = claim_stdout()

    from acp_agent.logs import configure_logging, parse_level
    from acp_agent.paths import resolve_paths

    try:
        level = parse_level(args.log_level)
    except ValueError as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return _USAGE_ERROR
    paths = resolve_paths(args.home)
    configure_logging(level, paths.log_file)

    from acp_agent.models import ScriptError, load_script

    try:
        script = load_script(args.script) if args.script is not None else None
    except ScriptError as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return _USAGE_ERROR

    from acp_agent.adapters.acp import AcpAgent, RuntimeHost
    from acp_agent.adapters.acp._warmup import (
        PROVIDER_MODULES,
        SESSION_MODULES,
        TOOL_MODULES,
        Warmup,
        prepare_wire_types,
        warmup_enabled,
    )
    from acp_agent.models import ConfiguredModels
    from protocol.connection import AgentConnection

    models = ConfiguredModels.load(paths.config_dir / "config.toml", os.environ, script=script)
    max_turn_requests, max_branches = args.max_turn_requests, args.max_branches
    max_jobs = args.max_jobs
    #: New sessions' permission mode, by name (checked where the modes are loaded).
    mode_name = os.environ.get("ACP_AGENT_MODE") or None

    def assemble() -> ServiceRegistry:
        """The services of every session and branch (imported on first use)."""
        from acp_agent.capabilities import CapabilitySettings, register_capabilities
        from acp_agent.capabilities.branches import DEFAULT_BRANCH_LIMIT
        from acp_agent.capabilities.controls import DEFAULT_MODE, mode_named
        from acp_agent.capabilities.jobs import DEFAULT_JOB_LIMIT
        from acp_agent.capabilities.loop import DEFAULT_MAX_TURN_REQUESTS, LoopSettings
        from acp_agent.capabilities.permissions import PermissionMode
        from acp_agent.core import ServiceRegistry
        from acp_agent.lsp import LspSettings, register_lsp
        from acp_agent.mcp import McpSettings, register_mcp
        from acp_agent.sandbox import load_sandbox_settings, sandbox_policy
        from acp_agent.tools import builtin_tools

        config_file = paths.config_dir / "config.toml"
        # The person's [sandbox], the agent's own folders hidden, the providers' keys kept
        # from commands' environments.
        sandbox = sandbox_policy(
            agent_paths=paths,
            settings=load_sandbox_settings(config_file),
            key_variables=[key.env_var for key in models.provider_keys()],
        )
        mode = mode_named(mode_name)
        if mode_name and mode.value != mode_name:
            logging.getLogger("acp_agent").warning(
                "ACP_AGENT_MODE=%s is not a mode (%s); new sessions are %s",
                mode_name,
                ", ".join(PermissionMode),
                DEFAULT_MODE.value,
            )
        registry = ServiceRegistry()
        register_capabilities(
            registry,
            CapabilitySettings(
                models=models,
                tools=builtin_tools,
                loop=LoopSettings(max_turn_requests or DEFAULT_MAX_TURN_REQUESTS),
                config_dir=paths.config_dir,
                results_dir=paths.data_dir / "tool-results",
                branch_limit=max_branches or DEFAULT_BRANCH_LIMIT,
                job_limit=max_jobs or DEFAULT_JOB_LIMIT,
                checkpoints_dir=paths.data_dir / "checkpoints",
                sandbox=sandbox,
                default_mode=mode,
            ),
        )
        register_mcp(registry, McpSettings(config_dir=paths.config_dir))
        register_lsp(registry, LspSettings.from_env(os.environ, config_file=config_file))
        return registry

    async def open_store() -> Store:
        # Chosen here, not at start: the choice reads config.toml, and psycopg loads only
        # for a PostgreSQL store.
        from acp_agent.store import open_store, store_location

        location = store_location(
            flag=args.store,
            env=os.environ,
            config_file=paths.config_dir / "config.toml",
            data_dir=paths.data_dir,
        )
        logging.getLogger("acp_agent").info("session store: %s", location.shown)
        return await open_store(location)

    host = RuntimeHost(
        open_store, assemble, models=models, config_dir=paths.config_dir, on_close=models.aclose
    )
    connection = AgentConnection(unstable=args.unstable)
    warmup = None
    if warmup_enabled():
        # HTTP and the providers only when a real model answers by default.
        warm = SESSION_MODULES + (() if script is not None else PROVIDER_MODULES) + TOOL_MODULES
        warmup = Warmup(
            warm,
            # A request gets the GIL first: from when its line is read, not only once
            # its handler runs (the loop may be busy until then).
            busy=lambda: connection.protocol.running_handlers > 0 or connection.input_waiting > 0,
            then=[prepare_wire_types(connection.protocol.converter)],
        )
    agent = AcpAgent(
        connection,
        host,
        models,
        config_dir=paths.config_dir,
        warmup=warmup,
        editor_timeout_s=_editor_timeout_s(),
        mode=mode_name,
    )
    agent.register()
    # Sessions still being assembled stop first (giving their leases back), then the runtime.
    connection.on_shutdown(agent.aclose)
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
        write_stall_s=_write_stall_s(),
    )
    logger.info("input ended; exiting")
    # Everything is closed and recorded by now (the runtime, the store, the MCP servers),
    # however the input ended, so the status is 0 for a signal too.
    # Tearing down the interpreter's ~900 modules would take half a second of the one
    # an editor waits, so the process ends here, once the logs are flushed.
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)


def _editor_timeout_s() -> float | None:
    """How long each request to the editor waits for its answer (`ACP_AGENT_EDITOR_TIMEOUT_S`,
    seconds; None when unset or not a positive number: the default, 30)."""
    value = os.environ.get("ACP_AGENT_EDITOR_TIMEOUT_S")
    try:
        timeout = float(value) if value else None
    except ValueError:
        return None
    return timeout if timeout is not None and timeout > 0 else None


def _write_stall_s() -> float:
    """How long a client may read nothing, with output piling up, before it counts as gone
    (`ACP_AGENT_WRITE_STALL_S`, seconds; default 30)."""
    from protocol.connection import DEFAULT_WRITE_STALL_S

    value = os.environ.get("ACP_AGENT_WRITE_STALL_S")
    try:
        stall = float(value) if value else DEFAULT_WRITE_STALL_S
    except ValueError:
        stall = DEFAULT_WRITE_STALL_S
    return stall if stall > 0 else DEFAULT_WRITE_STALL_S
