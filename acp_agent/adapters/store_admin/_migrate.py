"""`acp-agent store migrate`: copy a person's sessions into another store, and check the copy.

    acp-agent store migrate [--home DIR] [--from URL] --to URL [--json]

`--from` defaults to the SQLite file in the data folder (of `--home` or
`ACP_AGENT_HOME`); `--to` is typically the team's `postgresql://...`. Every
session (branches, events) and every permission rule is copied
(`acp_agent.store.copy_sessions`), then compared (`verify_copy`: the counts
and every event, decoded, as a load replays them). Run it again at any time:
what is there already is left alone, a copy cut short carries on.

Exit status: 0 when everything was copied and the copy matches; 4 when a
session open in a live acp-agent process was skipped (run it again once that
process is done); 1 when the copy differs or a store failed; 2 on a usage
error. URLs are shown without their credentials.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TextIO

import anyio

from acp_agent.core import SessionRecord, StoreError
from acp_agent.paths import resolve_paths
from acp_agent.store import (
    CopyReport,
    CopyVerification,
    StoreLocation,
    StoreUrlInvalid,
    copy_sessions,
    default_database_path,
    open_store,
    parse_store_url,
    verify_copy,
)

__all__ = ("main", "parser")

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
#: The same status `exec` and `sessions` give a session held by another process.
EXIT_HELD: Final = 4


def parser() -> argparse.ArgumentParser:
    """The `store` command line."""
    parser = argparse.ArgumentParser(
        prog="acp-agent store", description="Look after the session store itself."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    migrate = commands.add_parser(
        "migrate",
        help="copy every session and rule into another store, then check the copy",
        description="Copy every session (its branches and events) and every permission "
        "rule from one store into another, then compare the two. Safe to run again: what "
        "is there already stays, a copy cut short carries on.",
        epilog="Exit status: 0 copied and verified, 4 a session in use was skipped (run "
        "again later), 1 the copy differs or a store failed, 2 a usage error.",
    )
    migrate.add_argument(
        "--home", type=Path, metavar="DIR", help="as for acp-agent (whose SQLite file --from is)"
    )
    migrate.add_argument(
        "--from",
        dest="source",
        metavar="URL",
        help="the store to copy from: sqlite:PATH or postgresql://... (default: the SQLite "
        "file in the data folder)",
    )
    migrate.add_argument(
        "--to",
        dest="target",
        required=True,
        metavar="URL",
        help="the store to copy into: postgresql://user@host/dbname or sqlite:PATH",
    )
    migrate.add_argument("--json", action="store_true", help="the outcome as one JSON object")
    return parser


def main(argv: Sequence[str], *, stdout: TextIO | None = None) -> int:
    """Run `store` with `argv` (after the command name); returns the exit status."""
    out = sys.stdout if stdout is None else stdout
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        source, target = _locations(args)
    except StoreUrlInvalid as exc:
        print(f"acp-agent store: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if source == target:
        print("acp-agent store: --from and --to name the same store", file=sys.stderr)
        return EXIT_USAGE
    if source.kind == "sqlite" and not source.path.is_file():
        print(f"acp-agent store: no store at {source.shown}", file=sys.stderr)
        return EXIT_USAGE
    try:
        report, verified = anyio.run(_migrate, source, target)
    except StoreError as exc:
        print(f"acp-agent store: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        out.write(json.dumps(_as_json(source, target, report, verified)) + "\n")
    else:
        out.write(_as_text(source, target, report, verified))
    if verified.differences:
        return EXIT_FAILED
    return EXIT_HELD if report.held else EXIT_OK


def _locations(args: argparse.Namespace) -> tuple[StoreLocation, StoreLocation]:
    target = parse_store_url(args.target, source="--to")
    if args.source is not None:
        return parse_store_url(args.source, source="--from"), target
    home = args.home if args.home is not None else os.environ.get("ACP_AGENT_HOME") or None
    data_dir = resolve_paths(None if home is None else Path(home)).data_dir
    return StoreLocation("sqlite", str(default_database_path(data_dir)), "--home"), target


async def _migrate(
    source_at: StoreLocation, target_at: StoreLocation
) -> tuple[CopyReport, CopyVerification]:
    source = await open_store(source_at)
    try:
        target = await open_store(target_at)
        try:
            report = await copy_sessions(source, target, on_session=_progress)
            return report, await verify_copy(source, target)
        finally:
            await target.aclose()
    finally:
        await source.aclose()


def _progress(session: SessionRecord, outcome: str) -> None:
    print(f"{outcome:8} {session.session_id}  {session.title or ''}", file=sys.stderr)


def _as_text(
    source: StoreLocation, target: StoreLocation, report: CopyReport, verified: CopyVerification
) -> str:
    lines = [
        f"From {source.shown}",
        f"to   {target.shown}:",
        f"  {len(report.copied)} sessions copied ({report.events} events), "
        f"{len(report.present)} already there",
        f"  {report.rules_copied} permission rules copied, {report.rules_present} already there",
    ]
    lines += [f"  skipped, in use: {held}" for held in report.held]
    if verified.differences:
        lines.append(f"The copy differs in {len(verified.differences)} places:")
        lines += [f"  {difference}" for difference in verified.differences]
    else:
        lines.append(
            f"Verified: {verified.sessions} sessions, {verified.branches} branches, "
            f"{verified.events} events and {verified.rules} rules match."
        )
    return "\n".join(lines) + "\n"


def _as_json(
    source: StoreLocation, target: StoreLocation, report: CopyReport, verified: CopyVerification
) -> dict[str, object]:
    return {
        "from": source.shown,
        "to": target.shown,
        "copied": list(report.copied),
        "present": list(report.present),
        "held": list(report.held),
        "events": report.events,
        "rulesCopied": report.rules_copied,
        "rulesPresent": report.rules_present,
        "verified": {
            "sessions": verified.sessions,
            "branches": verified.branches,
            "events": verified.events,
            "rules": verified.rules,
            "differences": list(verified.differences),
        },
    }
