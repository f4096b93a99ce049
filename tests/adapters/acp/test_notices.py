"""`notice` updates: what a person should know that is not a reply.

Unit tests hold the ACP side to its rules (only for a client that advertised
`session.notices`, only while a prompt is open, held until the next prompt's
start, never on a replay); one end-to-end test runs the stdio agent: an MCP
server that fails between prompts is told as the first prompt starts, a job's
end during it, and a `session/load` by the same kind of client replays neither.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from acp_agent.adapters.acp._notices import NoticeOutbox
from acp_agent.adapters.acp._prompt_turn import _storage_failed
from acp_agent.adapters.acp._updates import UpdateTranslator
from acp_agent.agent import StoreFull
from acp_agent.capabilities.context import compaction_view
from acp_agent.core import BatchId, BranchId, CompactionFailed, Event, JobEndShown, Seq
from acp_agent.toolkit import Notice, NoticeSeverity
from protocol import types
from tests.support import EditorClient, running_agent, write_script
from tests.support.editor_client import allow_all

NOTICES = types.ClientCapabilities(
    session=types.ClientSessionCapabilities(notices=types.NoticeCapabilities())
)


class Sent:
    """Stands in for a session's stream: keeps what is sent."""

    def __init__(self) -> None:
        self.updates: list[types.SessionUpdate] = []

    def send(self, update: types.SessionUpdate, *, seq: int | None = None) -> None:
        self.updates.append(update)


def titles(updates: list[types.SessionUpdate]) -> list[str]:
    return [u.title for u in updates if isinstance(u, types.Notice)]


def lost(name: str) -> Notice:
    return Notice(NoticeSeverity.WARNING, f"Language server {name} stopped", "It exited.")


def test_notices_between_prompts_wait_for_the_next_prompt_and_go_out_once_in_order() -> None:
    sent = Sent()
    outbox = NoticeOutbox(sent, shown=True)  # type: ignore[arg-type]

    outbox.post(lost("ruff"))
    outbox.post(lost("pyright"))
    outbox.post(lost("ruff"))  # the same again while held: once is enough
    before_prompt = list(sent.updates)
    with outbox.prompt_open():
        at_start = titles(sent.updates)
        outbox.post(Notice(NoticeSeverity.INFO, "Language server ruff is back"))
        during = titles(sent.updates)
    outbox.post(lost("ruff"))  # after the answer: held again
    after_prompt = titles(sent.updates)

    assert before_prompt == []
    assert at_start == ["Language server ruff stopped", "Language server pyright stopped"]
    assert during == [*at_start, "Language server ruff is back"]
    assert after_prompt == during
    [first] = sent.updates[:1]
    assert isinstance(first, types.Notice)
    assert (first.severity, first.description) == (types.NoticeSeverity.WARNING, "It exited.")


def test_a_client_that_takes_no_notices_gets_none_even_during_a_prompt() -> None:
    sent = Sent()
    outbox = NoticeOutbox(sent, shown=False)  # type: ignore[arg-type]
    outbox.post(lost("ruff"))
    with outbox.prompt_open():
        outbox.post(lost("pyright"))
    with outbox.prompt_open():
        pass
    assert sent.updates == []


def job_end(state: str, exit_code: int | None, outcome: str) -> Event:
    shown = JobEndShown(
        "job_1a2b3c4d5e6f",
        "job_1a2b3c4d5e6f.ended",
        "pytest -q",
        state,
        outcome,
        exit_code,
        None,
        2.5,
    )
    return _event(shown)


def _event(payload: Any) -> Event:
    return Event(BranchId("main"), Seq(1), BatchId("b1"), payload, "test", 0.0)


@pytest.mark.parametrize(
    ("state", "exit_code", "outcome", "severity"),
    [
        ("exited", 0, "exited with code 0", types.NoticeSeverity.INFO),
        ("exited", 1, "exited with code 1", types.NoticeSeverity.WARNING),
        ("stopped", None, "was stopped by you", types.NoticeSeverity.INFO),
        ("lost", None, "was lost: the agent could no longer follow it", "warning"),
    ],
)
def test_a_jobs_end_is_a_row_and_live_a_notice_of_honest_severity(
    state: str, exit_code: int | None, outcome: str, severity: Any
) -> None:
    event = job_end(state, exit_code, outcome)

    live = UpdateTranslator(notices=True).translate(event)
    replayed = UpdateTranslator(notices=True, replay=True).translate(event)
    unasked = UpdateTranslator(notices=False).translate(event)

    row, notice = live
    assert isinstance(row, types.ToolCall)
    assert isinstance(notice, types.Notice)
    assert notice.severity == types.NoticeSeverity(severity)
    assert notice.title == f'Background job "pytest -q" {outcome}'
    assert notice.description == (
        "It ran 2.5 s. Started by the main line; /jobs job_1a2b3c4d shows its output."
    )
    assert replayed == unasked == [row]  # never on a replay; none unasked


def test_a_failed_compaction_is_live_a_warning_notice_and_never_on_replay() -> None:
    event = _event(CompactionFailed("cmp_1", "the model gave no summary"))
    assert compaction_view(event.payload) is not None

    live = UpdateTranslator(notices=True, compaction_updates=True).translate(event)
    replayed = UpdateTranslator(notices=True, replay=True, compaction_updates=True).translate(event)

    update, notice = live
    assert isinstance(update, types.CompactionUpdate)
    assert notice == types.Notice(
        severity=types.NoticeSeverity.WARNING,
        title="Compaction failed",
        description="the model gave no summary",
    )
    assert replayed == [update]


@pytest.mark.parametrize("shown", [True, False])
def test_a_turn_the_full_disk_stopped_is_told_as_a_notice_or_else_as_a_message(
    shown: bool,
) -> None:
    sent = Sent()
    outbox = NoticeOutbox(sent, shown=shown)  # type: ignore[arg-type]
    session = SimpleNamespace(session_id="s", notices=outbox, stream=sent)

    with outbox.prompt_open():
        answer = _storage_failed(session, StoreFull("no room", location="/d/s.db"), None)  # type: ignore[arg-type]

    assert answer.meta == {"acp-agent": {"error": {"kind": "storage_full", "message": "no room"}}}
    [told] = sent.updates
    if shown:
        assert isinstance(told, types.Notice)
        assert (told.severity, told.title) == (types.NoticeSeverity.ERROR, "The disk is full")
        assert "(the session store is /d/s.db)" in (told.description or "")
    else:
        assert isinstance(told, types.AgentMessageChunk)
        assert isinstance(told.content, types.TextContent)
        assert told.content.text.startswith("The disk is full")


# --- end to end ---------------------------------------------------------------------------


def shell(command: str, **more: Any) -> dict[str, Any]:
    return {"tool_call": {"name": "shell", "arguments": {"command": command, **more}}}


@pytest.mark.e2e
async def test_notices_reach_a_client_that_takes_them_during_prompts_and_never_on_load(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    # A job that ends while the turn goes on (the reply after it pauses).
    script = write_script(
        tmp_path / "s.json",
        [shell("true", background=True)],
        [{"sleep_ms": 800}, {"text": "Done."}],
    )
    broken = types.McpServerStdio(name="broken", command=str(tmp_path / "nothing"), args=[], env=[])
    client = EditorClient(decide=allow_all)
    async with running_agent(home, script=script, client=client, capabilities=NOTICES):
        session_id = await client.new_session(workspace, [broken])
        # The server fails between prompts (the log says so): nothing goes out yet.
        await client.wait_until(
            lambda: any("MCP server broken failed" in line for line in client.stderr_lines)
        )
        await anyio.sleep(0.2)
        between = [u for u in client.updates_for(session_id) if isinstance(u, types.Notice)]
        await client.prompt(session_id, "Run it in the background")
        live = client.updates_for(session_id)
        lines = [json.loads(line) for line in client.received]

    assert between == []
    notices = [u for u in live if isinstance(u, types.Notice)]
    assert [(n.severity, n.title) for n in notices] == [
        (types.NoticeSeverity.ERROR, "MCP server broken failed"),
        (types.NoticeSeverity.INFO, 'Background job "true" exited with code 0'),
    ]
    assert live[0] == notices[0]  # held: the first thing the prompt shows
    answered = next(i for i, m in enumerate(lines) if "stopReason" in (m.get("result") or {}))
    last_notice = max(
        i
        for i, m in enumerate(lines)
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "notice"
    )
    assert last_notice < answered  # nothing after the answer

    again = EditorClient(decide=allow_all)
    async with running_agent(home, script=script, client=again, capabilities=NOTICES):
        await again.load(session_id, workspace)
        replay = again.updates_for(session_id)

    assert not [u for u in replay if isinstance(u, types.Notice)]
    assert [u.title for u in replay if isinstance(u, types.ToolCall) and "Job" in u.title] == [
        "Job `true` ended"
    ]
