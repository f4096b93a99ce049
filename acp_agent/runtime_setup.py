"""The runtime a front end hosts, from the command line: flags, models, services, store.

Both front ends that host the runtime in their own process read the same
settings and build the same parts: the stdio agent (`acp_agent.stdio_agent`,
one editor) and the app server (`acp_agent.app_server`, any number of
clients). `acp_agent.runtime_flags` adds the flags (each with its environment
twin); `prepare` configures logging and loads the script; `runtime_host` makes
the `RuntimeHost` that opens the store and the runtime on first use, in the task
group it is handed (the stdio connection's; the app server's own, `runtime_work`).

Assembly: the models (`<config dir>/config.toml` and the environment), the
built-in tools, the capabilities and MCP servers registered for every
session and branch, the runtime over the store (the SQLite file in the data
directory unless `--store`, `ACP_AGENT_STORE` or `[store] url` names another,
such as a PostgreSQL database: `acp_agent.store._location`). Heavy imports
wait until they are needed: editors time spawn -> `initialize`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

import attrs

from acp_agent.values import Value

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from acp_agent.adapters.acp import RuntimeHost
    from acp_agent.core import ServiceRegistry
    from acp_agent.models import ConfiguredModels, Script
    from acp_agent.paths import AgentPaths
    from acp_agent.store import StoreOpening
    from protocol.connection import StartSoon

__all__ = (
    "USAGE_ERROR",
    "RuntimeSettings",
    "editor_timeout_s",
    "mcp_startup_wait_s",
    "prepare",
    "runtime_host",
    "runtime_work",
    "write_stall_s",
)

#: Exit status for a bad command line or script (argparse uses 2 too).
USAGE_ERROR = 2


@attrs.frozen
class RuntimeSettings(Value):
    """What `prepare` read: the folders, the script, the new sessions' mode."""

    args: argparse.Namespace
    paths: AgentPaths
    script: Script | None
    #: New sessions' permission mode, by name (`ACP_AGENT_MODE`; checked where loaded).
    mode_name: str | None


def prepare(args: argparse.Namespace) -> RuntimeSettings | int:
    """Configure logging and load the script; the settings, or an exit status after
    saying what is wrong on stderr."""
    from acp_agent.logs import configure_logging, parse_level
    from acp_agent.paths import resolve_paths

    try:
        level = parse_level(args.log_level)
    except ValueError as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return USAGE_ERROR
    paths = resolve_paths(args.home)
    configure_logging(level, paths.log_file)

    script = None
    if args.script is not None:
        # The scripted provider (and the model events it streams) only for a script.
        from acp_agent.models import ScriptError, load_script

        try:
            script = load_script(args.script)
        except ScriptError as exc:
            print(f"acp-agent: {exc}", file=sys.stderr)
            return USAGE_ERROR
    return RuntimeSettings(args, paths, script, os.environ.get("ACP_AGENT_MODE") or None)


def runtime_work(task_group: TaskGroup) -> StartSoon:
    """Where the runtime runs for a front end with no connection to host it (the app
    server): `task_group`, as a connection's is (what fails there is logged and ends
    alone)."""
    from protocol.connection import start_soon_in  # as the rest here: when it is needed

    return start_soon_in(task_group)


def runtime_host(
    settings: RuntimeSettings, start_soon: StartSoon
) -> tuple[RuntimeHost, ConfiguredModels]:
    """The host that opens the store and the runtime on first use, and the models; the
    host runs in the task group `start_soon` hands work to (the stdio connection's, the
    app server's), which waits for it."""
    from acp_agent.adapters.acp import RuntimeHost
    from acp_agent.models import ConfiguredModels

    args, paths, mode_name = settings.args, settings.paths, settings.mode_name
    models = ConfiguredModels.load(
        paths.config_dir / "config.toml", os.environ, script=settings.script
    )
    max_turn_requests, max_branches = args.max_turn_requests, args.max_branches
    max_jobs = args.max_jobs

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
        register_mcp(
            registry, McpSettings(config_dir=paths.config_dir, startup_wait_s=mcp_startup_wait_s())
        )
        register_lsp(registry, LspSettings.from_env(os.environ, config_file=config_file))
        return registry

    async def open_store() -> StoreOpening:
        # Chosen here, not at start: the choice reads config.toml, and psycopg loads only
        # for a PostgreSQL store. SQLite's file opens first, its store with the runtime.
        from acp_agent.store import open_in_steps, store_location

        location = store_location(
            flag=args.store,
            env=os.environ,
            config_file=paths.config_dir / "config.toml",
            data_dir=paths.data_dir,
        )
        logging.getLogger("acp_agent").info("session store: %s", location.shown)
        return await open_in_steps(location)

    host = RuntimeHost(
        start_soon,
        open_store,
        assemble,
        models=models,
        config_dir=paths.config_dir,
        on_close=models.aclose,
    )
    return host, models


def editor_timeout_s() -> float | None:
    """How long each request to the editor waits for its answer (`ACP_AGENT_EDITOR_TIMEOUT_S`,
    seconds; None when unset or not a positive number: the default, 30)."""
    value = os.environ.get("ACP_AGENT_EDITOR_TIMEOUT_S")
    try:
        timeout = float(value) if value else None
    except ValueError:
        return None
    return timeout if timeout is not None and timeout > 0 else None


def mcp_startup_wait_s() -> float:
    """How long a prompt waits for MCP servers still making their first connection
    (`ACP_AGENT_MCP_STARTUP_WAIT_S`, seconds; default 5; 0: never waits)."""
    from acp_agent.mcp import McpSettings

    default = McpSettings().startup_wait_s
    value = os.environ.get("ACP_AGENT_MCP_STARTUP_WAIT_S")
    try:
        wait = float(value) if value else default
    except ValueError:
        return default
    return wait if wait >= 0 else default


def write_stall_s() -> float:
    """How long a client may read nothing, with output piling up, before it counts as gone
    (`ACP_AGENT_WRITE_STALL_S`, seconds; default 30)."""
    from protocol.connection import DEFAULT_WRITE_STALL_S

    value = os.environ.get("ACP_AGENT_WRITE_STALL_S")
    try:
        stall = float(value) if value else DEFAULT_WRITE_STALL_S
    except ValueError:
        stall = DEFAULT_WRITE_STALL_S
    return stall if stall > 0 else DEFAULT_WRITE_STALL_S
