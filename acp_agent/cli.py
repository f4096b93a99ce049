"""The `acp-agent` command: serve ACP on stdio for the editor that launched us.

    acp-agent [--script FILE] [--log-level LEVEL] [--home DIR] [--unstable]

Each flag has an environment twin (`ACP_AGENT_SCRIPT`, `ACP_AGENT_LOG_LEVEL`,
`ACP_AGENT_HOME`); the flag wins. Heavy imports wait until after argument
parsing: editors and the startup benchmark time spawn → `initialize`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import acp_agent

__all__ = ("main",)

#: Exit status for a bad command line or script (argparse uses 2 too).
_USAGE_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-agent",
        description="A coding agent served over the Agent Client Protocol on stdio.",
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
        "--unstable",
        action="store_true",
        help="opt in to unstable ACP methods and fields",
    )
    parser.add_argument("--version", action="version", version=f"acp-agent {acp_agent.__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Serve ACP on stdin/stdout until stdin ends; returns the exit status."""
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

    from acp_agent.models.scripted import ScriptedModel, ScriptError, load_script

    try:
        script = load_script(args.script) if args.script is not None else None
    except ScriptError as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return _USAGE_ERROR

    from acp_agent.adapters.acp.agent import AcpAgent
    from protocol.connection import AgentConnection

    connection = AgentConnection(unstable=args.unstable)
    AcpAgent(connection, ScriptedModel(script)).register()

    logger = logging.getLogger("acp_agent")
    logger.info("acp-agent %s serving ACP on stdio (pid %d)", acp_agent.__version__, os.getpid())
    connection.start_io(stdin=sys.stdin.buffer, stdout=protocol_stdout)
    logger.info("stdin closed; exiting")
    return 0
