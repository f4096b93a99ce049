"""The pure parts of the headless front end: the `--approve` policy and the transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_agent.adapters.headless._policy import Approve, decide, option_for
from acp_agent.adapters.headless._transcript import Transcript
from protocol import types

ROOTS = [Path("/work/a"), Path("/work/b")]


def question(
    kind: types.ToolKind, *paths: str, meta: dict[str, Any] | None = None
) -> types.RequestPermissionRequest:
    return types.RequestPermissionRequest(
        session_id="sess_1",
        tool_call=types.ToolCallUpdate(
            tool_call_id="call_1",
            title="A call",
            kind=kind,
            locations=[types.ToolCallLocation(path=path) for path in paths] or None,
        ),
        options=[
            types.PermissionOption(
                option_id="yes", name="Allow", kind=types.PermissionOptionKind.ALLOW_ONCE
            ),
            types.PermissionOption(
                option_id="always", name="Always", kind=types.PermissionOptionKind.ALLOW_ALWAYS
            ),
            types.PermissionOption(
                option_id="no", name="Reject", kind=types.PermissionOptionKind.REJECT_ONCE
            ),
        ],
        meta=meta,
    )


@pytest.mark.parametrize(
    ("approve", "kind", "allowed"),
    [
        (Approve.NEVER, types.ToolKind.EDIT, False),
        (Approve.EDITS, types.ToolKind.EDIT, True),
        (Approve.EDITS, types.ToolKind.DELETE, True),
        (Approve.EDITS, types.ToolKind.MOVE, True),
        (Approve.EDITS, types.ToolKind.EXECUTE, False),
        (Approve.EDITS, types.ToolKind.FETCH, False),
        (Approve.ALL, types.ToolKind.EXECUTE, True),
        (Approve.ALL, types.ToolKind.FETCH, True),
    ],
)
def test_the_policy_inside_the_roots(approve: Approve, kind: types.ToolKind, allowed: bool) -> None:
    decision = decide(question(kind, "/work/b/x.py"), approve, ROOTS)
    assert decision.allowed is allowed
    assert decision.reason


@pytest.mark.parametrize(
    "request_",
    [
        question(types.ToolKind.EDIT, "/work/c/x.py"),
        question(types.ToolKind.EDIT, "/work/a/../c/x.py"),
        question(types.ToolKind.EDIT, "/work/ab/x.py"),
        question(types.ToolKind.EXECUTE, meta={"acp-agent": {"outsideRoots": True}}),
    ],
)
def test_outside_every_root_is_refused_even_under_all(
    request_: types.RequestPermissionRequest,
) -> None:
    decision = decide(request_, Approve.ALL, ROOTS)
    assert not decision.allowed
    assert "outside" in decision.reason


def test_the_options_chosen_are_the_one_time_ones() -> None:
    asked = question(types.ToolKind.EDIT)
    assert option_for(asked, True) == "yes"
    assert option_for(asked, False) == "no"
    no_reject = types.RequestPermissionRequest(
        session_id="s", tool_call=asked.tool_call, options=asked.options[:1]
    )
    assert option_for(no_reject, False) is None


def test_the_transcript_folds_chunks_calls_and_plans() -> None:
    transcript = Transcript()
    for update in [
        {"sessionUpdate": "user_message_chunk", "messageId": "t1", "content": _text("Fix it")},
        {"sessionUpdate": "agent_thought_chunk", "messageId": "r1", "content": _text("Hm.")},
        {"sessionUpdate": "agent_message_chunk", "messageId": "r1", "content": _text("On ")},
        {"sessionUpdate": "agent_message_chunk", "messageId": "r1", "content": _text("it.")},
        {"sessionUpdate": "plan", "entries": [_step("read", "pending")]},
        {"sessionUpdate": "plan", "entries": [_step("read", "completed"), {"content": "?"}]},
        {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit a.py"},
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "completed",
            "content": [
                {"type": "diff", "path": "/w/a.py", "oldText": "x\n", "newText": "y\n"},
                {"type": "diff", "path": "/w/b.py"},  # no newText: not ACP, left out
                {"type": "content", "content": {"type": "image", "data": "", "mimeType": "i/x"}},
                {"type": "terminal", "terminalId": "t1"},
            ],
        },
        {"sessionUpdate": "usage_update", "used": 5, "size": 10},
        {"sessionUpdate": "agent_message_chunk", "messageId": "r2", "content": _text("Done ```")},
    ]:
        transcript.add(update)
    out = transcript.markdown()
    assert out.count("### Agent") == 2
    assert "### Agent\n\nOn it." in out
    assert "> Hm." in out
    assert "- [x] read" in out
    assert "- [ ] read" not in out
    assert "**Tool call:** Edit a.py (completed)" in out
    assert "-x\n+y" in out
    assert "b.py" not in out
    assert "```\n[image: i/x]\n```\n\n(terminal t1)" in out
    assert transcript.final_message() == "Done ```"


def _step(content: str, status: str) -> dict[str, str]:
    return {"content": content, "priority": "medium", "status": status}


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}
