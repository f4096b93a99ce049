"""edit: exact replacements against a fresh read, encodings and line endings kept, exact diffs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_agent.toolkit import DiffContent, Location, MemoryReadStamps, ToolInputError
from acp_agent.tools import EditTool, ReadTool
from tests.tools.editor import EditorBridge
from tests.tools.support import CLIENTS, Session, open_client

pytestmark = pytest.mark.anyio

EDIT = EditTool()
READ = ReadTool()


@pytest.fixture(params=CLIENTS)
def client_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _read(session: Session, path: str) -> None:
    result = await session.run(READ, {"path": path})
    assert not result.is_error, result.model_text


async def test_an_edit_replaces_the_one_match_and_its_diff_is_the_file_change_exactly(
    workspace: Path, client_kind: str
) -> None:
    file = workspace / "app.py"
    file.write_text("def main():\n    return 1\n")
    async with open_client(client_kind) as client:
        session = Session([workspace], client)
        await _read(session, "app.py")
        before = file.read_text()
        result = await session.run(
            EDIT, {"path": "app.py", "old_text": "return 1", "new_text": "return 2"}
        )
    after = file.read_text()
    assert after == "def main():\n    return 2\n"
    assert result.content == (DiffContent(str(file), before, after),)
    assert result.locations == (Location(str(file), 2),)
    assert not result.is_error
    assert result.raw_output["via"] == ("client" if client_kind == "editor" else "disk")


async def test_an_edit_goes_through_the_editor_when_it_offers_writes(workspace: Path) -> None:
    file = workspace / "a.txt"
    file.write_text("one\n")
    async with EditorBridge() as editor:
        session = Session([workspace], editor)
        await _read(session, "a.txt")
        await session.run(EDIT, {"path": "a.txt", "old_text": "one", "new_text": "two"})
    assert ("fs/read_text_file", str(file)) in editor.calls
    assert ("fs/write_text_file", str(file)) in editor.calls
    assert file.read_text() == "two\n"


async def test_an_edit_applies_to_the_unsaved_buffer_the_editor_holds(workspace: Path) -> None:
    file = workspace / "a.txt"
    file.write_text("saved\n")
    async with EditorBridge() as editor:
        editor.buffers[str(file)] = "unsaved\n"
        session = Session([workspace], editor)
        await _read(session, "a.txt")
        result = await session.run(
            EDIT, {"path": "a.txt", "old_text": "unsaved", "new_text": "edited"}
        )
    assert result.content == (DiffContent(str(file), "unsaved\n", "edited\n"),)
    assert editor.buffers[str(file)] == "edited\n"


async def test_an_edit_of_a_file_never_read_in_this_branch_is_refused(
    workspace: Path, client_kind: str
) -> None:
    file = workspace / "a.txt"
    file.write_text("x = 1\n")
    async with open_client(client_kind) as client:
        result = await Session([workspace], client).run(
            EDIT, {"path": "a.txt", "old_text": "1", "new_text": "2"}
        )
    assert result.is_error
    assert result.raw_output["error"] == "file_not_read"
    assert file.read_text() == "x = 1\n"


async def test_an_edit_after_the_file_changed_is_refused_and_a_fresh_read_lets_the_retry_succeed(
    workspace: Path, client_kind: str
) -> None:
    file = workspace / "a.txt"
    file.write_text("x = 1\ny = 2\n")
    async with open_client(client_kind) as client:
        session = Session([workspace], client)
        await _read(session, "a.txt")
        file.write_text("x = 1\ny = 3\n")  # someone else changes it
        arguments = {"path": "a.txt", "old_text": "x = 1", "new_text": "x = 10"}
        refused = await session.run(EDIT, arguments)
        assert refused.is_error
        assert refused.raw_output["error"] == "file_modified_since_read"
        assert "a.txt changed after it was last read" in refused.model_text
        assert "read it again, then redo the change" in refused.model_text
        assert file.read_text() == "x = 1\ny = 3\n"
        await _read(session, "a.txt")
        retried = await session.run(EDIT, arguments)
    assert not retried.is_error
    assert file.read_text() == "x = 10\ny = 3\n"


async def test_an_edit_by_one_branch_makes_another_branchs_stale_edit_fail(
    workspace: Path,
) -> None:
    file = workspace / "a.txt"
    file.write_text("a\nb\n")
    main = Session([workspace], stamps=MemoryReadStamps(), branch_id="main")
    side = Session([workspace], stamps=MemoryReadStamps(), branch_id="side")
    await _read(main, "a.txt")
    await _read(side, "a.txt")
    first = await main.run(EDIT, {"path": "a.txt", "old_text": "a", "new_text": "A"})
    second = await side.run(EDIT, {"path": "a.txt", "old_text": "b", "new_text": "B"})
    assert not first.is_error
    assert second.raw_output["error"] == "file_modified_since_read"
    # The branch that wrote may edit again without re-reading: it knows what it wrote.
    third = await main.run(EDIT, {"path": "a.txt", "old_text": "b", "new_text": "B"})
    assert not third.is_error
    assert file.read_text() == "A\nB\n"


async def test_old_text_must_match_exactly_once_unless_replace_all(workspace: Path) -> None:
    file = workspace / "a.txt"
    file.write_text("x\nx\n")
    session = Session([workspace])
    await _read(session, "a.txt")
    ambiguous = await session.run(EDIT, {"path": "a.txt", "old_text": "x", "new_text": "y"})
    missing = await session.run(EDIT, {"path": "a.txt", "old_text": "z", "new_text": "y"})
    assert ambiguous.raw_output["error"] == "ambiguous_match"
    assert "2 places" in ambiguous.model_text
    assert missing.raw_output["error"] == "no_match"
    assert file.read_text() == "x\nx\n"
    every = await session.run(
        EDIT, {"path": "a.txt", "old_text": "x", "new_text": "y", "replace_all": True}
    )
    assert every.raw_output["replacements"] == 2
    assert file.read_text() == "y\ny\n"


async def test_several_edits_apply_in_order_and_all_or_none(workspace: Path) -> None:
    file = workspace / "a.txt"
    file.write_text("alpha\nbeta\ngamma\n")
    session = Session([workspace])
    await _read(session, "a.txt")
    failing = await session.run(
        EDIT,
        {
            "path": "a.txt",
            "edits": [
                {"old_text": "alpha", "new_text": "ALPHA"},
                {"old_text": "delta", "new_text": "DELTA"},
            ],
        },
    )
    assert failing.raw_output["error"] == "no_match"
    assert "edits[1]" in failing.model_text
    assert file.read_text() == "alpha\nbeta\ngamma\n"
    chained = await session.run(
        EDIT,
        {
            "path": "a.txt",
            "edits": [
                {"old_text": "alpha", "new_text": "ALPHA"},
                {"old_text": "ALPHA\nbeta", "new_text": "ALPHA\nBETA"},
            ],
        },
    )
    assert chained.raw_output["replacements"] == 2
    assert file.read_text() == "ALPHA\nBETA\ngamma\n"


async def test_a_crlf_file_stays_crlf_and_only_the_edited_bytes_change(
    workspace: Path, client_kind: str
) -> None:
    file = workspace / "win.txt"
    file.write_bytes(b"first\r\nsecond\r\nthird")  # no final newline either
    async with open_client(client_kind) as client:
        session = Session([workspace], client)
        await _read(session, "win.txt")
        result = await session.run(
            EDIT, {"path": "win.txt", "old_text": "first\nsecond", "new_text": "one\ntwo\nthree"}
        )
    assert file.read_bytes() == b"one\r\ntwo\r\nthree\r\nthird"
    assert result.content == (
        DiffContent(str(file), "first\r\nsecond\r\nthird", "one\r\ntwo\r\nthree\r\nthird"),
    )


async def test_in_a_file_with_mixed_endings_the_edited_lines_keep_theirs(workspace: Path) -> None:
    file = workspace / "mixed.txt"
    file.write_bytes(b"a\r\nb\r\nc\nd\n")
    session = Session([workspace])
    await _read(session, "mixed.txt")
    crlf_part = await session.run(
        EDIT, {"path": "mixed.txt", "old_text": "a\nb", "new_text": "A\nB"}
    )
    lf_part = await session.run(EDIT, {"path": "mixed.txt", "old_text": "c\nd", "new_text": "C\nD"})
    assert not crlf_part.is_error
    assert not lf_part.is_error
    assert file.read_bytes() == b"A\r\nB\r\nC\nD\n"


@pytest.mark.parametrize(
    ("codec", "original", "edited"),
    [
        ("cp1252", "café € naïve\n\u2018q\u2019\n", "CAFÉ € naïve\n\u2018q\u2019\n"),
        ("latin-1", "é x\x81y\nz\n", "É x\x81y\nz\n"),
        ("utf-8-sig", "bom ✓\nrest\n", "BOM ✓\nrest\n"),
        ("utf-16", "wide ✓\nrest\n", "WIDE ✓\nrest\n"),
    ],
)
async def test_a_non_utf8_file_is_written_back_in_its_own_encoding(
    workspace: Path, client_kind: str, codec: str, original: str, edited: str
) -> None:
    file = workspace / "legacy.txt"
    file.write_bytes(original.encode(codec))
    old_word, new_word = original.split()[0], edited.split()[0]
    async with open_client(client_kind) as client:
        session = Session([workspace], client)
        await _read(session, "legacy.txt")
        result = await session.run(
            EDIT, {"path": "legacy.txt", "old_text": old_word, "new_text": new_word}
        )
    assert file.read_bytes() == edited.encode(codec)
    assert result.content == (DiffContent(str(file), original, edited),)
    assert result.raw_output["via"] == "disk"
    if isinstance(client, EditorBridge):
        assert ("fs/write_text_file", str(file)) not in client.calls


async def test_text_the_files_encoding_cannot_hold_is_refused(workspace: Path) -> None:
    file = workspace / "legacy.txt"
    file.write_bytes("café\n".encode("cp1252"))
    session = Session([workspace])
    await _read(session, "legacy.txt")
    result = await session.run(EDIT, {"path": "legacy.txt", "old_text": "café", "new_text": "☕"})
    assert result.raw_output["error"] == "unencodable_text"
    assert file.read_bytes() == "café\n".encode("cp1252")


async def test_a_disk_edit_is_atomic_keeps_the_mode_and_leaves_no_temporary_file(
    workspace: Path,
) -> None:
    file = workspace / "run.sh"
    file.write_text("echo one\n")
    file.chmod(0o750)
    session = Session([workspace])
    await _read(session, "run.sh")
    await session.run(EDIT, {"path": "run.sh", "old_text": "one", "new_text": "two"})
    assert file.read_text() == "echo two\n"
    assert file.stat().st_mode & 0o777 == 0o750
    assert sorted(os.listdir(workspace)) == ["run.sh"]


async def test_an_edit_through_a_symlink_changes_the_target_inside_the_workspace(
    workspace: Path,
) -> None:
    (workspace / "real.txt").write_text("v1\n")
    (workspace / "link.txt").symlink_to("real.txt")
    session = Session([workspace])
    await _read(session, "link.txt")
    result = await session.run(EDIT, {"path": "link.txt", "old_text": "v1", "new_text": "v2"})
    assert (workspace / "link.txt").is_symlink()
    assert (workspace / "real.txt").read_text() == "v2\n"
    assert result.content[0] == DiffContent(str(workspace / "real.txt"), "v1\n", "v2\n")


async def test_edit_arguments_are_checked_before_anything_runs(workspace: Path) -> None:
    roots = [workspace]
    with pytest.raises(ToolInputError):
        EDIT.permission({"path": "a.txt"}, roots)
    with pytest.raises(ToolInputError):
        EDIT.permission({"path": "a.txt", "old_text": "", "new_text": "x"}, roots)
    with pytest.raises(ToolInputError):
        EDIT.permission({"path": "a.txt", "old_text": "x", "new_text": "x"}, roots)
    with pytest.raises(ToolInputError):
        EDIT.permission({"path": "a.txt", "old_text": "a", "new_text": "b", "edits": [{}]}, roots)
    presentation = EDIT.present({"path": "src/app.py"}, roots)
    assert presentation.title == "Edit src/app.py"
    assert presentation.locations == (Location(str(workspace / "src/app.py")),)
