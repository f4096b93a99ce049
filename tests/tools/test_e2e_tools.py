"""The tools end to end: the real agent over stdio, a scripted model, two kinds of editor.

Every test runs twice: with a client that implements `fs/*` and `terminal/*`
(real files, real subprocesses, `EditorBridge`) and with one that advertises
neither, so the agent falls back to the local disk and local processes.
What is checked is what the editor receives: `tool_call` / `tool_call_update`
notifications, the files on disk, and the processes left alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import stat
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from tests.support import EditorClient, running_agent
from tests.support.editor_client import Decision, allow_all, reject_outside
from tests.support.steps import prompt_request
from tests.tools.editor import EditorBridge
from tests.tools.processes import TREE, alive, all_dead, pids_in

pytestmark = pytest.mark.e2e

MODES = ("editor", "no-client")


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = (tmp_path / "workspace").resolve()
    root.mkdir()
    return root


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    """A scripted model step proposing one tool call."""
    return {"tool_call": {"name": name, "arguments": arguments, "id": call_id}}


class Agent:
    """The agent process, its session in `workspace`, and the editor serving it."""

    def __init__(self, client: EditorClient, editor: EditorBridge | None, workspace: Path):
        self.client = client
        self.editor = editor
        self.workspace = workspace
        self.session_id = ""

    async def open_session(self) -> None:
        response = await self.client.request(
            methods.SESSION_NEW,
            types.NewSessionRequest(cwd=str(self.workspace), mcp_servers=[]),
        )
        self.session_id = str(response.session_id)

    async def prompt(self) -> types.PromptResponse:
        response: types.PromptResponse = await self.client.request(
            methods.SESSION_PROMPT, prompt_request(self.session_id)
        )
        return response

    def updates(self) -> list[dict[str, Any]]:
        """The session's updates as the editor received them (JSON)."""
        return [
            message["params"]["update"]
            for message in self.client.messages
            if message.get("method") == methods.SESSION_UPDATE
            and message["params"]["sessionId"] == self.session_id
        ]

    def tool_call(self, call_id: str) -> list[dict[str, Any]]:
        """Every `tool_call` / `tool_call_update` for `call_id`, in order."""
        found = [
            update
            for update in self.updates()
            if update["sessionUpdate"] in ("tool_call", "tool_call_update")
            and update["toolCallId"] == call_id
        ]
        assert found, f"no tool call {call_id}"
        assert found[0]["sessionUpdate"] == "tool_call"
        return found

    def final(self, call_id: str) -> dict[str, Any]:
        """The update that ended `call_id` (status completed or failed)."""
        ended = [u for u in self.tool_call(call_id) if u.get("status") in ("completed", "failed")]
        assert ended, f"tool call {call_id} never ended"
        return ended[-1]


@contextlib.asynccontextmanager
async def scripted_session(
    tmp_path: Path,
    workspace: Path,
    mode: str,
    replies: list[list[dict[str, Any]]],
    *,
    decide: Decision = allow_all,
    terminals: bool = True,
    refuse_writes: bool = False,
    umask: int = -1,
) -> AsyncIterator[Agent]:
    """The real agent playing `replies`, with a session open in `workspace`.

    In mode "editor" the client serves `fs/*` and (unless `terminals` is false)
    `terminal/*` from an `EditorBridge`, and shows Zed's `_meta.terminal_output`;
    in mode "no-client" it offers nothing. `umask`: the agent's umask (-1 leaves
    this process's).
    """
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [*replies, [{"text": "Done."}]]}))
    async with contextlib.AsyncExitStack() as stack:
        editor = (
            await stack.enter_async_context(
                EditorBridge(
                    has_terminals=terminals,
                    streams_terminal_output=True,
                    refuse_writes=refuse_writes,
                )
            )
            if mode == "editor"
            else None
        )
        client = EditorClient(editor=editor, decide=decide)
        async with running_agent(tmp_path / "home", script=script, client=client, umask=umask):
            agent = Agent(client, editor, workspace)
            await agent.open_session()
            yield agent


def diff_of(update: dict[str, Any]) -> list[dict[str, Any]]:
    """The diffs of an update (an omitted `oldText` read as null: a new file)."""
    return [
        {"oldText": None, **part} for part in update.get("content") or [] if part["type"] == "diff"
    ]


def text_of(update: dict[str, Any]) -> str:
    return "".join(
        part["content"].get("text", "")
        for part in update.get("content") or []
        if part["type"] == "content"
    )


async def test_a_write_the_editor_refuses_fails_saying_so_and_writes_nothing(
    tmp_path: Path, workspace: Path
) -> None:
    # acpx without --approve-all answers fs/write_text_file with an internal error: that
    # is the editor's choice, reported as such (it was "InternalError", with a traceback).
    replies = [[call("w", "write", path="new.txt", content="hi\n")]]
    async with scripted_session(
        tmp_path, workspace, "editor", replies, refuse_writes=True
    ) as agent:
        response = await agent.prompt()
    assert response.stop_reason == types.StopReason.END_TURN
    refused = agent.final("w")
    assert refused["status"] == "failed"
    assert text_of(refused).startswith(
        "The write tool stopped: the editor refused fs/write_text_file ("
    )
    assert not (workspace / "new.txt").exists()


async def test_an_edit_conflict_is_refused_and_succeeds_after_a_fresh_read(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    file = workspace / "a.py"
    file.write_text("x = 1\ny = 2\n")
    replies = [
        [call("read_1", "read", path="a.py")],
        [call("change", "shell", command="printf 'x = 1\\ny = 3\\n' > a.py")],
        [call("edit_1", "edit", path="a.py", old_text="x = 1", new_text="x = 10")],
        [call("read_2", "read", path="a.py")],
        [call("edit_2", "edit", path="a.py", old_text="x = 1", new_text="x = 10")],
    ]
    async with scripted_session(tmp_path, workspace, mode, replies) as agent:
        response = await agent.prompt()
    assert response.stop_reason == types.StopReason.END_TURN
    refused = agent.final("edit_1")
    assert refused["status"] == "failed"
    assert text_of(refused) == (  # the person reads what happened; the model, what to do too
        "a.py changed after it was last read (the person, a program or another branch changed it)"
    )
    succeeded = agent.final("edit_2")
    assert succeeded["status"] == "completed"
    assert diff_of(succeeded) == [
        {
            "type": "diff",
            "path": str(file),
            "oldText": "x = 1\ny = 3\n",
            "newText": "x = 10\ny = 3\n",
        }
    ]
    assert file.read_text() == "x = 10\ny = 3\n"
    if agent.editor is not None:
        assert ("fs/write_text_file", str(file)) in agent.editor.calls


@pytest.mark.parametrize("umask", [0o027, 0o002], ids=oct)
async def test_a_new_file_written_on_disk_gets_the_umask_mode_and_an_existing_one_keeps_its_own(
    tmp_path: Path, workspace: Path, umask: int
) -> None:
    script = workspace / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o751)
    replies = [
        [
            call("w1", "write", path="notes/new.txt", content="new\n"),
            call("r1", "read", path="run.sh"),
        ],
        [call("e1", "edit", path="run.sh", old_text="hi", new_text="there")],
    ]
    async with scripted_session(tmp_path, workspace, "no-client", replies, umask=umask) as agent:
        await agent.prompt()
    assert [agent.final(call_id)["status"] for call_id in ("w1", "e1")] == ["completed"] * 2
    new = workspace / "notes" / "new.txt"
    assert new.read_text() == "new\n"
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(new.parent.stat().st_mode) == 0o777 & ~umask
    assert script.read_text() == "echo there\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751


async def test_crlf_and_non_utf8_files_round_trip_and_their_diffs_match_exactly(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    crlf, legacy = workspace / "win.txt", workspace / "legacy.txt"
    crlf.write_bytes(b"alpha\r\nbeta\r\ngamma")
    legacy.write_bytes("prix: 5 \u20ac\ncaf\u00e9\n".encode("cp1252"))
    replies = [
        [call("r1", "read", path="win.txt"), call("r2", "read", path="legacy.txt")],
        [
            call("e1", "edit", path="win.txt", old_text="alpha\nbeta", new_text="one\ntwo"),
            call("e2", "edit", path="legacy.txt", old_text="caf\u00e9", new_text="th\u00e9"),
        ],
    ]
    async with scripted_session(tmp_path, workspace, mode, replies) as agent:
        await agent.prompt()
    assert crlf.read_bytes() == b"one\r\ntwo\r\ngamma"
    assert legacy.read_bytes() == "prix: 5 \u20ac\nth\u00e9\n".encode("cp1252")
    assert diff_of(agent.final("e1")) == [
        {
            "type": "diff",
            "path": str(crlf),
            "oldText": "alpha\r\nbeta\r\ngamma",
            "newText": "one\r\ntwo\r\ngamma",
        }
    ]
    assert diff_of(agent.final("e2")) == [
        {
            "type": "diff",
            "path": str(legacy),
            "oldText": "prix: 5 \u20ac\ncaf\u00e9\n",
            "newText": "prix: 5 \u20ac\nth\u00e9\n",
        }
    ]


async def test_a_symlink_leading_out_of_the_workspace_asks_and_a_refusal_touches_nothing(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    outside = (tmp_path / "outside").resolve()
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("top secret\n")
    (workspace / "notes.txt").symlink_to(secret)
    replies = [
        [call("peek", "read", path="notes.txt")],
        [call("clobber", "write", path="notes.txt", content="gone\n")],
    ]
    async with scripted_session(
        tmp_path, workspace, mode, replies, decide=reject_outside(workspace)
    ) as agent:
        await agent.prompt()
    asked = {request.tool_call.tool_call_id for request in agent.client.permission_requests}
    assert {"peek", "clobber"} <= asked
    for call_id in ("peek", "clobber"):
        ended = agent.final(call_id)
        assert ended["status"] == "failed"
        assert "top secret" not in json.dumps(agent.tool_call(call_id))
    assert secret.read_text() == "top secret\n"
    if agent.editor is not None:
        assert all(path != str(secret) for _, path in agent.editor.calls)


async def test_cancel_kills_sleep_1000_and_its_grandchildren(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    replies = [[call("tree", "shell", command=TREE)]]
    async with scripted_session(tmp_path, workspace, mode, replies) as agent:
        turn = asyncio.create_task(agent.prompt())
        pids = await pids_in(workspace, ["shell.pid", "child.pid", "grandchild.pid"])
        assert all(alive(pid) for pid in pids)
        agent.client.notify(
            methods.SESSION_CANCEL, types.CancelNotification(session_id=agent.session_id)
        )
        response = await asyncio.wait_for(turn, timeout=10)
        assert response.stop_reason == types.StopReason.CANCELLED
        assert await all_dead(pids)
        if agent.editor is not None:
            assert agent.editor.methods()[-1] == "terminal/release"
            assert all(terminal.released for terminal in agent.editor.terminals)


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


async def test_fifty_megabytes_of_output_are_capped_without_memory_blowup(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    size = 50 * 1024 * 1024
    command = f"echo FIRST; yes 0123456789abcdef | head -c {size}; echo; echo LAST"
    replies = [[call("flood", "shell", command=command)]]
    async with scripted_session(tmp_path, workspace, mode, replies) as agent:
        assert agent.client.process is not None
        before = _peak_rss_kb(agent.client.process.pid)
        await agent.prompt()
        grown_kb = _peak_rss_kb(agent.client.process.pid) - before
    assert grown_kb < 40 * 1024, f"the agent's peak memory grew by {grown_kb} KiB"
    ended = agent.final("flood")
    raw = ended["rawOutput"]
    assert raw["truncated"] is True
    assert raw["exit_code"] == 0
    if mode == "editor":
        assert ended["content"] == [{"type": "terminal", "terminalId": raw["terminal_id"]}]
    else:
        shown = text_of(ended)
        assert "FIRST" in shown
        assert "LAST" in shown
        assert "bytes of output omitted" in shown
        assert len(shown) < 64 * 1024


async def test_gitignored_files_are_skipped_by_grep_and_glob(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    (workspace / ".gitignore").write_text("dist/\n*.gen.py\n")
    for name in ("src/app.py", "src/schema.gen.py", "dist/bundle.py"):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("needle = 1\n")
    replies = [[call("g", "grep", pattern="needle"), call("f", "glob", pattern="**/*.py")]]
    async with scripted_session(tmp_path, workspace, mode, replies) as agent:
        await agent.prompt()
    grep, glob = agent.final("g"), agent.final("f")
    assert [m["path"] for m in grep["rawOutput"]["matches"]] == [str(workspace / "src/app.py")]
    assert glob["rawOutput"]["files"] == [str(workspace / "src/app.py")]
    assert grep["locations"] == [{"path": str(workspace / "src/app.py"), "line": 1}]


async def test_a_new_file_and_a_deletion_show_whole_file_diffs(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    replies = [
        [call("w", "write", path="pkg/new.py", content="print('hi')\n")],
        [call("d", "delete", path="pkg/new.py")],
    ]
    async with scripted_session(tmp_path, workspace, mode, replies) as agent:
        await agent.prompt()
    path = str(workspace / "pkg/new.py")
    assert diff_of(agent.final("w")) == [
        {"type": "diff", "path": path, "oldText": None, "newText": "print('hi')\n"}
    ]
    assert diff_of(agent.final("d")) == [
        {"type": "diff", "path": path, "oldText": "print('hi')\n", "newText": ""}
    ]
    assert not (workspace / "pkg/new.py").exists()


async def test_without_client_terminals_zeds_terminal_meta_streams_a_local_run(
    tmp_path: Path, workspace: Path
) -> None:
    replies = [[call("zed", "shell", command="echo one; sleep 0.2; echo two; exit 4")]]
    async with scripted_session(tmp_path, workspace, "editor", replies, terminals=False) as agent:
        await agent.prompt()
        assert agent.editor is not None
        assert agent.editor.terminals == []  # never asked for a client terminal
    updates = agent.tool_call("zed")
    metas = [u.get("_meta") or {} for u in updates]
    info = next(m["terminal_info"] for m in metas if "terminal_info" in m)
    assert info["cwd"] == str(workspace)
    terminal_id = info["terminal_id"]
    streamed = "".join(
        m["terminal_output"]["data"]
        for m in metas
        if "terminal_output" in m and m["terminal_output"]["terminal_id"] == terminal_id
    )
    assert streamed == "one\ntwo\n"
    ended = agent.final("zed")
    assert ended["_meta"]["terminal_exit"] == {
        "terminal_id": terminal_id,
        "exit_code": 4,
        "signal": None,
    }
    assert {"type": "terminal", "terminalId": terminal_id} in ended["content"]


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><head><title>Notes</title></head><body><p>Hello <b>there</b></p></body>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def local_site() -> Iterator[str]:
    """An HTTP server on localhost serving one HTML page; yields its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/notes"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_one_call_of_each_kind_reaches_the_editor_with_title_locations_and_raw_io(
    tmp_path: Path, workspace: Path, mode: str
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src/app.py").write_text("def main():\n    return 1\n")
    (workspace / "old.txt").write_text("moving\n")
    (workspace / "tmp.txt").write_text("bye\n")
    with local_site() as url:
        replies = [
            [call("read", "read", path="src/app.py", offset=1, limit=2)],
            [call("edit", "edit", path="src/app.py", old_text="return 1", new_text="return 2")],
            [call("delete", "delete", path="tmp.txt")],
            [call("move", "move", source="old.txt", destination="new.txt")],
            [call("search", "grep", pattern="return", path="src")],
            [call("execute", "shell", command="echo hello")],
            [call("think", "plan", entries=[{"content": "Fix main", "status": "in_progress"}])],
            [call("fetch", "fetch", url=url)],
        ]
        async with scripted_session(tmp_path, workspace, mode, replies) as agent:
            await agent.prompt()
    app = str(workspace / "src/app.py")
    expected_titles = {
        "read": "Read src/app.py:1-2",
        "edit": "Edit src/app.py",
        "delete": "Delete tmp.txt",
        "move": "Move old.txt → new.txt",
        "search": "Search 'return' in src",
        "execute": "Run `echo hello`",
        "think": "Update plan",
        "fetch": f"Fetch {url}",
    }
    for kind, title in expected_titles.items():
        started, ended = agent.tool_call(kind)[0], agent.final(kind)
        assert (started["kind"], started["title"]) == (kind, title)
        assert started["rawInput"]
        assert ended["status"] == "completed", ended
        assert "rawOutput" in ended
    assert agent.tool_call("read")[0]["locations"] == [{"path": app, "line": 1}]
    assert agent.final("edit")["locations"] == [{"path": app, "line": 2}]
    assert agent.final("search")["locations"] == [{"path": app, "line": 2}]
    assert "# Notes\n\nHello there" in text_of(agent.final("fetch"))
    plans = [u for u in agent.updates() if u["sessionUpdate"] == "plan"]
    assert plans == [
        {
            "sessionUpdate": "plan",
            "entries": [{"content": "Fix main", "priority": "medium", "status": "in_progress"}],
        }
    ]
