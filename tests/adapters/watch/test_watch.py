"""`acp-agent watch --plain` against a real server: every event in order, answering and cancelling.

A real server plays a scripted session: a turn with two branches working
concurrently (one runs a command), a background job (permission questions, in
the `ask` mode the tests run in) and a last reply; a second turn that the
watcher cancels; the server restarted; a third turn. The editor is a socket
client that never attaches (as over stdio) and never answers: `watch
--control` answers the questions (the branch's on the branch's own session),
and the editor sees them resolved by the watcher. Watch advertises
`subagents: {}`: the branches reach it as child sessions, each line of theirs
labelled with the branch's title, and after the restart each resumes after
the last cursor watch got on it. The watcher's lines are then held against a
full replay of the session by a client attaching afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from protocol import types
from tests.support import agent_env, write_script
from tests.support.app_server import ServerProcess, running_server, socket_client
from tests.support.processes import run_unread

pytestmark = pytest.mark.e2e

#: What one wait for the watcher's output may take (a loaded 2-core machine).
_WAIT_S = 30.0

REPLIES = [
    [
        {"text": "Starting."},
        {"tool_call": {"name": "branch", "arguments": {"task": "Lint it", "title": "lint"}}},
        {"tool_call": {"name": "branch", "arguments": {"task": "Test it", "title": "tests"}}},
        {
            "tool_call": {
                "name": "shell",
                "arguments": {"command": "sleep 0.3; echo job-done", "background": True},
            }
        },
    ],
    [{"tool_call": {"name": "branch_wait", "arguments": {"all": True, "timeout_s": 30}}}],
    [{"text": "All done."}],
    [{"text": "Thinking"}, {"sleep_ms": 30000}, {"text": " never shown"}],
    [{"text": "Back again."}],
]
BRANCHES = [
    {
        "title": "lint",
        "replies": [
            [
                {"text": "linting "},
                {"tool_call": {"name": "shell", "arguments": {"command": "echo lint-ok"}}},
            ],
            [{"text": "lint "}, {"sleep_ms": 300}, {"text": "clean"}],
        ],
    },
    {"title": "tests", "replies": [[{"text": "tests "}, {"sleep_ms": 300}, {"text": "pass"}]]},
]


class Watcher:
    """`acp-agent watch` as a process: its stdout lines as they come, its stdin."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self._more = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            text = line.decode().rstrip("\n")
            sys.stderr.write(f"watch| {text}\n")
            self.lines.append(text)
            self._more.set()

    async def wait_for(self, wanted: Callable[[str], bool], *, after: int = 0) -> int:
        """The index of the first line from `after` on that `wanted` holds for."""
        async with asyncio.timeout(_WAIT_S):
            while True:
                for i in range(after, len(self.lines)):
                    if wanted(self.lines[i]):
                        return i
                self._more.clear()
                await self._more.wait()

    async def type(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()


@contextlib.asynccontextmanager
async def watching(socket: Path, *args: str) -> AsyncIterator[Watcher]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acp_agent",
        "watch",
        "--socket",
        str(socket),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    watcher = Watcher(process)
    try:
        yield watcher
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 10)
        await watcher._reader


def cursor_key(cursor: str) -> tuple[int, int]:
    seq, _, part = cursor.partition(":")
    return int(seq), int(part) if part else 1_000_000


#: Updates not made of one of the session's events: they carry the position reached.
_AT_A_POSITION = ("commands", "branch", "message")


def shown(lines: list[str]) -> list[tuple[str, str, str]]:
    """(cursor, label, text) of the lines made of the session's events (not commands, nor
    the branches' announcements and messages: the branches' own doings)."""
    found = []
    for line in lines:
        cursor, label, text = [*line.split(" ", 2), "", ""][:3]
        if re.fullmatch(r"\d+(:\d+)?", cursor) and label not in _AT_A_POSITION:
            found.append((cursor, label, text))
    return found


def agent_text(events: list[tuple[str, str, str]]) -> str:
    return "".join(json.loads(text) for _, label, text in events if label == "agent")


async def test_watch_plain_follows_every_event_in_order_answers_cancels_and_reconnects(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    script = write_script(tmp_path / "script.json", *REPLIES, branches=BRANCHES)
    async with (
        running_server(home, script=script) as server,
        socket_client(server.socket) as editor,  # never answers, never attaches
    ):
        session_id = await editor.new_session(work)
        async with watching(server.socket, session_id[:12], "--plain", "--control") as w:
            attached = await w.wait_for(lambda line: "# attached to" in line)
            client_id = re.search(r"\((client-\d+)\)", w.lines[attached])
            assert client_id is not None

            turn = asyncio.create_task(editor.prompt(session_id, "Lint, test, and a job"))
            # Two questions, the main line's and the lint branch's, in whichever order.
            asked = -1
            for _ in range(2):
                asked = await w.wait_for(lambda line: " question " in line, after=asked + 1)
                await w.type("y")
            [job_question] = [line for line in w.lines if line.startswith("- question ")]
            assert "sleep 0.3; echo job-done" in job_question
            [lint_question] = [line for line in w.lines if line.startswith("- [lint] question ")]
            assert '$ "echo lint-ok"' in lint_question
            response = await asyncio.wait_for(turn, _WAIT_S)
            assert response.stop_reason == types.StopReason.END_TURN
            # The editor's own requests were withdrawn: the watcher answered them (the
            # branch's on its own session; the editor was asked it on the branch's row).
            await editor.wait_until(
                lambda: (
                    len([m for m, _ in editor.notices if m.endswith("permission_resolved")]) == 2
                )
            )
            resolved = [p for m, p in editor.notices if m.endswith("permission_resolved")]
            assert {p["resolvedBy"] for p in resolved} == {client_id.group(1)}
            assert {p["outcome"]["outcome"] for p in resolved} == {"selected"}
            assert {p["sessionId"] for p in resolved} == {session_id}
            assert any(p["toolCallId"].startswith("show_") for p in resolved)

            job_end = await w.wait_for(lambda line: " job " in line and " exited " in line)
            assert "job-done" in w.lines[job_end]
            await w.wait_for(lambda line: '"All done."' in line)

            second = asyncio.create_task(editor.prompt(session_id, "Think long"))
            await w.wait_for(lambda line: '"Thinking"' in line)
            await w.type("/cancel")
            response = await asyncio.wait_for(second, _WAIT_S)
            assert response.stop_reason == types.StopReason.CANCELLED

            # The server restarts: the watcher resumes after its cursor.
            await server.stop()
            gone = await w.wait_for(lambda line: "the server went away" in line)
            async with running_server(home, script=script) as again:
                await w.wait_for(lambda line: "# attached to" in line, after=gone)
                async with socket_client(again.socket) as later_editor:
                    await later_editor.load(session_id, work)
                    third = await later_editor.prompt(session_id, "Once more")
                    assert third.stop_reason == types.StopReason.END_TURN
                await w.wait_for(lambda line: '"Back again."' in line, after=gone)
                replayed = await _replay(again, session_id)
                # The turn's last events (its end, the title) may reach the watcher after
                # its words: wait until it showed the replay's last event too.
                last = max(cursor_key(c)[0] for c, _, _ in replayed)
                await w.wait_for(
                    lambda line: any(cursor_key(c)[0] >= last for c, _, _ in shown([line])),
                    after=gone,
                )
                lines = list(w.lines)

    events = shown(lines)
    # In order, none twice, across the restart.
    keys = [cursor_key(cursor) for cursor, _, _ in events]
    assert keys == sorted(keys)
    assert len(keys) == len(set(keys))
    # Every event of the session's replay is among the watcher's, and the text is whole.
    watched_seqs = {key[0] for key in keys}
    assert {cursor_key(c)[0] for c, _, _ in replayed} <= watched_seqs
    assert agent_text(events) == agent_text(replayed)
    assert agent_text(events) == "Starting.All done.ThinkingBack again."

    def first(wanted: Callable[[str], bool]) -> int:
        return next(i for i, line in enumerate(lines) if wanted(line))

    # The branches as two child sessions: announced on the session, their words on their
    # own (labelled with their titles), each done and reporting to the main line; no
    # branch came as a row of the main line.
    for title, words, report in (
        ("lint", "linting lint clean", "lint clean"),
        ("tests", "tests pass", "tests pass"),
    ):
        [child_id] = {
            line.split(" ")[2] for line in lines if re.match(rf'\d+ branch \S+ "{title}"', line)
        }
        said = [
            json.loads(line.split(" ", 3)[3])
            for line in lines
            if line.startswith(f"- [{title}] agent ")
        ]
        assert "".join(said) == words  # once: none again after the restart
        assert f"branch {child_id} done" in "\n".join(lines)
        reported = f'message {child_id} -> {session_id} "{report}"'
        assert any(line.split(" ", 1)[1] == reported for line in lines)
    assert not [line for line in lines if '"Branch: ' in line]
    # The order a person saw: the question, the job started after its answer and ended
    # (whenever its command did), the reply, the cancel, the restart, the third turn.
    asked = first(lambda line: line.startswith("- question "))
    assert first(lambda line: line.startswith("- [lint] tool ")) < first(
        lambda line: line.startswith("- [lint] question ")
    )
    job_started = first(lambda line: " job " in line and " running " in line)
    assert asked < job_started < first(lambda line: " job " in line and " exited " in line)
    order = [
        asked,
        first(lambda line: '"All done."' in line),
        first(lambda line: "# cancel sent" in line),
        first(lambda line: "the server went away" in line),
        first(lambda line: '"Back again."' in line),
    ]
    assert order == sorted(order)


async def _replay(server: ServerProcess, session_id: str) -> list[tuple[str, str, str]]:
    """A full replay of the session to a client attaching now, as `watch --plain` lines."""
    from acp_agent.adapters.watch._lines import update_line
    from tests.support.app_server import cursor_of

    subagents = types.ClientCapabilities(subagents=types.SubagentCapabilities())
    async with socket_client(server.socket, capabilities=subagents) as late:
        await late.attach(session_id, role="observer", replay="start")
        converter = late.protocol.converter

        def text() -> str:
            return "".join(
                u.content.text
                for u in late.updates_for(session_id)
                if isinstance(u, types.AgentMessageChunk)
                and isinstance(u.content, types.TextContent)
            )

        await late.wait_until(lambda: text().endswith("Back again."))
        found = []
        for notification in late.updates:
            cursor = cursor_of(notification)
            if notification.session_id != session_id or cursor is None:
                continue
            label, said = update_line(converter.unstructure(notification.update))
            if label not in _AT_A_POSITION:
                found.append((cursor, label, said))
        return found


async def test_watch_lists_the_sessions_and_a_controller_sends_a_message(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    script = write_script(tmp_path / "script.json", [{"text": "Hi"}, {"text": " there."}])
    async with (
        running_server(home, script=script) as server,
        socket_client(server.socket) as editor,
    ):
        session_id = await editor.new_session(work)
        listing = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "acp_agent",
            "watch",
            "--socket",
            str(server.socket),
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await asyncio.wait_for(listing.communicate(), _WAIT_S)
        assert listing.returncode == 0
        [line] = out.decode().splitlines()
        assert line.startswith(f"{session_id}  ")
        assert line.endswith(str(work))

        async with watching(server.socket, session_id, "--plain", "--control") as w:
            await w.wait_for(lambda line: "# attached to" in line)
            await w.type("Say hello")
            ended = await w.wait_for(lambda line: "# your turn ended: end_turn" in line)
            events = shown(w.lines[:ended])
            assert [label for _, label, _ in events if label in ("you", "agent")] == [
                "you",
                "agent",
                "agent",
            ]
            assert agent_text(events) == "Hi there."
        # The watcher's message is the session's: a client loading it sees it.
        async with socket_client(server.socket) as late:
            await late.load(session_id, work)
            said = [
                u.content.text
                for u in late.updates_for(session_id)
                if isinstance(u, types.UserMessageChunk)
                and isinstance(u.content, types.TextContent)
            ]
            assert said == ["Say hello"]


@pytest.mark.parametrize("follow", [False, True], ids=["listing", "following"])
async def test_watch_whose_reader_went_away_ends_quietly(tmp_path: Path, follow: bool) -> None:
    # `acp-agent watch | true`: the listing, or the session followed, meets a closed pipe.
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    script = write_script(tmp_path / "script.json", [{"text": "Hi"}])
    async with (
        running_server(home, script=script) as server,
        socket_client(server.socket) as editor,
    ):
        session_id = await editor.new_session(work)
        await editor.prompt(session_id, "Hello")  # something to replay when following
        command = [sys.executable, "-m", "acp_agent", "watch", "--socket", str(server.socket)]
        if follow:
            command += [session_id, "--plain"]

        def show_to_no_one() -> tuple[int, str]:
            return run_unread(command, env=agent_env(), timeout_s=_WAIT_S)

        assert await asyncio.to_thread(show_to_no_one) == (141, "")  # 128 + SIGPIPE
