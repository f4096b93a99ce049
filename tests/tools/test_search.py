"""list, glob, grep: .gitignore'd paths skipped; ripgrep and the Python search agree."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from acp_agent.toolkit import Location, ToolInputError
from acp_agent.tools import GlobTool, GrepTool, ListTool
from acp_agent.tools._walk import glob_regex
from tests.tools.support import Session

pytestmark = pytest.mark.anyio

RIPGREP = shutil.which("rg")
ENGINES = [
    pytest.param(None, id="python"),
    pytest.param(
        RIPGREP,
        id="ripgrep",
        marks=pytest.mark.skipif(RIPGREP is None, reason="ripgrep (rg) is not on PATH"),
    ),
]


@pytest.fixture(params=ENGINES)
def grep(request: pytest.FixtureRequest) -> GrepTool:
    return GrepTool(ripgrep=request.param)


def make_tree(root: Path) -> None:
    """A small project: ignored build output, nested rules, a re-included file, a .git dir."""
    files = {
        ".gitignore": "build/\n*.log\n/top-only.txt\n",
        "top-only.txt": "needle at the top\n",
        "src/app.py": "def needle():\n    return 'needle'\n",
        "src/top-only.txt": "needle deeper\n",
        "src/util/helpers.py": "# no match here\nNEEDLE = 1\n",
        "src/.gitignore": "generated/\n!keep.log\n",
        "src/generated/out.py": "needle generated\n",
        "src/keep.log": "needle kept log\n",
        "src/drop.log": "needle dropped log\n",
        "build/out.js": "needle built\n",
        ".hidden/config.toml": "needle = true\n",
        ".git/config": "needle in git\n",
        "docs/readme.md": "A needle in the docs.\r\nsecond needle line\r\n",
        "data.bin": "needle\x00binary",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())


def shown(result: Any) -> list[str]:
    return [line for line in result.model_text.splitlines() if not line.startswith("[")]


async def test_grep_skips_gitignored_git_and_binary_files(workspace: Path, grep: GrepTool) -> None:
    make_tree(workspace)
    result = await Session([workspace]).run(grep, {"pattern": "needle"})
    assert shown(result) == [
        ".hidden/config.toml:1: needle = true",
        "docs/readme.md:1: A needle in the docs.",
        "docs/readme.md:2: second needle line",
        "src/app.py:1: def needle():",
        "src/app.py:2:     return 'needle'",
        "src/keep.log:1: needle kept log",
        "src/top-only.txt:1: needle deeper",
    ]
    assert result.locations == (
        Location(str(workspace / ".hidden/config.toml"), 1),
        Location(str(workspace / "docs/readme.md"), 1),
        Location(str(workspace / "src/app.py"), 1),
        Location(str(workspace / "src/keep.log"), 1),
        Location(str(workspace / "src/top-only.txt"), 1),
    )


async def test_grep_filters_cases_globs_and_lists_files(workspace: Path, grep: GrepTool) -> None:
    make_tree(workspace)
    session = Session([workspace])
    insensitive = await session.run(
        grep, {"pattern": "needle\\b", "case_insensitive": True, "glob": "*.py"}
    )
    assert shown(insensitive) == [
        "src/app.py:1: def needle():",
        "src/app.py:2:     return 'needle'",
        "src/util/helpers.py:2: NEEDLE = 1",
    ]
    files = await session.run(grep, {"pattern": "needle", "output": "files", "path": "src"})
    assert shown(files) == ["src/app.py", "src/keep.log", "src/top-only.txt"]
    anchored = await session.run(grep, {"pattern": "line$", "path": "docs"})
    assert shown(anchored) == ["No matches for `line$` in `docs`."]


async def test_grep_caps_results_and_says_there_are_more(workspace: Path, grep: GrepTool) -> None:
    (workspace / "many.txt").write_text("hit\n" * 50)
    result = await Session([workspace]).run(grep, {"pattern": "hit", "max_results": 10})
    assert len(shown(result)) == 10
    assert shown(result)[-1] == "many.txt:10: hit"
    assert "[Only the first 10 matches are shown; there are more." in result.model_text
    assert result.raw_output["truncated"] is True


async def test_grep_does_not_follow_a_symlink_out_of_the_workspace(
    workspace: Path, outside: Path, grep: GrepTool
) -> None:
    (outside / "secret.txt").write_text("needle outside\n")
    (workspace / "escape").symlink_to(outside, target_is_directory=True)
    (workspace / "file-link.txt").symlink_to(outside / "secret.txt")
    (workspace / "inside.txt").write_text("needle inside\n")
    result = await Session([workspace]).run(grep, {"pattern": "needle"})
    assert shown(result) == ["inside.txt:1: needle inside"]


async def test_grep_searches_an_ignored_directory_it_is_pointed_at(
    workspace: Path, grep: GrepTool
) -> None:
    make_tree(workspace)
    result = await Session([workspace]).run(grep, {"pattern": "needle", "path": "build"})
    assert shown(result) == ["build/out.js:1: needle built"]


async def test_grep_reports_a_bad_regex_as_an_input_error(workspace: Path, grep: GrepTool) -> None:
    (workspace / "a.txt").write_text("x\n")
    with pytest.raises(ToolInputError):
        await Session([workspace]).run(grep, {"pattern": "(unclosed"})


@pytest.mark.skipif(RIPGREP is None, reason="ripgrep (rg) is not on PATH")
@pytest.mark.parametrize(
    "arguments",
    [
        {"pattern": "needle"},
        {"pattern": "NEEDLE", "case_insensitive": True},
        {"pattern": "needle", "output": "files"},
        {"pattern": "^[a-z]+ =", "glob": "*.{py,toml}"},
        {"pattern": "needle", "glob": "src/**/*.py"},
        {"pattern": "needle", "path": "src", "max_results": 2},
        {"pattern": "n[e]+dle\\s\\w+", "path": "docs/readme.md"},
    ],
)
async def test_ripgrep_and_the_python_search_give_the_same_results(
    workspace: Path, arguments: dict[str, Any]
) -> None:
    make_tree(workspace)
    session = Session([workspace])
    fast = await session.run(GrepTool(ripgrep=RIPGREP), arguments)
    fallback = await session.run(GrepTool(ripgrep=None), arguments)
    assert fast.raw_output["engine"] == "ripgrep"
    assert fallback.raw_output["engine"] == "python"
    assert fast.model_text == fallback.model_text
    assert fast.locations == fallback.locations


async def test_glob_matches_paths_and_skips_gitignored_files(workspace: Path) -> None:
    make_tree(workspace)
    session = Session([workspace])
    python = await session.run(GlobTool(), {"pattern": "**/*.py"})
    assert shown(python) == ["src/app.py", "src/util/helpers.py"]
    logs = await session.run(GlobTool(), {"pattern": "**/*.log"})
    assert shown(logs) == ["src/keep.log"]
    top = await session.run(GlobTool(), {"pattern": "*.txt"})
    assert top.raw_output["files"] == []
    assert top.model_text == "No files match `*.txt` in `.`."  # not "in .."
    nested = await session.run(GlobTool(), {"pattern": "*.py", "path": "src/util"})
    assert shown(nested) == ["src/util/helpers.py"]
    assert nested.raw_output["files"] == [str(workspace / "src/util/helpers.py")]


def test_glob_patterns_keep_single_stars_within_one_directory() -> None:
    assert glob_regex("*.py").fullmatch("a.py")
    assert not glob_regex("*.py").fullmatch("src/a.py")
    assert glob_regex("**/*.py").fullmatch("a.py")
    assert glob_regex("**/*.py").fullmatch("src/deep/a.py")
    assert glob_regex("src/**/test_*.{ts,tsx}").fullmatch("src/x/y/test_a.tsx")
    assert not glob_regex("src/**/test_*.{ts,tsx}").fullmatch("lib/test_a.ts")
    assert glob_regex("file[0-9].txt").fullmatch("file7.txt")
    assert not glob_regex("file[!0-9].txt").fullmatch("file7.txt")


async def test_list_shows_a_tree_without_ignored_entries(workspace: Path) -> None:
    make_tree(workspace)
    (workspace / "link").symlink_to("src")
    result = await Session([workspace]).run(ListTool(), {"depth": 2})
    assert result.model_text.splitlines() == [
        "./",
        "  .gitignore",
        "  .hidden/",
        "    config.toml",
        "  data.bin",
        "  docs/",
        "    readme.md",
        "  link -> src",
        "  src/",
        "    .gitignore",
        "    app.py",
        "    keep.log",
        "    top-only.txt",
        "    util/",
    ]
    assert ListTool().present({"path": "src"}, [workspace]).title == "List src"
