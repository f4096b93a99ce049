"""State: sources read values, the ledger keeps the latest per source, changes are minimal."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from acp_agent.capabilities.context import (
    Environment,
    ValueSource,
)
from acp_agent.capabilities.context._state_sources import (
    AdditionalDirectoriesSource,
    BranchIdentitySource,
    DateSource,
    GitSource,
    PlatformSource,
    StateLedger,
    read_all,
    render_state,
    render_state_cleared,
)
from acp_agent.core import StateCleared, StateSet

from .support import ENVIRONMENT, Clock, at


def ledger_of(*facts: StateSet | StateCleared) -> StateLedger:
    ledger = StateLedger()
    for seq, fact in enumerate(facts, start=1):
        ledger.apply(fact, seq)
    return ledger


def test_a_later_value_from_the_same_source_is_current() -> None:
    ledger = ledger_of(
        StateSet("environment/date", "2026-11-02"),
        StateSet("git/branch", "main"),
        StateSet("environment/date", "2026-11-03"),
    )
    assert ledger.current == {"git/branch": "main", "environment/date": "2026-11-03"}


def test_a_cleared_source_has_no_current_value_until_set_again() -> None:
    ledger = ledger_of(StateSet("git/branch", "main"), StateCleared("git/branch"))
    assert ledger.current == {}
    ledger.apply(StateSet("git/branch", "fix"), 3)
    assert ledger.current == {"git/branch": "fix"}


def test_only_changed_values_become_facts() -> None:
    ledger = ledger_of(StateSet("environment/date", "2026-11-02"), StateSet("git/branch", "main"))
    changes = ledger.changes(
        {"environment/date": "2026-11-02", "git/branch": None, "environment/os": "Linux"}
    )
    assert changes == [StateCleared("git/branch"), StateSet("environment/os", "Linux")]
    assert ledger_of().changes({"git/branch": None}) == []


def test_the_restatement_lists_current_values_in_the_order_they_were_last_set() -> None:
    ledger = ledger_of(
        StateSet("environment/date", "2026-11-02"),
        StateSet("git/branch", "main"),
        StateSet("environment/date", "2026-11-03"),
    )
    assert ledger.restatement() == [
        '<state source="git/branch">main</state>',
        '<state source="environment/date">2026-11-03</state>',
    ]


def test_state_blocks_escape_their_value() -> None:
    assert render_state("session/commands", "a<b & c") == (
        '<state source="session/commands">a&lt;b &amp; c</state>'
    )
    assert render_state_cleared("git/branch") == '<state source="git/branch" cleared="true"/>'


async def test_the_date_is_the_injected_clock_s_date_in_the_person_s_zone() -> None:
    clock = Clock(at("2026-11-02T23:59:59"))
    assert await DateSource(clock).read() == {"environment/date": "2026-11-02"}
    clock.advance(seconds=1)
    assert await DateSource(clock).read() == {"environment/date": "2026-11-03"}


async def test_platform_and_identity_sources_read_what_they_are_given() -> None:
    values = await read_all(
        [
            PlatformSource(ENVIRONMENT),
            BranchIdentitySource("main", "br_1"),
            ValueSource("session/commands", lambda: "/compact, /init"),
        ]
    )
    assert values == {
        "environment/os": "Linux 6.8 (x86_64)",
        "environment/shell": "/bin/bash",
        "branch/identity": "main",
        "session/commands": "/compact, /init",
    }
    child = BranchIdentitySource("read-tests", "br_2", parent="br_1", cut_seq=97)
    assert await child.read() == {"branch/identity": "read-tests: branch of br_1 from #97"}


async def test_the_other_roots_are_one_a_line_read_anew_and_cleared_when_none_are_left() -> None:
    roots = [Path("/work/lib"), Path("/work/docs")]
    source = AdditionalDirectoriesSource(lambda: roots)
    name = "environment/additional_directories"
    assert await source.read() == {name: "/work/lib\n/work/docs"}
    ledger = ledger_of(StateSet(name, "/work/lib\n/work/docs"))
    roots = [Path("/work/lib")]  # a resume gave the session fewer roots
    assert ledger.changes(await source.read()) == [StateSet(name, "/work/lib")]
    roots = []
    assert await source.read() == {name: None}
    assert ledger.changes(await source.read()) == [StateCleared(name)]
    # A session that never had other roots records nothing.
    assert StateLedger().changes(await source.read()) == []


async def test_a_failing_source_is_skipped_and_the_others_are_read() -> None:
    def broken() -> str:
        raise OSError("no such thing")

    values = await read_all(
        [ValueSource("session/skills", broken), DateSource(Clock(at("2026-11-02T10:00:00")))]
    )
    assert values == {"environment/date": "2026-11-02"}


def test_environment_detect_reads_the_mapping_it_is_given() -> None:
    environment = Environment.detect({"SHELL": "/usr/bin/fish"})
    assert environment.shell == "/usr/bin/fish"
    assert environment.variables == {"SHELL": "/usr/bin/fish"}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q", "-b", "trunk")
    return tmp_path


async def test_git_state_is_the_branch_and_whether_the_tree_is_clean(repository: Path) -> None:
    source = GitSource(str(repository), ENVIRONMENT)
    assert await source.read() == {"git/branch": "trunk", "git/status": "clean"}
    (repository / "new.txt").write_text("x")
    assert await source.read() == {"git/branch": "trunk", "git/status": "uncommitted changes"}


async def test_outside_a_repository_git_state_is_cleared(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    environment = Environment(
        "Linux", None, {**ENVIRONMENT.variables, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    )
    assert await GitSource(str(plain), environment).read() == {
        "git/branch": None,
        "git/status": None,
    }
