"""`acp-agent check`: point our client side at any ACP agent and see which rules it keeps.

    acp-agent check [--json] [--only RULE ...] [--strict] [--prompt TEXT] [--timeout S]
                    [--quiet S] [--deadline S] -- AGENT COMMAND ...

Prints one row per rule: its id, level and verdict (pass, fail, inconclusive, not
applicable), its evidence on indented lines below; `--json` prints one JSON object
per rule instead. Exit status 1 when a MUST rule fails (with `--strict`, a SHOULD
rule too), 2 on a usage error, 0 otherwise. Rules that need a model turn are
inconclusive, never failed, for an agent that needs a login or has no model.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from collections.abc import Sequence

from acp_agent.adapters.check._report import report
from acp_agent.adapters.check._rules import RULES, Finding, Level, Verdict
from acp_agent.adapters.check._runs import (
    DEFAULT_DEADLINE_S,
    DEFAULT_QUIET_S,
    DEFAULT_TIMEOUT_S,
    Checker,
)
from acp_agent.adapters.check._steps import DEFAULT_PROMPT

__all__ = ("exit_status", "main", "parser")


def parser() -> argparse.ArgumentParser:
    """The `check` command line."""
    parser = argparse.ArgumentParser(
        prog="acp-agent check",
        description="Check an ACP agent against the protocol's rules, with evidence.",
        epilog="Rules: " + ", ".join(f"{r.id} ({r.level})" for r in RULES),
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per rule")
    parser.add_argument(
        "--protocol",
        type=int,
        choices=(1, 2),
        default=1,
        help="the ACP version to hold the agent to (default 1; 2: the v2 draft's rules, "
        "as far as they can be read)",
    )
    parser.add_argument("--only", nargs="+", default=[], metavar="RULE", help="check only these")
    parser.add_argument("--strict", action="store_true", help="a failed SHOULD rule fails too")
    parser.add_argument(
        "--prompt",
        default=DEFAULT_PROMPT,
        help=f"the prompt rules send (default: {DEFAULT_PROMPT!r})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"seconds to wait for an answer (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--quiet",
        type=float,
        default=DEFAULT_QUIET_S,
        metavar="S",
        help=f"seconds to watch for updates after a response (default {DEFAULT_QUIET_S:g})",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=DEFAULT_DEADLINE_S,
        metavar="S",
        help=f"seconds the whole check may take (default {DEFAULT_DEADLINE_S:g}); the rules "
        "it does not reach are inconclusive, and the report says so",
    )
    parser.add_argument(
        "agent",
        nargs=argparse.REMAINDER,
        metavar="-- AGENT COMMAND",
        help="the agent to check: its command line, after --",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """Run `check` with `argv` (after the command name); returns the exit status."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    command = args.agent[1:] if args.agent[:1] == ["--"] else args.agent
    known = {r.id for r in RULES}
    unknown = [name for name in args.only if name not in known]
    bounds = (args.timeout, args.quiet, args.deadline)
    why = (
        f"unknown rule(s): {', '.join(unknown)}"
        if unknown
        else "--timeout, --quiet and --deadline must be positive"
        if min(bounds) <= 0
        else "name the agent command after --"
        if not command
        else f"no such command: {command[0]}"
        if shutil.which(command[0]) is None
        else ""
    )
    if why:
        print(f"acp-agent check: {why}", file=sys.stderr)
        return 2
    if args.protocol == 2:
        from acp_agent.adapters.check._v2 import check_v2

        findings = asyncio.run(
            check_v2(command, prompt=args.prompt, timeout_s=args.timeout, quiet_s=args.quiet)
        )
        print(report(findings, as_json=args.json))
        return exit_status(findings, strict=args.strict)
    checker = Checker(
        command,
        only=args.only,
        prompt=args.prompt,
        timeout_s=args.timeout,
        quiet_s=args.quiet,
        deadline_s=args.deadline,
    )
    findings = asyncio.run(checker.run())
    print(report(findings, as_json=args.json, stopped=checker.stopped))
    return exit_status(findings, strict=args.strict)


def exit_status(findings: Sequence[Finding], *, strict: bool) -> int:
    """1 when a MUST rule failed (with `strict`, any rule), else 0."""
    failed = {f.rule.level for f in findings if f.verdict is Verdict.FAIL}
    return 1 if Level.MUST in failed or (strict and failed) else 0
