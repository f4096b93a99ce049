"""The flags of a front end that hosts the runtime, each with its environment twin.

The stdio agent, the app server and the LSP front end add them to their command
lines (`acp_agent.runtime_setup` reads them). Standard library only: a command
line is parsed before anything heavy loads, and `acp-agent --connect` (the bridge)
never loads more than this.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import acp_agent

__all__ = ("add_runtime_arguments",)


def add_runtime_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of the hosted runtime (each flag wins over its environment twin)."""
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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value
