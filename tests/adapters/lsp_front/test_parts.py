"""The LSP front end's parts in memory: the edits it sends, the proposals waiting for the
person, the editor's traits, the folder map, the transcript, and what an attached
session makes of the server's updates and questions. The server itself runs end to end
in tests_lsp/ (pytest-lsp)."""

from __future__ import annotations

from pathlib import Path

import anyio
import attrs
import pytest
from lsprotocol import types

from acp_agent.adapters.lsp_front._approvals import Approvals, Decision, Pending
from acp_agent.adapters.lsp_front._attached import AttachedSession, _chosen
from acp_agent.adapters.lsp_front._editor import EditorTraits
from acp_agent.adapters.lsp_front._files import ANNOTATION_ID, replacing_edit
from acp_agent.adapters.lsp_front._link import ServerClient, ServerLink
from acp_agent.adapters.lsp_front._transcript import render_transcript
from acp_agent.adapters.lsp_front._workspaces import WorkspaceSessions
from acp_agent.agent import (
    BranchId,
    ConversationRewound,
    Event,
    ModelTextDelta,
    Payload,
    Seq,
    UserInputAdopted,
)
from acp_agent.content import TextContent
from acp_agent.core import BatchId
from protocol import types as acp


def test_a_replacing_edit_ends_at_the_documents_last_character_in_utf16_columns() -> None:
    edit = replacing_edit(
        "/w/a.py", "one\nsmile 😀", "new", annotated=False, document_changes=False
    )
    assert edit.changes is not None
    ((uri, (text_edit,)),) = edit.changes.items()
    assert uri == "file:///w/a.py"
    # The emoji is two UTF-16 code units: "smile " is 6, the end is column 8 of line 1.
    assert text_edit.range.end == types.Position(line=1, character=8)
    assert text_edit.new_text == "new"


def test_an_annotated_edit_needs_confirmation_and_a_new_file_is_created_first() -> None:
    edit = replacing_edit("/w/new.py", None, "x = 1\n", annotated=True, document_changes=True)
    assert edit.document_changes is not None
    create, change = edit.document_changes
    assert isinstance(create, types.CreateFile)
    assert isinstance(change, types.TextDocumentEdit)
    (text_edit,) = change.edits
    assert isinstance(text_edit, types.AnnotatedTextEdit)
    assert text_edit.annotation_id == ANNOTATION_ID
    assert edit.change_annotations is not None
    assert edit.change_annotations[ANNOTATION_ID].needs_confirmation is True


async def test_a_proposal_waits_until_decided_and_a_cancel_rejects_the_folders_only() -> None:
    approvals = Approvals()
    mine = Pending(approvals.new_id(), "Apply", "change a.py?", "/w")
    theirs = Pending(approvals.new_id(), "Apply", "change b.py?", "/other")
    settled: list[Pending] = []

    async def waiting(pending: Pending) -> None:
        settled.append(await approvals.wait(pending))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(waiting, mine)
        tasks.start_soon(waiting, theirs)
        await anyio.wait_all_tasks_blocked()
        assert [p.folder for p in approvals.waiting()] == ["/w", "/other"]
        assert approvals.reject_all("/w") == 1
        await anyio.wait_all_tasks_blocked()
        assert approvals.waiting() == [theirs]
        assert approvals.decide(theirs.approval_id, Decision.ALLOW_ONCE, applied=True)
        assert not approvals.decide(theirs.approval_id, Decision.REJECT)  # once only

    assert [(p.decision, p.applied) for p in settled] == [
        (Decision.REJECT, False),
        (Decision.ALLOW_ONCE, False),  # it carried no edit, so the editor applied none
    ]


@pytest.mark.parametrize(
    ("capabilities", "expected"),
    [
        (
            types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(
                    apply_edit=True,
                    workspace_edit=types.WorkspaceEditClientCapabilities(
                        document_changes=True,
                        change_annotation_support=types.ChangeAnnotationsSupportOptions(),
                    ),
                ),
                window=types.WindowClientCapabilities(work_done_progress=True),
            ),
            EditorTraits(
                applies_edits=True, document_changes=True, annotations=True, progress=True
            ),
        ),
        (
            types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(
                    apply_edit=True,
                    workspace_edit=types.WorkspaceEditClientCapabilities(
                        # Annotations without documentChanges cannot be sent.
                        change_annotation_support=types.ChangeAnnotationsSupportOptions(),
                    ),
                ),
                window=types.WindowClientCapabilities(
                    show_message=types.ShowMessageRequestClientCapabilities()
                ),
            ),
            EditorTraits(applies_edits=True, message_requests=True),
        ),
        (None, EditorTraits()),
    ],
)
def test_editor_traits_follow_the_declared_capabilities(
    capabilities: types.ClientCapabilities | None, expected: EditorTraits
) -> None:
    assert EditorTraits.of(capabilities) == expected


def test_the_folder_map_survives_a_new_reader_and_a_damaged_file(tmp_path: Path) -> None:
    path = tmp_path / "lsp" / "sessions.json"
    WorkspaceSessions(path).remember("/w", "s1")
    WorkspaceSessions(path).remember("/x", "s2")
    assert WorkspaceSessions(path).session_of("/w") == "s1"
    path.write_text("{not json")
    assert WorkspaceSessions(path).session_of("/w") is None


def _event(seq: int, payload: Payload) -> Event:
    return Event(
        branch_id=BranchId("main"),
        seq=Seq(seq),
        batch_id=BatchId(f"b{seq}"),
        payload=payload,
        producer="test",
        recorded_at=0.0,
    )


def test_the_transcript_joins_the_replys_pieces_and_leaves_out_what_was_rewound() -> None:
    events = [
        _event(1, UserInputAdopted("t1", (TextContent("First"),))),
        _event(2, ModelTextDelta("r1", "Hel")),
        _event(3, ModelTextDelta("r1", "lo.")),
        _event(4, UserInputAdopted("t2", (TextContent("Second"),))),
        _event(5, ModelTextDelta("r2", "Gone.")),
        _event(6, ConversationRewound(rewind_id="r", message_id="t2", anchor_seq=4)),
    ]
    text = render_transcript("A title", events)
    assert text == "# A title\n\n## You\n\nFirst\n\n## acp-agent\n\nHello.\n"


def _attached() -> AttachedSession:
    """An attached session fed updates by hand (no server: only what it makes of them)."""
    link = ServerLink("/nowhere.sock")
    client = ServerClient(link.sessions)
    return AttachedSession(
        link,
        client,
        "sess_1",
        folder="/w",
        files=None,
        asker=None,  # type: ignore[arg-type]
    )


def _told(session: AttachedSession, *updates: acp.SessionUpdate) -> None:
    for update in updates:
        session.update(acp.SessionNotification(session_id="sess_1", update=update))


async def test_an_attached_turns_reply_is_what_followed_its_own_message_only() -> None:
    session = _attached()
    _told(
        session,
        # Another client's turn, before this one's in the queue.
        acp.UserMessageChunk(message_id="turn_a", content=acp.TextContent(text="Other")),
        acp.AgentMessageChunk(message_id="req_a", content=acp.TextContent(text="Not yours.")),
        acp.UserMessageChunk(message_id="turn_b", content=acp.TextContent(text="Fix it")),
        acp.AgentMessageChunk(message_id="req_b", content=acp.TextContent(text="Fixed")),
        acp.AgentMessageChunk(message_id="req_b", content=acp.TextContent(text=" it.")),
        acp.ToolCall(tool_call_id="call_1", title="Edit app.py"),
        acp.AgentMessageChunk(message_id="req_c", content=acp.TextContent(text="Done.")),
        acp.SessionInfoUpdate(title="Fix it"),
    )

    assert session._reply_to("turn_b") == "Fixed it.\n\nDone."
    assert session._reply_to("turn_a") == "Not yours."
    assert await session.last_message() == "turn_b"
    transcript = await session.transcript()
    assert transcript.startswith("# Fix it\n")
    assert "## You\n\nFix it\n\n## acp-agent\n\nFixed it.\n\n- *Edit app.py*" in transcript


def test_an_attached_sessions_answer_picks_the_offered_option_of_the_persons_kind() -> None:
    options = [
        acp.PermissionOption(option_id=f"o-{kind.value}", name=kind.value, kind=kind)
        for kind in acp.PermissionOptionKind
    ]
    request = acp.RequestPermissionRequest(
        session_id="sess_1",
        tool_call=acp.ToolCallUpdate(tool_call_id="call_1"),
        options=options,
    )
    chosen = {
        decision: _chosen(request, decision).outcome.option_id  # type: ignore[union-attr]
        for decision in Decision
    }
    assert chosen == {
        Decision.ALLOW_ONCE: "o-allow_once",
        Decision.ALLOW_ALWAYS: "o-allow_always",
        Decision.REJECT: "o-reject_once",
    }
    only_reject = attrs.evolve(request, options=[options[-1]])
    assert _chosen(only_reject, Decision.ALLOW_ONCE).outcome.option_id == options[-1].option_id
