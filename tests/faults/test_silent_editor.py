"""An editor that never answers, or answers with lines no one can read, never wedges a turn.

The agent sends the editor seven requests: `fs/read_text_file`,
`fs/write_text_file` and `terminal/create`, `output`, `wait_for_exit`, `kill`,
`release`. Here a real editor (real files, real process groups:
`tests.tools.editor.EditorBridge`) misbehaves on one of them at a time,
`silent` (no answer at all) or `garbage` (a line that is not UTF-8 and one that
is not complete JSON, then no answer). With the deadline set small
(`ACP_AGENT_EDITOR_TIMEOUT_S`), each prompt still ends normally, its call says
what is unknown, every request left unanswered is withdrawn with
`$/cancel_request` (the editor's late "cancelled" answer is dropped quietly),
a garbage line is answered -32700 (id null) with its first bytes logged, and
the agent goes on serving. `terminal/wait_for_exit` is exempt from the deadline
(a background job runs for hours): a job whose exit answer never comes ends once
a liveness poll (`terminal/output`) shows the exit.

One agent process serves all seven cases of a mode; the garbage mode's full
matrix is slow, a sample of it runs by default.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from tests.adapters.acp.support import calls_of
from tests.support import EditorClient, agent_env, running_agent, write_script
from tests.support.editor_client import allow_all
from tests.tools.editor import EditorBridge

pytestmark = pytest.mark.e2e

#: The deadline of each request to the editor in these tests.
TIMEOUT_S = "1"
#: A line that is not UTF-8, and one that is UTF-8 but not complete JSON.
GARBAGE = (
    b'{"jsonrpc":"2.0","id":"agent-1","result":{"content":"\xff\xfe',
    b'{"jsonrpc":"2.0","id":"agent-1","resu',
)

#: Per editor request: the tool call that makes the agent send it, and what the call's
#: result says once the editor fails to answer it (None: the call itself succeeds).
CASES: dict[str, tuple[str, dict[str, Any], str | None]] = {
    methods.FS_READ_TEXT_FILE: (
        "read",
        {"path": "note.txt"},
        "the editor did not answer reading",
    ),
    methods.FS_WRITE_TEXT_FILE: (
        "write",
        {"path": "written.txt", "content": "new\n"},
        "the editor did not confirm the write within 1 s: the file may have changed; "
        "read it before retrying",
    ),
    methods.TERMINAL_CREATE: (
        "shell",
        {"command": "echo started"},
        "the editor did not confirm starting the command within 1 s: it may be running",
    ),
    methods.TERMINAL_OUTPUT: (
        "shell",
        {"command": "echo output"},
        "The editor did not answer terminal/output within 1 s",
    ),
    # Exempt from the deadline: the job's end is seen by a liveness poll instead.
    methods.TERMINAL_WAIT_FOR_EXIT: (
        "shell",
        {"command": "echo job", "background": True},
        None,
    ),
    methods.TERMINAL_KILL: (
        "shell",
        {"command": "sleep 30", "timeout_s": 1},
        "The editor did not answer terminal/kill within 1 s: the command may still be running",
    ),
    methods.TERMINAL_RELEASE: ("shell", {"command": "echo released"}, None),
}

#: The garbage cases that run by default (the rest are slow).
GARBAGE_SAMPLE = (methods.FS_WRITE_TEXT_FILE,)


class FaultyEditor(EditorClient):
    """An editor that, for the method in `fault`, answers nothing or garbage."""

    def __init__(self, editor: EditorBridge, mode: str) -> None:
        super().__init__(editor=editor, decide=allow_all)
        self.mode = mode
        #: The method misbehaved on now (None: all are answered).
        self.fault: str | None = None
        #: How many garbage lines were written.
        self.garbage_lines = 0

    async def _misbehave(self, method: str) -> None:
        if method != self.fault:
            return
        if self.mode == "garbage":
            assert self.process is not None
            assert self.process.stdin is not None
            self.process.stdin.write(b"".join(line + b"\n" for line in GARBAGE))
            self.garbage_lines += len(GARBAGE)
        # No answer: until the agent withdraws the request ($/cancel_request), which
        # cancels this handler and answers -32800, late.
        await asyncio.Event().wait()

    async def _read(self, params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        await self._misbehave(methods.FS_READ_TEXT_FILE)
        return await super()._read(params)

    async def _write(self, params: types.WriteTextFileRequest) -> types.WriteTextFileResponse:
        await self._misbehave(methods.FS_WRITE_TEXT_FILE)
        return await super()._write(params)

    async def _create(self, params: types.CreateTerminalRequest) -> types.CreateTerminalResponse:
        await self._misbehave(methods.TERMINAL_CREATE)
        return await super()._create(params)

    async def _output(self, params: Any) -> types.TerminalOutputResponse:
        await self._misbehave(methods.TERMINAL_OUTPUT)
        return await super()._output(params)

    async def _wait(self, params: Any) -> types.WaitForTerminalExitResponse:
        await self._misbehave(methods.TERMINAL_WAIT_FOR_EXIT)
        return await super()._wait(params)

    async def _kill(self, params: Any) -> types.KillTerminalResponse:
        await self._misbehave(methods.TERMINAL_KILL)
        return await super()._kill(params)

    async def _release(self, params: Any) -> types.ReleaseTerminalResponse:
        await self._misbehave(methods.TERMINAL_RELEASE)
        return await super()._release(params)


def withdrawn(client: EditorClient) -> set[str]:
    """The ids of the requests the agent withdrew with `$/cancel_request`."""
    return {
        m["params"]["requestId"]
        for m in client.messages
        if m.get("method") == methods.CANCEL_REQUEST
    }


def result_text(updates: list[types.SessionUpdate], call_id: str) -> tuple[str, str]:
    """A call's final status and the text of its result."""
    last = calls_of(updates, call_id)[-1]
    texts = [
        part.content.text
        for part in last.content or []
        if isinstance(part, types.Content) and isinstance(part.content, types.TextContent)
    ]
    assert last.status is not None
    return last.status.value, "\n".join(texts)


async def run_cases(tmp_path: Path, mode: str, cases: list[str]) -> None:
    """Each case in turn on one agent; asserts what every mode must hold."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "note.txt").write_text("a note\n")
    replies: list[list[dict[str, Any]]] = []
    for method in cases:
        tool, arguments, _ = CASES[method]
        replies.append([{"tool_call": {"name": tool, "arguments": arguments, "id": method}}])
        replies.append([{"text": f"After {method}."}])
    script = write_script(tmp_path / "script.json", *replies)
    env = agent_env(ACP_AGENT_EDITOR_TIMEOUT_S=TIMEOUT_S)
    async with EditorBridge() as bridge:
        client = FaultyEditor(bridge, mode)
        async with running_agent(tmp_path / "home", script=script, env=env, client=client):
            session_id = await client.new_session(workspace)
            outcomes = {}
            asked: set[str] = set()
            for method in cases:
                client.fault = method
                start = len(client.received)
                answer = await client.prompt(session_id, f"Make the editor fail at {method}")
                if method == methods.TERMINAL_WAIT_FOR_EXIT:
                    # The job ended without its exit answer: its terminal is released.
                    await client.wait_until(
                        lambda: (methods.TERMINAL_RELEASE, "term-2") in bridge.calls
                    )
                outcomes[method] = (
                    answer.stop_reason,
                    result_text(client.updates_for(session_id), method),
                )
                asked |= {m["id"] for m in client.messages[start:] if m.get("method") == method}
            client.fault = None
            # Every request left unanswered is withdrawn.
            await client.wait_until(lambda: asked <= withdrawn(client))
            # Still serving.
            assert (await client.list_sessions()).sessions != []

    for method in cases:
        stop_reason, (status, text) = outcomes[method]
        expected = CASES[method][2]
        assert stop_reason == types.StopReason.END_TURN, method
        if expected is None:
            assert status == "completed", (method, text)
        else:
            assert status == "failed", (method, text)
            assert expected in text, (method, text)
    assert len(asked) >= len(cases)
    # The editor's late answers (-32800, once withdrawn) were dropped quietly.
    assert not any("unknown request id" in line for line in client.stderr_lines)
    if mode == "garbage":
        unreadable = [
            m
            for m in client.messages
            if "id" in m and m["id"] is None and m.get("error", {}).get("code") == -32700
        ]
        assert len(unreadable) == client.garbage_lines
        logged = "".join(client.stderr_lines)
        assert "Could not read a line from the peer" in logged
        assert repr(GARBAGE[0][:200]) in logged


async def test_an_editor_that_never_answers_fails_each_request_at_its_deadline(tmp_path: Path):
    await run_cases(tmp_path, "silent", list(CASES))


@pytest.mark.parametrize(
    "cases",
    [
        pytest.param(list(GARBAGE_SAMPLE), id="sample"),
        pytest.param(
            [method for method in CASES if method not in GARBAGE_SAMPLE],
            id="rest",
            marks=pytest.mark.slow,
        ),
    ],
)
async def test_an_editor_answering_garbage_fails_each_request_at_its_deadline(
    tmp_path: Path, cases: list[str]
):
    await run_cases(tmp_path, "garbage", cases)
