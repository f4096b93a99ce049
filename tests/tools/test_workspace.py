"""Workspace containment: resolved paths, symlinks followed, anything outside asks with a note."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_agent.toolkit import Effect, Tool, ToolInputError
from acp_agent.tools import (
    DeleteTool,
    EditTool,
    GlobTool,
    GrepTool,
    ListTool,
    MoveTool,
    ReadTool,
    ShellTool,
    WriteTool,
)
from acp_agent.tools._workspace import resolve_path


def test_a_relative_path_is_taken_from_the_cwd_and_shown_relative(workspace: Path) -> None:
    resolved = resolve_path("src/../src/app.py", [workspace])
    assert resolved.path == workspace / "src/app.py"
    assert resolved.inside
    assert resolved.display == "src/app.py"


def test_an_additional_directory_is_part_of_the_workspace(workspace: Path, outside: Path) -> None:
    need = ReadTool().permission({"path": str(outside / "x.txt")}, [workspace, outside])
    assert need.outside_workspace == ()
    assert need.target == str(outside / "x.txt")


def test_a_path_outside_every_root_asks_with_a_note(workspace: Path, outside: Path) -> None:
    need = ReadTool().permission({"path": "../outside/secret.txt"}, [workspace])
    assert need.outside_workspace == (str(outside / "secret.txt"),)
    assert need.note == f"{outside / 'secret.txt'} is outside the workspace"


def test_a_symlink_leading_out_is_outside_and_the_note_names_the_link_and_target(
    workspace: Path, outside: Path
) -> None:
    (outside / "secret.txt").write_text("s")
    (workspace / "innocent.txt").symlink_to(outside / "secret.txt")
    (workspace / "dir").symlink_to(outside, target_is_directory=True)
    calls: list[tuple[Tool, dict[str, Any]]] = [
        (ReadTool(), {"path": "innocent.txt"}),
        (EditTool(), {"path": "innocent.txt", "old_text": "s", "new_text": "t"}),
        (WriteTool(), {"path": "innocent.txt", "content": "t"}),
        (WriteTool(), {"path": "dir/new.txt", "content": "t"}),
        (GrepTool(), {"pattern": "s", "path": "dir"}),
        (GlobTool(), {"pattern": "*", "path": "dir"}),
        (ListTool(), {"path": "dir"}),
        (ShellTool(), {"command": "ls", "cwd": "dir"}),
        (DeleteTool(), {"path": "dir/secret.txt"}),
        (MoveTool(), {"source": "dir/secret.txt", "destination": "mine.txt"}),
    ]
    for tool, arguments in calls:
        need = tool.permission(arguments, [workspace])
        assert need.outside_workspace, (tool.definition.name, arguments)
        assert need.note is not None
        assert "symlink leads outside" in need.note, need.note


def test_a_symlink_that_stays_inside_is_inside(workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real")
    need = ReadTool().permission({"path": "alias/a.txt"}, [workspace])
    assert need.outside_workspace == ()
    assert need.target == str(workspace / "real/a.txt")


def test_the_permission_target_is_the_whole_command_or_the_resolved_path(
    workspace: Path,
) -> None:
    shell = ShellTool().permission({"command": "pytest -q && ruff check ."}, [workspace])
    assert shell.effect is Effect.EXECUTE
    assert shell.target == "pytest -q && ruff check ."
    write = WriteTool().permission({"path": "./a/../b.txt", "content": ""}, [workspace])
    assert write.effect is Effect.EDIT
    assert write.target == str(workspace / "b.txt")


def test_bad_paths_are_input_errors(workspace: Path) -> None:
    with pytest.raises(ToolInputError):
        ReadTool().permission({}, [workspace])
    with pytest.raises(ToolInputError):
        ReadTool().permission({"path": ""}, [workspace])
    with pytest.raises(ToolInputError):
        ReadTool().permission({"path": "a\x00b"}, [workspace])
