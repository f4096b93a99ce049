"""The catalogue of `check`'s rules: what each cites can be opened, and its level is the
one the text it cites gives; the report of any findings fits 100 columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

from acp_agent.adapters.check._report import WIDTH, report
from acp_agent.adapters.check._rules import (
    JSON_RPC,
    RULES,
    SPEC_PAGES,
    SPEC_SITE,
    Finding,
    Level,
    Verdict,
)

ROOT = Path(__file__).resolve().parents[2]
#: The v1 pages of the specification's site navigation (its docs.json), at the revision
#: the schema in protocol/schema comes from.
SITE_PAGES = {
    "overview", "initialization", "authentication", "session-setup", "session-list",
    "session-delete", "prompt-turn", "content", "tool-calls", "elicitation", "file-system",
    "cancellation", "terminals", "agent-plan", "session-modes", "session-config-options",
    "slash-commands", "extensibility", "transports", "schema",
}  # fmt: skip


def test_every_citation_is_a_page_of_the_spec_site_or_a_file_in_this_repository() -> None:
    assert set(SPEC_PAGES) == SITE_PAGES
    for rule in RULES:
        assert rule.cites, rule.id
        for cite in rule.cites:
            url = cite.url
            if url.startswith(SPEC_SITE):
                assert url.removeprefix(SPEC_SITE) in SITE_PAGES, (rule.id, url)
            elif url.startswith("https://"):
                assert url == JSON_RPC, (rule.id, url)
            else:
                assert (ROOT / url).is_file(), (rule.id, url)
            assert cite.quote, rule.id
        assert "research/" not in rule.source


def test_a_must_rule_cites_a_must_and_a_should_rule_that_cites_one_says_why() -> None:
    for rule in RULES:
        musts = [c for c in rule.cites if re.search(r"\bMUST\b", c.quote)]
        if rule.level is Level.MUST:
            assert musts, rule.id
        elif musts:
            assert rule.note, rule.id


def test_rule_ids_are_unique_and_kit_references_name_requirements() -> None:
    assert len({r.id for r in RULES}) == len(RULES)
    for rule in RULES:
        if rule.kit:
            assert rule.kit.startswith("ACP-"), rule.id


def test_the_table_fits_100_columns_whatever_the_evidence() -> None:
    long = "x" * 500
    findings = [
        Finding(rule, verdict, (long, "short", json.dumps({"a": long})))
        for rule, verdict in zip(RULES, [Verdict.FAIL, Verdict.PASS] * len(RULES), strict=False)
    ]
    text = report(findings, stopped="the --deadline of 300 s ran out during " + long)
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert text.splitlines()[1].startswith(RULES[0].id)
    assert text.splitlines()[2].startswith("    x")


def test_json_lines_keep_their_shape() -> None:
    findings = [Finding(RULES[0], Verdict.FAIL, ("first", "second"))]
    line = json.loads(report(findings, as_json=True))
    assert line == {
        "version": 1,
        "rule": RULES[0].id,
        "level": "MUST",
        "verdict": "fail",
        "evidence": "first\nsecond",
        "requires": RULES[0].text,
        "source": RULES[0].source,
    }


def test_the_documented_rules_table_is_the_catalogue() -> None:
    # Wherever the reference lives (the README, or docs/ once it moves there).
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    rows = [
        line
        for page in pages
        if page.is_file()
        for line in page.read_text().splitlines()
        if re.match(r"\| `[a-z0-9-]+` \| (MUST|SHOULD) \|", line)
    ]
    documented = [tuple(cell.strip(" `") for cell in row.split("|")[1:4]) for row in rows]
    assert documented == [(r.id, str(r.level), r.text) for r in RULES]
    assert not any("research/" in row for row in rows)
