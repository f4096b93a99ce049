"""A session's code intelligence against the real ruff server (`ruff server`, from PyPI).

`CodeIntelligence` runs in the test's event loop and starts real server processes;
each test changes files the way a tool does (before and after bytes) and reads what
the review says.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskGroup

from acp_agent.capabilities.session import ChangedFile
from acp_agent.lsp import BASEDPYRIGHT, RUFF, CodeIntelligence, ServerSpec, default_servers
from acp_agent.toolkit import Notice, NoticeSeverity


@pytest.fixture
async def intel(tmp_path: Path, owner: TaskGroup) -> AsyncIterator[CodeIntelligence]:
    service = CodeIntelligence(
        lambda: [tmp_path], start_soon=owner.start_soon, servers=[RUFF], settle_s=10.0
    )
    try:
        yield service
    finally:
        await service.aclose()


def _no_work(func: object, /, *, name: object = None) -> None:
    raise AssertionError("no background work expected")


def change(path: Path, text: str) -> ChangedFile:
    """Write `text` to `path` as a tool would, and say what changed."""
    before = path.read_bytes() if path.exists() else None
    path.write_text(text)
    return ChangedFile(path, before, text.encode())


async def test_an_undefined_name_is_reported_with_its_line_and_a_fix_clears_it(
    tmp_path: Path, intel: CodeIntelligence
) -> None:
    module = tmp_path / "mod.py"
    module.write_text("def greet():\n    return 'hi'\n")

    broken = await intel.review([change(module, "def greet():\n    return nmae\n")])
    fixed = await intel.review([change(module, "def greet():\n    return 'hi'\n")])

    assert broken is not None
    assert "mod.py:2:12: error [ruff F821] Undefined name `nmae`" in broken
    assert fixed == "1 problem(s) reported before this change are gone."


async def test_a_problem_that_was_there_before_is_not_reported_as_new(
    tmp_path: Path, intel: CodeIntelligence
) -> None:
    module = tmp_path / "old.py"
    module.write_text("print(missing)\n")

    said = await intel.review([change(module, "import os\n\nprint(missing)\nprint(os.sep)\n")])

    assert said is None  # the old problem moved down two lines; nothing new


async def test_a_new_file_with_a_syntax_error_is_reported(
    tmp_path: Path, intel: CodeIntelligence
) -> None:
    said = await intel.review([change(tmp_path / "new.py", "def broken(:\n    pass\n")])

    assert said is not None
    assert "new.py:1:" in said
    assert "error [ruff" in said


async def test_files_no_server_handles_start_no_server(
    tmp_path: Path, intel: CodeIntelligence
) -> None:
    said = await intel.review([change(tmp_path / "notes.md", "# undefined_name(\n")])

    assert said is None
    assert intel.statuses() == []


async def test_files_outside_the_roots_start_no_server(tmp_path: Path, owner: TaskGroup) -> None:
    inside = tmp_path / "root"
    inside.mkdir()
    service = CodeIntelligence(lambda: [inside], start_soon=owner.start_soon, settle_s=10.0)
    try:
        said = await service.review([change(tmp_path / "outside.py", "print(nope)\n")])
    finally:
        await service.aclose()

    assert said is None
    assert service.statuses() == []


async def test_a_killed_server_is_started_again_for_the_next_change(
    tmp_path: Path, owner: TaskGroup
) -> None:
    told: list[str] = []

    async def notify(text: str) -> None:
        told.append(text)

    notices: list[Notice] = []
    intel = CodeIntelligence(
        lambda: [tmp_path],
        start_soon=owner.start_soon,
        servers=[RUFF],
        settle_s=10.0,
        notify=notify,
        notices=notices.append,
    )
    try:
        await killed_and_changed_again(tmp_path, intel)
    finally:
        await intel.aclose()

    assert len(told) == 2
    assert told[0].startswith(f"Code intelligence from ruff for {tmp_path} stopped")
    assert told[1] == f"Code intelligence from ruff for {tmp_path} is back."
    # The person hears of it too: lost (a warning), then back (info).
    assert [(n.severity, n.title) for n in notices] == [
        (NoticeSeverity.WARNING, "Language server ruff stopped"),
        (NoticeSeverity.INFO, "Language server ruff is back"),
    ]
    assert str(tmp_path) in (notices[0].description or "")


async def killed_and_changed_again(tmp_path: Path, intel: CodeIntelligence) -> None:
    module = tmp_path / "mod.py"
    await intel.review([change(module, "x = 1\n")])
    [status] = intel.statuses()
    assert status.running
    connection = next(iter(intel._connections.values()))
    process = connection._client._server
    assert process is not None
    os.killpg(process.pid, signal.SIGKILL)
    with anyio.fail_after(5):
        await process.wait()

    said = await intel.review([change(module, "x = undefined\n")])

    assert said is not None
    assert "Undefined name `undefined`" in said
    [status] = intel.statuses()
    assert status.running


async def test_a_server_that_never_answers_costs_at_most_the_bound_and_is_named(
    tmp_path: Path, owner: TaskGroup
) -> None:
    silent = ServerSpec(
        name="silent",
        command=(sys.executable, "-c", "import time; time.sleep(60)"),
        suffixes=(".py",),
        language_id="python",
    )
    notices: list[Notice] = []
    service = CodeIntelligence(
        lambda: [tmp_path],
        start_soon=owner.start_soon,
        servers=[silent],
        settle_s=0.5,
        notices=notices.append,
    )
    try:
        started = anyio.current_time()
        said = await service.review([change(tmp_path / "a.py", "print(x)\n")])
        took = anyio.current_time() - started
        await service.review([change(tmp_path / "a.py", "print(y)\n")])
    finally:
        await service.aclose()

    assert said == (
        "silent has not finished checking: problems may be missing; `diagnostics` asks again."
    )
    assert took < 0.5 + 0.5  # the bound, plus the review's own slack
    # The check cut short is told once, not at every change while the server is slow.
    [notice] = notices
    assert notice.severity is NoticeSeverity.INFO
    assert notice.title == "silent had not finished checking the change after 0.5 s"


async def test_closing_ends_the_server_process_and_leaves_no_task(
    tmp_path: Path, owner: TaskGroup
) -> None:
    before = asyncio.all_tasks()
    service = CodeIntelligence(lambda: [tmp_path], start_soon=owner.start_soon, settle_s=10.0)
    await service.review([change(tmp_path / "a.py", "x = 1\n")])
    connection = next(iter(service._connections.values()))
    process = connection._client._server
    assert process is not None
    assert asyncio.all_tasks() - before  # its stderr drained, by the owner

    await service.aclose()

    assert process.returncode is not None
    assert service.statuses() == []
    # Nothing it started runs on: neither in the owner's group nor anywhere else.
    assert {task.get_name() for task in asyncio.all_tasks() - before} == set()


def test_ruff_is_the_default_server_and_runs_from_this_interpreter() -> None:
    assert RUFF.command[:3] == (sys.executable, "-m", "ruff")
    assert RUFF.handles(Path("a.py"))
    assert not RUFF.handles(Path("a.rs"))


@pytest.mark.skipif(BASEDPYRIGHT not in default_servers(), reason="needs the `types` extra")
async def test_a_type_error_is_reported_by_basedpyright_next_to_ruff(
    tmp_path: Path, owner: TaskGroup
) -> None:
    module = tmp_path / "typed.py"
    module.write_text("def double(x: int) -> int:\n    return x * 2\n")
    # Both servers, as sessions get them.
    intel = CodeIntelligence(lambda: [tmp_path], start_soon=owner.start_soon, settle_s=20.0)
    new_text = "def double(x: int) -> int:\n    return x * 2\n\ndouble('a')\nprint(nope)\n"
    try:
        said = await intel.review([change(module, new_text)])
        statuses = intel.statuses()
    finally:
        await intel.aclose()

    assert said is not None
    assert "typed.py:4:8: error [basedpyright reportArgumentType]" in said
    assert "typed.py:5:7: error [ruff F821] Undefined name `nope`" in said
    assert {status.name for status in statuses} == {"ruff", "basedpyright"}


async def test_a_server_that_keeps_failing_is_started_again_only_after_a_backoff(
    tmp_path: Path, owner: TaskGroup
) -> None:
    starts = tmp_path / "starts"
    failing = ServerSpec(
        name="failing",
        command=(sys.executable, "-c", f"open({str(starts)!r}, 'a').write('x')"),
        suffixes=(".py",),
        language_id="python",
    )
    intel = CodeIntelligence(
        lambda: [tmp_path], start_soon=owner.start_soon, servers=[failing], settle_s=5.0
    )
    try:
        said = [await intel.review([change(tmp_path / "a.py", "x = 1\n")]) for _ in range(3)]
        report = intel.status_report()
    finally:
        await intel.aclose()

    # Once, again at once, then not before a second has passed.
    assert starts.read_text() == "xx"
    assert said == ["failing is not running: its problems are missing."] * 3
    assert f"- failing: down, for `{tmp_path}`; last error: " in report


def test_the_status_report_before_any_server_starts(tmp_path: Path) -> None:
    intel = CodeIntelligence(lambda: [tmp_path], start_soon=_no_work, servers=[RUFF])

    assert intel.status_report().startswith("Language servers: ruff. None is running yet")


async def test_a_deleted_file_is_closed_and_a_moved_one_checked_where_it_went(
    tmp_path: Path, intel: CodeIntelligence
) -> None:
    source = tmp_path / "old.py"
    await intel.review([change(source, "x = 1\n")])
    connection = next(iter(intel._connections.values()))
    assert connection.is_open(source)
    destination = tmp_path / "new.py"
    before = source.read_bytes()
    source.rename(destination)
    destination.write_text("x = missing\n")

    said = await intel.review(
        [
            ChangedFile(source, before, None),  # gone from where it was
            ChangedFile(destination, None, destination.read_bytes()),
        ]
    )

    assert not connection.is_open(source)
    assert said is not None
    assert "new.py:1:5: error [ruff F821] Undefined name `missing`" in said


async def test_deleting_a_file_starts_no_server(tmp_path: Path, intel: CodeIntelligence) -> None:
    gone = tmp_path / "gone.py"

    said = await intel.review([ChangedFile(gone, b"x = 1\n", None)])

    assert said is None
    assert intel.statuses() == []


def test_the_language_client_loads_off_the_event_loop(tmp_path: Path) -> None:
    # pygls and lsprotocol load when the first server starts: in a worker thread, so
    # the loop serves meanwhile (in a fresh interpreter, where nothing loaded them yet).
    probe = f"""
import sys, threading
seen = []
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name in ("lsprotocol.types", "pygls.lsp.client"):
            seen.append(threading.current_thread() is threading.main_thread())
        return None
sys.meta_path.insert(0, Spy())
from pathlib import Path
import anyio
from acp_agent.capabilities.session import ChangedFile
from acp_agent.lsp import CodeIntelligence, ServerSpec
root = Path({str(tmp_path)!r})
missing = ServerSpec(name="missing", command=(str(root / "no-server"),), suffixes=(".py",),
                     language_id="python")
async def main():
    async with anyio.create_task_group() as group:
        service = CodeIntelligence(lambda: [root], start_soon=group.start_soon,
                                   servers=[missing], settle_s=5.0)
        await service.review([ChangedFile(root / "a.py", None, b"x = 1\\n")])
        await service.aclose()
anyio.run(main)
print(seen)
"""
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[False, False]"
