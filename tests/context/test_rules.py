"""Rules: AGENTS.md files on disk, scoped to their directory; set, replace, revoke by digest."""

from __future__ import annotations

from pathlib import Path

from acp_agent.capabilities.context import (
    scan_rule_files,
    scan_user_rules,
    scan_workspace_rules,
)
from acp_agent.capabilities.context._rules import (
    MAX_RULE_CHARS,
    RuleFile,
    RuleLedger,
    RuleRecord,
    render_rule,
    scan_root_rules,
)
from acp_agent.core import Payload, RuleExpired, RuleReplaced, RuleRevoked, RuleSet


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def ledger_of(*facts: Payload) -> RuleLedger:
    ledger = RuleLedger()
    for seq, fact in enumerate(facts, start=1):
        ledger.apply(fact, seq)
    return ledger


def test_agents_files_are_found_root_first_each_scoped_to_its_directory(tmp_path: Path) -> None:
    write(tmp_path / "src" / "api" / "AGENTS.md", "Keep handlers async.")
    write(tmp_path / "AGENTS.md", "Run the tests.\n")
    write(tmp_path / "docs" / "AGENTS.md", "Write in British English.")
    assert scan_workspace_rules(tmp_path) == [
        RuleFile("workspace/AGENTS.md", ".", "Run the tests."),
        RuleFile("workspace/docs/AGENTS.md", "docs", "Write in British English."),
        RuleFile("workspace/src/api/AGENTS.md", "src/api", "Keep handlers async."),
    ]


def test_hidden_dependency_and_blank_rule_files_are_ignored(tmp_path: Path) -> None:
    write(tmp_path / ".git" / "AGENTS.md", "no")
    write(tmp_path / "node_modules" / "left-pad" / "AGENTS.md", "no")
    write(tmp_path / "empty" / "AGENTS.md", "  \n")
    assert scan_workspace_rules(tmp_path) == []


def test_a_very_long_rule_file_is_cut_with_a_note(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "x" * (MAX_RULE_CHARS + 10))
    (rule,) = scan_workspace_rules(tmp_path)
    assert rule.text.startswith("x" * MAX_RULE_CHARS)
    assert rule.text.endswith(f"[cut: the file is longer than {MAX_RULE_CHARS} chars]")


def test_user_rules_come_from_the_config_dir_apply_everywhere_and_come_first(
    tmp_path: Path,
) -> None:
    config, workspace = tmp_path / "config", tmp_path / "work"
    write(config / "AGENTS.md", "Answer briefly.")
    write(config / "rules" / "style.md", "No emoji.")
    write(config / "rules" / "notes.txt", "not a rule")
    write(workspace / "AGENTS.md", "Run the tests.")
    assert scan_user_rules(config) == [
        RuleFile("user/AGENTS.md", "*", "Answer briefly."),
        RuleFile("user/rules/style.md", "*", "No emoji."),
    ]
    assert [rule.rule_id for rule in scan_rule_files(workspace, config)] == [
        "user/AGENTS.md",
        "user/rules/style.md",
        "workspace/AGENTS.md",
    ]


def test_the_agents_files_of_another_root_are_labelled_with_it_and_scoped_absolutely(
    tmp_path: Path,
) -> None:
    lib = tmp_path / "lib"
    write(lib / "AGENTS.md", "Keep the public API stable.")
    write(lib / "io" / "AGENTS.md", "No blocking reads.")
    write(lib / ".cache" / "AGENTS.md", "no")
    assert scan_root_rules(lib) == [
        RuleFile(f"root:{lib}/AGENTS.md", str(lib), "Keep the public API stable."),
        RuleFile(f"root:{lib}/io/AGENTS.md", str(lib / "io"), "No blocking reads."),
    ]


def test_every_root_is_scanned_after_the_cwd_and_a_file_under_two_counts_once(
    tmp_path: Path,
) -> None:
    root = tmp_path.resolve()  # roots come resolved, as the session's controls give them
    work, lib, outer = root / "outer" / "work", root / "lib", root / "outer"
    write(work / "AGENTS.md", "Run the tests.")
    write(work / "vendor-lib" / "AGENTS.md", "Vendored: do not edit.")
    write(lib / "AGENTS.md", "Keep the public API stable.")
    write(outer / "AGENTS.md", "Monorepo rules.")
    # `outer` holds the cwd, and `work/vendor-lib` is inside it: each file once, first root.
    found = scan_rule_files(work, None, [lib, outer, work / "vendor-lib"])
    assert [(rule.rule_id, rule.scope) for rule in found] == [
        ("workspace/AGENTS.md", "."),
        ("workspace/vendor-lib/AGENTS.md", "vendor-lib"),
        (f"root:{lib}/AGENTS.md", str(lib)),
        (f"root:{outer}/AGENTS.md", str(outer)),
    ]


def test_a_rule_of_a_root_no_longer_found_is_revoked_saying_why() -> None:
    ledger = ledger_of(RuleSet("root:/work/lib/AGENTS.md", "/work/lib", "Keep the API."))
    assert ledger.changes([]) == [
        RuleRevoked(
            "root:/work/lib/AGENTS.md",
            "/work/lib",
            "its file was deleted, or its directory is no longer a root of the workspace",
        )
    ]


def test_a_new_file_is_set_an_edited_one_replaced_and_a_deleted_one_revoked() -> None:
    ledger = ledger_of(
        RuleSet("workspace/AGENTS.md", ".", "Run the tests."),
        RuleSet("workspace/api/AGENTS.md", "api", "Keep handlers async."),
    )
    found = [
        RuleFile("workspace/AGENTS.md", ".", "Run `make test`."),
        RuleFile("workspace/web/AGENTS.md", "web", "Use tabs."),
    ]
    assert ledger.changes(found) == [
        RuleReplaced("workspace/AGENTS.md", ".", "Run `make test`."),
        RuleSet("workspace/web/AGENTS.md", "web", "Use tabs."),
        RuleRevoked("workspace/api/AGENTS.md", "api", "its file was deleted"),
    ]


def test_unchanged_files_and_command_rules_produce_no_change() -> None:
    ledger = ledger_of(
        RuleSet("workspace/AGENTS.md", ".", "Run the tests."),
        RuleSet("command/plan", "*", "Only plan."),
        RuleSet("user/AGENTS.md", "*", "Be brief."),
        RuleRevoked("user/AGENTS.md", "*", "its file was deleted"),
    )
    assert ledger.changes([RuleFile("workspace/AGENTS.md", ".", "Run the tests.")]) == []


def test_a_file_that_comes_back_after_revocation_is_set_again() -> None:
    ledger = ledger_of(
        RuleSet("workspace/AGENTS.md", ".", "Run the tests."),
        RuleRevoked("workspace/AGENTS.md", ".", "its file was deleted"),
    )
    found = [RuleFile("workspace/AGENTS.md", ".", "Run the tests.")]
    assert ledger.changes(found) == [RuleSet("workspace/AGENTS.md", ".", "Run the tests.")]


def test_only_rules_that_hold_are_restated_each_as_last_given() -> None:
    ledger = ledger_of(
        RuleSet("workspace/AGENTS.md", ".", "Run the tests."),
        RuleSet("workspace/api/AGENTS.md", "api", "Keep handlers async."),
        RuleSet("command/plan", "*", "Only plan."),
        RuleReplaced("workspace/AGENTS.md", ".", "Run `make test`."),
        RuleRevoked("workspace/api/AGENTS.md", "api", "its file was deleted"),
        RuleExpired("command/plan", "*"),
    )
    assert ledger.restatement() == [
        '<rule op="replace" source="workspace/AGENTS.md" scope=".">Run `make test`.</rule>'
    ]


def test_a_rule_block_names_its_op_source_and_scope_and_escapes_its_text() -> None:
    multi = RuleRecord("workspace/src/AGENTS.md", "set", "src", "Use <T>.\nNo & in names.", 3)
    assert render_rule(multi) == (
        '<rule op="set" source="workspace/src/AGENTS.md" scope="src">\n'
        "Use &lt;T&gt;.\nNo &amp; in names.\n</rule>"
    )
    expired = RuleRecord("command/plan", "expired", "*", "", 4)
    assert render_rule(expired) == '<rule op="expired" source="command/plan" scope="*"/>'
