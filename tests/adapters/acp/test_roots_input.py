"""`additionalDirectories` as a client sends them: checked, resolved, kept once, in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.adapters.acp._client_input import additional_directories
from acp_agent.adapters.acp._listing import session_info
from acp_agent.capabilities.controls import SessionControls, workspace_roots
from acp_agent.core import BranchId, SessionId, SessionRecord
from protocol.errors import InvalidParams


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    lib, docs = (tmp_path / "lib").resolve(), (tmp_path / "docs").resolve()
    lib.mkdir()
    docs.mkdir()
    return lib, docs


def test_a_list_not_sent_is_none_and_an_empty_one_is_empty() -> None:
    assert additional_directories(None) is None
    assert additional_directories([]) == ()


def test_each_directory_is_resolved_and_kept_once_in_order(
    tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    lib, docs = folders
    (tmp_path / "lib-link").symlink_to(lib)
    sent = [str(docs), f"{lib}/../lib/", str(tmp_path / "lib-link"), str(docs)]

    assert additional_directories(sent) == (str(docs), str(lib))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("relative/lib", "additionalDirectories[1]: must be an absolute path"),
        ("/no/such/folder", "additionalDirectories[1]: /no/such/folder does not exist"),
        ("/tmp/a\x00b", "additionalDirectories[1]: must not contain a NUL character"),
    ],
)
def test_an_entry_that_cannot_be_a_root_is_invalid_params_naming_it(
    folders: tuple[Path, Path], entry: str, message: str
) -> None:
    with pytest.raises(InvalidParams) as caught:
        additional_directories([str(folders[0]), entry])

    assert caught.value.message == f"Invalid params: {message}"


def test_a_file_is_not_a_directory(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("x")

    with pytest.raises(InvalidParams, match=r"additionalDirectories\[0\]: .* is not a directory"):
        additional_directories([str(file)])


def test_the_roots_are_the_cwd_then_the_others_without_the_cwd_or_repeats(
    tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    lib, docs = folders
    cwd = (tmp_path / "app").resolve()
    cwd.mkdir()
    (tmp_path / "app-link").symlink_to(cwd)

    roots = workspace_roots(str(cwd), [str(lib), str(tmp_path / "app-link"), str(docs), str(lib)])

    assert roots == (cwd, lib, docs)
    controls = SessionControls("sess_1", str(cwd))
    assert controls.roots == (cwd,)
    controls.set_additional_directories([str(lib), str(cwd)])
    assert controls.roots == (cwd, lib)
    assert controls.additional_directories == (lib,)
    controls.set_additional_directories([])
    assert controls.roots == (cwd,)


def test_a_listed_session_reports_its_directories_only_when_it_has_some() -> None:
    record = SessionRecord(SessionId("sess_1"), "/work/app", BranchId("br_1"), 1.0, 2.0)
    with_roots = SessionRecord(
        SessionId("sess_2"),
        "/work/app",
        BranchId("br_2"),
        1.0,
        2.0,
        additional_directories=("/work/lib", "/work/docs"),
    )

    assert session_info(record).additional_directories is None
    assert session_info(with_roots).additional_directories == ["/work/lib", "/work/docs"]
