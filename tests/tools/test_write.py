"""write, delete, move: new files freely, existing ones only after a read; diffs for each change."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.toolkit import DiffContent, Location, TextContent, ToolKind
from acp_agent.tools import DeleteTool, MoveTool, ReadTool, WriteTool
from tests.tools.editor import EditorBridge
from tests.tools.support import CLIENTS, Session, open_client

pytestmark = pytest.mark.anyio

WRITE, READ, DELETE, MOVE = WriteTool(), ReadTool(), DeleteTool(), MoveTool()


@pytest.fixture(params=CLIENTS)
def client_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_writing_a_new_file_creates_its_directories_and_shows_a_new_file_diff(
    workspace: Path, client_kind: str
) -> None:
    async with open_client(client_kind) as client:
        result = await Session([workspace], client).run(
            WRITE, {"path": "src/pkg/new.py", "content": "x = 1\n"}
        )
        if isinstance(client, EditorBridge):
            assert client.methods() == ["fs/write_text_file"]
    file = workspace / "src/pkg/new.py"
    assert file.read_text() == "x = 1\n"
    assert result.content == (DiffContent(str(file), None, "x = 1\n"),)
    assert result.locations == (Location(str(file), 1),)
    assert result.raw_output["created"] is True


async def test_overwriting_needs_a_read_and_then_keeps_crlf(
    workspace: Path, client_kind: str
) -> None:
    file = workspace / "win.txt"
    file.write_bytes(b"a\r\nb\r\n")
    async with open_client(client_kind) as client:
        session = Session([workspace], client)
        refused = await session.run(WRITE, {"path": "win.txt", "content": "c\n"})
        assert refused.raw_output["error"] == "file_not_read"
        assert file.read_bytes() == b"a\r\nb\r\n"
        await session.run(READ, {"path": "win.txt"})
        result = await session.run(WRITE, {"path": "win.txt", "content": "c\nd\n"})
    assert file.read_bytes() == b"c\r\nd\r\n"
    assert result.content == (DiffContent(str(file), "a\r\nb\r\n", "c\r\nd\r\n"),)


async def test_overwriting_a_file_changed_since_the_read_is_refused(workspace: Path) -> None:
    file = workspace / "a.txt"
    file.write_text("one\n")
    session = Session([workspace])
    await session.run(READ, {"path": "a.txt"})
    file.write_text("someone else's\n")
    result = await session.run(WRITE, {"path": "a.txt", "content": "mine\n"})
    assert result.raw_output["error"] == "file_modified_since_read"
    assert file.read_text() == "someone else's\n"


async def test_deleting_a_file_shows_its_text_going_away(workspace: Path) -> None:
    file = workspace / "gone.txt"
    file.write_text("bye\n")
    result = await Session([workspace]).run(DELETE, {"path": "gone.txt"})
    assert not file.exists()
    assert result.content == (DiffContent(str(file), "bye\n", ""),)
    assert DELETE.present({"path": "gone.txt"}, [workspace]).kind is ToolKind.DELETE


async def test_deleting_a_file_changed_since_this_branch_read_it_is_refused(
    workspace: Path,
) -> None:
    file = workspace / "a.txt"
    file.write_text("one\n")
    session = Session([workspace])
    await session.run(READ, {"path": "a.txt"})
    file.write_text("two\n")
    result = await session.run(DELETE, {"path": "a.txt"})
    assert result.raw_output["error"] == "file_modified_since_read"
    assert file.exists()


async def test_a_directory_is_deleted_only_with_recursive_and_a_root_never(
    workspace: Path,
) -> None:
    (workspace / "d/sub").mkdir(parents=True)
    (workspace / "d/sub/f.txt").write_text("f")
    session = Session([workspace])
    refused = await session.run(DELETE, {"path": "d"})
    assert refused.raw_output["error"] == "directory_not_empty"
    root = await session.run(DELETE, {"path": ".", "recursive": True})
    assert root.raw_output["error"] == "workspace_root"
    done = await session.run(DELETE, {"path": "d", "recursive": True})
    assert not (workspace / "d").exists()
    assert done.raw_output["removed_files"] == 1
    assert isinstance(done.content[0], TextContent)
    assert "sub/f.txt" in done.content[0].text


async def test_deleting_a_symlink_removes_the_link_not_its_target(
    workspace: Path, outside: Path
) -> None:
    target = outside / "precious.txt"
    target.write_text("keep me")
    (workspace / "link").symlink_to(target)
    need = DELETE.permission({"path": "link"}, [workspace])
    assert need.outside_workspace == ()  # the link itself is inside
    await Session([workspace]).run(DELETE, {"path": "link"})
    assert not (workspace / "link").is_symlink()
    assert target.read_text() == "keep me"


async def test_moving_a_file_shows_it_leave_and_arrive_and_its_read_stamp_follows(
    workspace: Path,
) -> None:
    (workspace / "old.txt").write_text("text\n")
    session = Session([workspace])
    await session.run(READ, {"path": "old.txt"})
    result = await session.run(MOVE, {"source": "old.txt", "destination": "new/place.txt"})
    new = workspace / "new/place.txt"
    assert new.read_text() == "text\n"
    assert not (workspace / "old.txt").exists()
    assert result.content == (
        DiffContent(str(workspace / "old.txt"), "text\n", ""),
        DiffContent(str(new), None, "text\n"),
    )
    assert result.locations == (Location(str(new)),)
    assert session.stamps.get(str(new)) is not None
    assert session.stamps.get(str(workspace / "old.txt")) is None
    presentation = MOVE.present({"source": "old.txt", "destination": "new/place.txt"}, [workspace])
    assert presentation.title == "Move old.txt → new/place.txt"
    assert presentation.kind is ToolKind.MOVE


async def test_moving_onto_an_existing_file_needs_overwrite_and_a_read_of_it(
    workspace: Path,
) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    session = Session([workspace])
    plain = await session.run(MOVE, {"source": "a.txt", "destination": "b.txt"})
    assert plain.raw_output["error"] == "destination_exists"
    unread = await session.run(MOVE, {"source": "a.txt", "destination": "b.txt", "overwrite": True})
    assert unread.raw_output["error"] == "file_not_read"
    await session.run(READ, {"path": "b.txt"})
    done = await session.run(MOVE, {"source": "a.txt", "destination": "b.txt", "overwrite": True})
    assert (workspace / "b.txt").read_text() == "a\n"
    assert done.content[1] == DiffContent(str(workspace / "b.txt"), "b\n", "a\n")
    assert done.raw_output["overwrote"] is True
