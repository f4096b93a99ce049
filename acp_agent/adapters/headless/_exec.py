"""`acp-agent exec`: one prompt, run headless, the answer on stdout.

    acp-agent exec [--cwd DIR] [--add-dir DIR ...] [--model ID] [--mode ID]
                   [--approve never|edits|all] [--resume ID | --continue]
                   [--max-turn-requests N] [--json] [--home DIR] [--script FILE]
                   [--connect] PROMPT

PROMPT `-` reads the prompt from stdin. This module parses the command line and
starts the agent child process at once, before it loads what talks to it (`_exec_run`:
asyncio, the wire types, the client's engine, ~120 ms): the agent starts up on the other
core meanwhile, so a script waits for the slower of the two, not for both.

Exit status: 0 when the turn ended (`end_turn`, `max_tokens`, `max_turn_requests`),
1 on an agent or provider failure (or a `refusal`), 2 on a usage error, 3 when a
permission the turn needed was refused, 4 when the session is open in another
process, 130 on Ctrl-C once the turn was cancelled, 141 (quietly) when stdout's reader
went away (the turn is cancelled, or never starts, as a SIGPIPE would have it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, Final

from acp_agent.adapters.headless._launch import launch_agent, run_attached
from acp_agent.adapters.headless._report import Reporter

__all__ = (
    "APPROVALS",
    "EXIT_FAILED",
    "EXIT_HELD",
    "EXIT_INTERRUPTED",
    "EXIT_READER_GONE",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "PERMISSION_MODES",
    "STORE_HELP",
    "UsageError",
    "agent_args",
    "main",
    "parser",
)

EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_REFUSED: Final = 3
EXIT_HELD: Final = 4
EXIT_INTERRUPTED: Final = 130
#: Whoever read stdout went away (`| head -1`): 128 + SIGPIPE, as a shell reports a tool
#: that signal ended; the run ends quietly.
EXIT_READER_GONE: Final = 141

#: The permission modes `--mode` takes (the agent's: a test keeps them the same).
PERMISSION_MODES: Final = ("sandboxed", "ask", "accept-edits", "plan", "bypass")

#: What `--approve` takes (`_policy.Approve`'s values: a test keeps them the same; the
#: policy loads with the run, after the agent has started).
APPROVALS: Final = ("never", "edits", "all")


class UsageError(Exception):
    """What the person asked cannot be run as asked (exit status 2)."""


#: The help of `--store`, the same for every headless command.
STORE_HELP = (
    "the session store, as for acp-agent: postgresql://user@host/dbname or sqlite:PATH "
    "(env ACP_AGENT_STORE)"
)


def parser() -> argparse.ArgumentParser:
    """The `exec` command line."""
    parser = argparse.ArgumentParser(
        prog="acp-agent exec",
        description="Run one prompt headless and print the agent's final answer.",
    )
    parser.add_argument("prompt", metavar="PROMPT", help="the prompt; - reads it from stdin")
    parser.add_argument("--cwd", type=Path, metavar="DIR", help="the workspace (default: .)")
    parser.add_argument(
        "--add-dir",
        dest="add_dirs",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="another workspace root (repeatable)",
    )
    parser.add_argument("--model", metavar="ID", help="the model, e.g. anthropic/claude-sonnet-4-5")
    parser.add_argument(
        "--mode",
        choices=PERMISSION_MODES,
        metavar="ID",
        help="the permission mode: sandboxed (the default: edits run, commands run in the "
        "sandbox; leaving it and the network are asked), ask (ask before edits, commands "
        "and the network), accept-edits (edits run; the rest is asked), plan (only reads "
        "run), bypass (everything runs, commands outside the sandbox; outside the roots is "
        "still asked)",
    )
    parser.add_argument(
        "--approve",
        choices=APPROVALS,
        default="never",
        help="what runs when the agent would ask: never (default), edits, all "
        "(inside the roots; outside them is always refused)",
    )
    resume = parser.add_mutually_exclusive_group()
    resume.add_argument("--resume", metavar="ID", help="continue session ID")
    resume.add_argument(
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue the most recent session in the workspace",
    )
    parser.add_argument(
        "--max-turn-requests",
        type=int,
        metavar="N",
        help="model requests the turn may make before it stops with max_turn_requests "
        "(as for acp-agent; default 50)",
    )
    parser.add_argument(
        "--json", action="store_true", help="JSON lines on stdout (see docs/headless.md)"
    )
    parser.add_argument("--home", type=Path, metavar="DIR", help="as for acp-agent")
    parser.add_argument("--store", metavar="URL", help=STORE_HELP)
    parser.add_argument("--script", type=Path, metavar="FILE", help="as for acp-agent")
    parser.add_argument(
        "--connect",
        action="store_true",
        help="run on the app server (acp-agent server) through a bridge, as "
        "`acp-agent --connect`: the runtime is already warm, and the session is the "
        "server's, shared with its clients (also [server] connect = true)",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """Run `exec` with `argv` (after the command name); returns the exit status."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help is 0, a bad line 2
        return int(exc.code or 0)
    reporter = Reporter(json_lines=args.json)
    try:
        prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
        if not prompt.strip():
            raise UsageError("the prompt is empty")
        roots = _roots(args.cwd, args.add_dirs)
        if args.max_turn_requests is not None and args.max_turn_requests < 1:
            raise UsageError("--max-turn-requests must be at least 1")
        _refuse_server_settings(args)
    except UsageError as exc:
        reporter.warn(str(exc))
        return EXIT_USAGE
    # The agent starts now, beside the imports below, on the other core.
    try:
        process = launch_agent(agent_args(args))
    except OSError as exc:
        reporter.warn(f"could not start the agent: {exc}")
        return EXIT_FAILED

    def run(process: subprocess.Popen[bytes]) -> Coroutine[Any, Any, int]:
        from acp_agent.adapters.headless._exec_run import ExecRun

        return ExecRun(args, prompt, roots, reporter, process).run()

    try:
        return run_attached(process, run)
    except KeyboardInterrupt:  # before the turn began: nothing to cancel yet
        reporter.warn("interrupted")
        return EXIT_INTERRUPTED


def agent_args(args: argparse.Namespace) -> list[str]:
    """The `acp-agent` flags a headless command passes on to its agent."""
    passed = []
    if args.home is not None:
        passed += ["--home", str(args.home)]
    if getattr(args, "store", None):
        passed += ["--store", args.store]
    if getattr(args, "script", None) is not None:
        passed += ["--script", str(args.script)]
    if getattr(args, "max_turn_requests", None) is not None:
        passed += ["--max-turn-requests", str(args.max_turn_requests)]
    if getattr(args, "connect", False):
        passed.append("--connect")
    return passed


def _refuse_server_settings(args: argparse.Namespace) -> None:
    """With `--connect` the server's runtime runs the turn with its own settings, so a
    flag that sets what the runtime does would be ignored without a word: refused."""
    if not args.connect:
        return
    for flag, given in (
        ("--script", args.script is not None),
        ("--max-turn-requests", args.max_turn_requests is not None),
    ):
        if given:
            raise UsageError(
                f"{flag} does not apply with --connect: the server's runtime runs the "
                "turn with the server's settings (start the server with it instead)"
            )


def _roots(cwd: Path | None, add_dirs: Sequence[Path]) -> list[Path]:
    roots = []
    for given in (cwd or Path.cwd(), *add_dirs):
        path = Path(os.path.abspath(given))
        if not path.is_dir():
            raise UsageError(f"not a directory: {given}")
        roots.append(path.resolve())
    return roots
