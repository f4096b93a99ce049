"""`acp-agent sessions list|show|export|delete`: the stored sessions, from a terminal.

    acp-agent sessions [--home DIR] [--store URL] list [--cwd DIR] [--json]
    acp-agent sessions show ID
    acp-agent sessions export ID [--format json|markdown] [--output FILE]
    acp-agent sessions delete ID

Everything goes through an agent child process over ACP (`session/list`,
`session/load`, `session/delete`), as an editor would. `show` and `export` load the
session, so one open in another acp-agent process is refused (exit status 4, naming
the process), as `delete` is; an unknown id is exit status 1.

The command starts its agent as soon as it has read its options, and loads what
talks to it (`_sessions_run`) while the agent starts up, as `exec` does (`_launch`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from acp_agent.adapters.headless._exec import EXIT_FAILED, STORE_HELP, agent_args
from acp_agent.adapters.headless._launch import launch_agent, run_attached

__all__ = ("main", "parser")


def parser() -> argparse.ArgumentParser:
    """The `sessions` command line."""
    parser = argparse.ArgumentParser(
        prog="acp-agent sessions", description="List, show, export or delete stored sessions."
    )
    parser.add_argument("--home", type=Path, metavar="DIR", help="as for acp-agent")
    parser.add_argument("--store", metavar="URL", help=STORE_HELP)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    session_id = "the session's id, as `acp-agent sessions list` shows it"
    listing = commands.add_parser(
        "list",
        help="the sessions, most recent first",
        description="List the stored sessions, most recent first: id, last update, title, "
        "workspace.",
    )
    listing.add_argument("--cwd", type=Path, metavar="DIR", help="only those of workspace DIR")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    show = commands.add_parser(
        "show",
        help="a session's transcript",
        description="Print a stored session as a readable transcript.",
    )
    show.add_argument("session_id", metavar="ID", help=session_id)
    export = commands.add_parser(
        "export",
        help="a session's updates or transcript",
        description="Write a stored session out: its updates as JSON, or a transcript.",
    )
    export.add_argument("session_id", metavar="ID", help=session_id)
    export.add_argument(
        "--format",
        choices=("json", "markdown"),
        default="json",
        help="json: every update as the agent sends it on a load (default); markdown: "
        "the readable transcript",
    )
    export.add_argument("--output", type=Path, metavar="FILE", help="write to FILE, not stdout")
    delete = commands.add_parser(
        "delete",
        help="delete a session for good",
        description="Delete a stored session and everything kept for it, for good.",
    )
    delete.add_argument("session_id", metavar="ID", help=session_id)
    return parser


def main(argv: Sequence[str]) -> int:
    """Run `sessions` with `argv` (after the command name); returns the exit status."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        process = launch_agent(agent_args(args))
    except OSError as exc:
        print(f"acp-agent: could not start the agent: {exc}", file=sys.stderr)
        return EXIT_FAILED

    def run(process: subprocess.Popen[bytes]) -> Coroutine[Any, Any, int]:
        from acp_agent.adapters.headless._sessions_run import run as run_command

        return run_command(args, process)

    return run_attached(process, run)
