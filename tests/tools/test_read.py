"""read: numbered lines through the editor's buffers when offered; binary refused; cuts stated."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.toolkit import Location, ToolInputError, ToolKind
from acp_agent.tools import ReadTool
from acp_agent.tools._read import (
    DEFAULT_LINE_LIMIT,
    MAX_LINE_CHARS,
    MAX_OUTPUT_CHARS,
    line_count,
    lines_from,
)
from tests.tools.editor import EditorBridge
from tests.tools.support import CLIENTS, Session, open_client

pytestmark = pytest.mark.anyio

READ = ReadTool()


@pytest.fixture(params=CLIENTS)
def client_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_read_numbers_the_lines_from_one_and_points_at_the_file(
    workspace: Path, client_kind: str
) -> None:
    file = workspace / "app.py"
    file.write_text("import os\n\nprint(os.getcwd())\n")
    async with open_client(client_kind) as client:
        result = await Session([workspace], client).run(READ, {"path": "app.py"})
    assert result.model_text == "     1\timport os\n     2\t\n     3\tprint(os.getcwd())"
    assert result.locations == (Location(str(file), 1),)
    assert result.raw_output["total_lines"] == 3
    assert result.raw_output["via"] == ("client" if client_kind == "editor" else "disk")


async def test_a_read_sees_the_editors_unsaved_buffer_not_the_disk(workspace: Path) -> None:
    file = workspace / "app.py"
    file.write_text("on disk\n")
    async with EditorBridge() as editor:
        editor.buffers[str(file)] = "in the buffer\n"
        result = await Session([workspace], editor).run(READ, {"path": "app.py"})
    assert result.model_text == "     1\tin the buffer"


async def test_offset_and_limit_pick_lines_and_the_note_says_where_to_read_on(
    workspace: Path,
) -> None:
    (workspace / "n.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    result = await Session([workspace]).run(READ, {"path": "n.txt", "offset": 4, "limit": 3})
    shown = result.model_text.splitlines()[:3]
    assert shown == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "Showing lines 4-6 of 10. Read on with offset=7." in result.model_text
    assert result.raw_output["truncated"] is True
    assert result.locations == (Location(str(workspace / "n.txt"), 4),)


async def test_a_long_file_stops_at_the_default_line_limit_and_says_so(workspace: Path) -> None:
    total = DEFAULT_LINE_LIMIT + 5
    (workspace / "long.txt").write_text("x\n" * total)
    result = await Session([workspace]).run(READ, {"path": "long.txt"})
    assert result.raw_output["end_line"] == DEFAULT_LINE_LIMIT
    assert f"of {total}. Read on with offset={DEFAULT_LINE_LIMIT + 1}." in result.model_text


async def test_long_lines_and_huge_output_are_cut_with_the_cut_stated(workspace: Path) -> None:
    wide = "y" * (MAX_LINE_CHARS + 10)
    (workspace / "wide.txt").write_text(f"{wide}\nshort\n")
    cut = await Session([workspace]).run(READ, {"path": "wide.txt"})
    assert "[line cut: 10 more characters]" in cut.model_text
    assert "1 line(s) longer than" in cut.model_text

    lines = MAX_OUTPUT_CHARS // 1000 + 10
    (workspace / "big.txt").write_text(("z" * 999 + "\n") * lines)
    capped = await Session([workspace]).run(READ, {"path": "big.txt"})
    assert len(capped.model_text) < MAX_OUTPUT_CHARS + 500
    end = capped.raw_output["end_line"]
    assert f"Output capped at {MAX_OUTPUT_CHARS} characters" in capped.model_text
    assert f"Read on with offset={end + 1}." in capped.model_text


async def test_a_binary_file_is_refused_with_a_clear_message(
    workspace: Path, client_kind: str
) -> None:
    (workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    async with open_client(client_kind) as client:
        result = await Session([workspace], client).run(READ, {"path": "logo.png"})
        if isinstance(client, EditorBridge):
            assert client.calls == []  # never handed to the editor
    assert result.is_error
    assert result.raw_output["error"] == "binary_file"
    assert "binary file" in result.model_text


async def test_a_missing_file_and_a_directory_are_errors_the_model_can_read(
    workspace: Path,
) -> None:
    (workspace / "dir").mkdir()
    missing = await Session([workspace]).run(READ, {"path": "nope.txt"})
    directory = await Session([workspace]).run(READ, {"path": "dir"})
    assert missing.raw_output["error"] == "not_found"
    assert directory.raw_output["error"] == "is_a_directory"


async def test_a_cp1252_file_is_read_from_disk_and_decoded(workspace: Path) -> None:
    (workspace / "old.txt").write_bytes("prix: 5 €\n".encode("cp1252"))
    async with EditorBridge() as editor:
        result = await Session([workspace], editor).run(READ, {"path": "old.txt"})
    assert result.model_text == "     1\tprix: 5 €"
    assert result.raw_output["encoding"] == "cp1252"
    assert result.raw_output["via"] == "disk"


async def test_a_read_records_the_branchs_stamp_of_the_file(workspace: Path) -> None:
    file = workspace / "a.txt"
    file.write_text("a\n")
    session = Session([workspace])
    assert session.stamps.get(str(file)) is None
    await session.run(READ, {"path": "a.txt", "offset": 1, "limit": 1})
    assert session.stamps.get(str(file)) is not None


async def test_the_title_names_the_file_and_the_line_range(workspace: Path) -> None:
    roots = [workspace]
    assert READ.present({"path": "src/app.py", "offset": 10, "limit": 31}, roots).title == (
        "Read src/app.py:10-40"
    )
    presentation = READ.present({"path": "src/app.py"}, roots)
    assert presentation.title == "Read src/app.py"
    assert presentation.kind is ToolKind.READ
    assert presentation.locations == (Location(str(workspace / "src/app.py"), 1),)
    assert READ.present({"path": 7}, roots).title == "Read 7"
    with pytest.raises(ToolInputError):
        READ.permission({"path": "a", "offset": 0}, roots)


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("\n", [""]),
        ("one", ["one"]),
        ("one\n", ["one"]),
        ("one\r\n\r\ntwo", ["one", "", "two"]),
        ("one\n\n", ["one", ""]),
        ("a\rb\n", ["a\rb"]),
    ],
)
def test_lines_are_counted_and_found_without_splitting_the_file(
    text: str, lines: list[str]
) -> None:
    assert line_count(text) == len(lines)
    for first in range(1, len(lines) + 3):
        assert list(lines_from(text, first)) == lines[first - 1 :]
