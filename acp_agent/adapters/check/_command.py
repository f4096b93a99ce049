"""`acp-agent check`: point our client side at any ACP agent and see which rules it keeps.

    acp-agent check [--json] [--only RULE ...] [--strict] [--prompt TEXT] [--timeout S]
                    [--quiet S] -- AGENT COMMAND ...

Prints one row per rule: its id, level, verdict (pass, fail, inconclusive, not
applicable) and evidence; `--json` prints one JSON object per rule instead. Exit
status 1 when a MUST rule fails (with `--strict`, a SHOULD rule too), 2 on a usage
error, 0 otherwise. Rules that need a model turn are inconclusive, never failed,
for an agent that needs a login or has no model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import sys
from collections.abc import Sequence

from acp_agent.adapters.check._rules import RULES, Finding, Level, Verdict
from acp_agent.adapters.check._runs import DEFAULT_PROMPT, DEFAULT_QUIET_S, Checker

__all__ = ("main", "parser", "report")


def parser() -> argparse.ArgumentParser:
    """The `check` command line."""
    parser = argparse.ArgumentParser(
        prog="acp-agent check",
        description="Check an ACP agent against the protocol's rules, with evidence.",
        epilog="Rules: " + ", ".join(f"{r.id} ({r.level})" for r in RULES),
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per rule")
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
        default=30.0,
        metavar="S",
        help="seconds to wait for an answer (default 30)",
    )
    parser.add_argument(
        "--quiet",
        type=float,
        default=DEFAULT_QUIET_S,
        metavar="S",
        help="seconds to watch for updates after a response (default 1)",
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
    if not command or unknown or args.timeout <= 0 or args.quiet <= 0:
        why = (
            f"unknown rule(s): {', '.join(unknown)}"
            if unknown
            else "--timeout and --quiet must be positive"
            if args.timeout <= 0 or args.quiet <= 0
            else "name the agent command after --"
        )
        print(f"acp-agent check: {why}", file=sys.stderr)
        return 2
    if shutil.which(command[0]) is None:
        print(f"acp-agent check: no such command: {command[0]}", file=sys.stderr)
        return 2
    # Our raw probes' answers reach the connection too, which warns of ids it did not
    # send; they are expected here.
    logging.getLogger("protocol").setLevel(logging.ERROR)
    checker = Checker(
        command, only=args.only, prompt=args.prompt, timeout_s=args.timeout, quiet_s=args.quiet
    )
    findings = asyncio.run(checker.run())
    print(report(findings, as_json=args.json))
    failed = {f.rule.level for f in findings if f.verdict is Verdict.FAIL}
    return 1 if Level.MUST in failed or (args.strict and failed) else 0


def report(findings: Sequence[Finding], *, as_json: bool = False) -> str:
    """The findings as a table (or JSON lines)."""
    if as_json:
        return "\n".join(
            json.dumps(
                {
                    "version": 1,
                    "rule": f.rule.id,
                    "level": str(f.rule.level),
                    "verdict": str(f.verdict),
                    "evidence": f.evidence,
                    "requires": f.rule.text,
                    "source": f.rule.source,
                },
                ensure_ascii=False,
            )
            for f in findings
        )
    width = max((len(f.rule.id) for f in findings), default=4)
    rows = [f"{'rule':<{width}}  level   verdict         evidence"]
    for f in findings:
        rows.append(f"{f.rule.id:<{width}}  {f.rule.level:<6}  {f.verdict:<14}  {f.evidence}")
    counts = {v: sum(1 for f in findings if f.verdict is v) for v in Verdict}
    rows.append("")
    rows.append(", ".join(f"{n} {v}" for v, n in counts.items() if n))
    return "\n".join(rows)
