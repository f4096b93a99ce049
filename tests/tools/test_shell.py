"""shell: client terminals or a local process group; timeouts and cancels kill the whole tree."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_agent.process_groups import GroupRegistry, process_groups, use_process_groups
from acp_agent.toolkit import TerminalContent, TextContent, ToolInputError, ToolKind
from acp_agent.tools import ShellTool
from acp_agent.tools._shell import CLIENT_OUTPUT_LIMIT, HEAD_BYTES, STREAM_LIMIT_BYTES, TAIL_BYTES
from tests.tools.editor import EditorBridge
from tests.tools.processes import TREE, alive, all_dead, pids_in
from tests.tools.support import CLIENTS, Session, open_client

pytestmark = pytest.mark.anyio

SHELL = ShellTool()


@pytest.fixture(params=CLIENTS)
def client_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_command_reports_its_exit_code_and_merged_output(
    workspace: Path, client_kind: str
) -> None:
    async with open_client(client_kind) as client:
        result = await Session([workspace], client).run(
            SHELL, {"command": "echo out; echo err >&2; exit 3"}
        )
    assert result.model_text.startswith("Exit code 3.\n")
    assert "out\n" in result.model_text
    assert "err\n" in result.model_text
    assert result.is_error
    assert result.raw_output["exit_code"] == 3
    assert result.raw_output["via"] == ("client" if client_kind == "editor" else "local")


async def test_a_command_runs_in_the_cwd_it_is_given(workspace: Path, client_kind: str) -> None:
    (workspace / "sub").mkdir()
    async with open_client(client_kind) as client:
        result = await Session([workspace], client).run(SHELL, {"command": "pwd", "cwd": "sub"})
    assert f"{workspace / 'sub'}\n" in result.model_text
    assert not result.is_error
    with pytest.raises(ToolInputError):
        await Session([workspace]).run(SHELL, {"command": "pwd", "cwd": "missing"})


async def test_a_client_terminal_is_shown_at_once_and_always_released(workspace: Path) -> None:
    async with EditorBridge() as editor:
        session = Session([workspace], editor)
        result = await session.run(SHELL, {"command": "echo hi"})
    terminal = TerminalContent("term-1")
    assert session.progress.contents[0] == (terminal,)
    assert result.content == (terminal,)
    methods = editor.methods()
    assert methods[0] == "terminal/create"
    # Shown (and sent) before its exit is awaited; released only after the result.
    assert methods.index("updates_sent") < methods.index("terminal/wait_for_exit")
    assert methods[-2:] == ["updates_sent", "terminal/release"]
    assert session.progress.flushes >= 1
    assert "hi\n" in result.model_text
    # For a client that embeds terminals it never prints: the end of the output, once.
    assert result.raw_output["output"] == "hi"


async def test_a_terminal_result_keeps_only_the_last_lines_of_its_output(workspace: Path) -> None:
    async with EditorBridge() as editor:
        result = await Session([workspace], editor).run(SHELL, {"command": "seq 1 100"})
    shown = "\n".join(str(n) for n in range(81, 101))
    assert result.raw_output["output"] == f"[80 earlier lines not shown]\n{shown}"
    assert result.content == (TerminalContent("term-1"),)  # no text beside the terminal


async def test_a_timeout_kills_the_command_and_its_children(
    workspace: Path, client_kind: str
) -> None:
    async with open_client(client_kind) as client:
        started = time.monotonic()
        result = await Session([workspace], client).run(SHELL, {"command": TREE, "timeout_s": 1})
        elapsed = time.monotonic() - started
        if isinstance(client, EditorBridge):
            methods = client.methods()
            assert methods.index("terminal/kill") < methods.index("terminal/release")
            assert methods[-1] == "terminal/release"
    pids = await pids_in(workspace, ["shell.pid", "child.pid", "grandchild.pid"])
    assert await all_dead(pids)
    assert elapsed < 8
    assert result.raw_output["timed_out"] is True
    assert result.is_error
    assert result.model_text.startswith("Timed out after 1 s")


async def test_cancelling_the_call_kills_sleep_1000_and_its_grandchildren(
    workspace: Path, client_kind: str
) -> None:
    async with open_client(client_kind) as client:
        session = Session([workspace], client)
        async with anyio.create_task_group() as group:
            group.start_soon(session.run, SHELL, {"command": TREE})
            pids = await pids_in(workspace, ["shell.pid", "child.pid", "grandchild.pid"])
            assert all(alive(pid) for pid in pids)
            group.cancel_scope.cancel()
        assert await all_dead(pids)
        if isinstance(client, EditorBridge):
            assert client.methods()[-2:] == ["terminal/kill", "terminal/release"]


async def test_cancelling_while_the_editor_starts_the_command_still_kills_and_releases_it(
    workspace: Path,
) -> None:
    # The editor starts the command, then takes a while to answer: a cancel in between
    # must not leave the command running in the editor's terminal, unseen.
    async with EditorBridge(create_answer_delay_s=0.5) as editor:
        session = Session([workspace], editor)
        async with anyio.create_task_group() as group:
            group.start_soon(session.run, SHELL, {"command": TREE})
            pids = await pids_in(workspace, ["shell.pid", "child.pid", "grandchild.pid"])
            group.cancel_scope.cancel()
        assert await all_dead(pids)
        assert editor.methods()[-2:] == ["terminal/kill", "terminal/release"]


async def test_background_processes_left_running_are_killed_when_the_command_exits(
    workspace: Path,
) -> None:
    started = time.monotonic()
    result = await Session([workspace]).run(
        SHELL, {"command": "sleep 1000 & echo $! > bg.pid; echo done"}
    )
    (pid,) = await pids_in(workspace, ["bg.pid"])
    assert await all_dead([pid])
    assert time.monotonic() - started < 5
    assert result.raw_output["exit_code"] == 0
    assert "done\n" in result.model_text


async def test_fifty_megabytes_of_output_are_capped_head_and_tail_without_memory_blowup(
    workspace: Path, client_kind: str
) -> None:
    size = 50 * 1024 * 1024
    command = f"echo FIRST-LINE; yes 0123456789abcdef | head -c {size}; echo; echo LAST-LINE"
    async with open_client(client_kind) as client:
        tracemalloc.start()
        try:
            result = await Session([workspace], client).run(SHELL, {"command": command})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, peak
    assert len(result.model_text) < HEAD_BYTES + TAIL_BYTES + 1000
    assert "LAST-LINE" in result.model_text
    assert "bytes of output omitted" in result.model_text or "output omitted" in result.model_text
    assert result.raw_output["truncated"] is True
    if client_kind == "no-client":
        assert "FIRST-LINE" in result.model_text
        assert result.raw_output["output_bytes"] > size


async def test_a_client_terminal_that_dropped_its_start_still_shows_the_head(
    workspace: Path,
) -> None:
    command = f"echo FIRST-LINE; sleep 1.5; yes abc | head -c {2 * CLIENT_OUTPUT_LIMIT}"
    async with EditorBridge() as editor:
        result = await Session([workspace], editor).run(SHELL, {"command": command})
    assert result.model_text.index("FIRST-LINE") < result.model_text.index("output omitted")
    assert "the terminal kept only its last" in result.model_text


async def test_local_output_streams_as_terminal_output_when_the_editor_renders_it(
    workspace: Path,
) -> None:
    async with EditorBridge(has_terminals=False, streams_terminal_output=True) as editor:
        session = Session([workspace], editor)
        result = await session.run(SHELL, {"command": "echo one; echo two"})
    terminal = TerminalContent("local-call_1", local_cwd=str(workspace))
    assert session.progress.contents == [(terminal,)]
    assert session.progress.streamed() == "one\ntwo\n"
    assert {terminal_id for terminal_id, _ in session.progress.terminal} == {"local-call_1"}
    assert result.content == (terminal,)
    assert result.raw_output["terminal_id"] == "local-call_1"
    assert result.raw_output["exit_code"] == 0
    assert result.raw_output["signal"] is None
    assert result.raw_output["output"] == "one\ntwo"


async def test_streaming_stops_at_its_limit_and_says_so(workspace: Path) -> None:
    async with EditorBridge(has_terminals=False, streams_terminal_output=True) as editor:
        session = Session([workspace], editor)
        await session.run(SHELL, {"command": f"yes | head -c {3 * STREAM_LIMIT_BYTES}"})
    streamed = session.progress.streamed()
    assert len(streamed) < STREAM_LIMIT_BYTES + 200_000
    assert streamed.endswith("the rest is not shown here]\n")


async def test_without_terminals_progress_shows_the_latest_output_as_text(
    workspace: Path,
) -> None:
    session = Session([workspace])
    await session.run(SHELL, {"command": "for i in 1 2 3 4; do echo tick-$i; sleep 0.3; done"})
    texts = [
        part.text
        for parts in session.progress.contents
        for part in parts
        if isinstance(part, TextContent)
    ]
    assert texts, "no progress was reported"
    assert any("tick-1" in text for text in texts)


def test_the_title_quotes_the_command(workspace: Path) -> None:
    presentation = SHELL.present({"command": "pytest -q"}, [workspace])
    assert presentation.title == "Run `pytest -q`"
    assert presentation.kind is ToolKind.EXECUTE
    assert SHELL.present({"command": "a\nb"}, [workspace]).title == "Run `a…`"
    assert SHELL.present({}, [workspace]).title == "Run"
    # Short enough that a narrow client keeps the status icon after it.
    long = SHELL.present({"command": "python -m pytest " + "tests/x.py " * 20}, [workspace])
    assert long.title == "Run `python -m pytest tests/x.py tests/x.py tests/x.py tests/x.p…`"


@pytest.mark.parametrize(
    ("command", "title"),
    [
        ("cat src/app.py", "Read src/app.py"),
        ("cat a.txt b.txt c.txt", "Read a.txt, b.txt and 1 more"),
        ("head -n 40 src/app.py", "Read src/app.py:1-40"),
        ("tail -5 log.txt", "Read the last 5 lines of log.txt"),
        ("sed -n '10,40p' src/app.py", "Read src/app.py:10-40"),
        ("ls -la src", "List src"),
        ("ls", "List ."),
        ("find src -name '*.py'", "Find '*.py' in src"),
        ("grep -rn TODO src", "Search 'TODO' in src"),
        ("rg -e 'fn main' --type rust", "Search 'fn main'"),
        # Anything that is more than a plain read keeps its command.
        ("cat a.txt | wc -l", None),
        ("cat a.txt > b.txt", None),
        ("tail -f log.txt", None),
        ("sed -n '1w out' a.txt", None),
        ("find . -name x -delete", None),
        ("rg --pre ./run.sh x", None),
        ("tree -o out.txt", None),
        ("cat $(ls)", None),
        ("pytest -q", None),
    ],
)
def test_a_plain_read_list_or_search_says_what_it_reads(
    workspace: Path, command: str, title: str | None
) -> None:
    presentation = SHELL.present({"command": command}, [workspace])
    assert presentation.title == (title or f"Run `{command}`")
    assert presentation.kind is ToolKind.EXECUTE  # still a command, asked about as one


@pytest.fixture
def unregistrable(tmp_path: Path) -> Iterator[None]:
    """Groups registered nowhere: no reaper, and a file where the notes' folder should be."""
    taken = tmp_path / "jobs"
    taken.write_text("not a folder")
    before = process_groups()
    use_process_groups(GroupRegistry(taken, reaper=False))
    try:
        yield
    finally:
        use_process_groups(before)


@pytest.mark.usefixtures("unregistrable")
async def test_a_command_registered_nowhere_still_runs_and_the_person_is_told(
    workspace: Path,
) -> None:
    result = await Session([workspace]).run(SHELL, {"command": "echo hi"})
    assert "hi\n" in result.model_text
    assert not result.is_error
    assert "Note: this command could not be registered for cleanup (" in result.model_text
    assert result.model_text.endswith("if the agent is killed while it runs, it keeps running.")
    assert result.content == (TextContent(result.model_text),)
