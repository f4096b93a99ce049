"""The findings as a person reads them (a table that fits 100 columns) or as CI reads
them (one JSON object per rule, its shape fixed at `version` 1).

In the table each rule is a row of its id, level and verdict, and its evidence
follows on indented lines; a failed rule also shows what it requires, the text it
enforces and where that is written, and how it goes beyond the conformance kit.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from typing import Final

from acp_agent.adapters.check._rules import Finding, Verdict

__all__ = ("WIDTH", "report")

#: The widest line of the table.
WIDTH: Final = 100
_INDENT: Final = " " * 4


def report(findings: Sequence[Finding], *, as_json: bool = False, stopped: str = "") -> str:
    """The findings as a table (or JSON lines); `stopped` says why a run ended early."""
    if as_json:
        return "\n".join(_json_line(f) for f in findings)
    width = max((len(f.rule.id) for f in findings), default=4)
    rows = [f"{'rule':<{width}}  level   verdict"]
    for f in findings:
        rows.append(f"{f.rule.id:<{width}}  {f.rule.level:<6}  {f.verdict}")
        details = list(f.evidence)
        if f.verdict is Verdict.FAIL:
            details.append(f"requires: {f.rule.text}")
            details.extend(f"per {cite}" for cite in f.rule.cites)
            if f.rule.beyond:
                details.append(f"beyond the conformance kit: {f.rule.beyond}")
        rows.extend(_wrapped(line) for line in details)
    counts = {v: sum(1 for f in findings if f.verdict is v) for v in Verdict}
    rows.append("")
    rows.append(", ".join(f"{n} {v}" for v, n in counts.items() if n))
    if stopped:
        rows.append(_wrapped(f"Stopped early: {stopped}.", indent=""))
    beyond = sum(1 for f in findings if f.rule.beyond)
    if beyond:
        rows.append(
            _wrapped(
                f"{beyond} of these rules check more than the ACP conformance kit does "
                "(each says how in --json's source).",
                indent="",
            )
        )
    return "\n".join(rows)


def _json_line(f: Finding) -> str:
    return json.dumps(
        {
            "version": 1,
            "rule": f.rule.id,
            "level": str(f.rule.level),
            "verdict": str(f.verdict),
            "evidence": "\n".join(f.evidence),
            "requires": f.rule.text,
            "source": f.rule.source,
        },
        ensure_ascii=False,
    )


def _wrapped(line: str, *, indent: str = _INDENT) -> str:
    return "\n".join(
        textwrap.wrap(
            line,
            WIDTH,
            initial_indent=indent,
            subsequent_indent=indent + "  ",
            break_long_words=True,
            break_on_hyphens=False,
        )
        or [indent]
    )
