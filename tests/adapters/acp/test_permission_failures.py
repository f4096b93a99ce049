"""A permission question the editor fails to answer (an error, or a result that is no
answer): the call is not run, both the person and the model are told why, and the turn
goes on; nobody is told it was cancelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from protocol import types
from protocol.errors import InternalError
from tests.adapters.acp.support import calls_of
from tests.support import EditorClient, agent_env, running_agent, write_script

pytestmark = pytest.mark.e2e


class FailingEditor(EditorClient):
    """Answers the first question with an error, the second with a result that is none."""

    async def _answer(self, params: types.RequestPermissionRequest) -> Any:
        self.permission_requests.append(params)
        if len(self.permission_requests) == 1:
            raise InternalError("client failed to show the dialog")
        # A response whose outcome is null: no answer the schema allows.
        response = types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())
        object.__setattr__(response, "outcome", None)
        return response


def write(path: str, call_id: str) -> dict[str, object]:
    return {
        "tool_call": {"name": "write", "arguments": {"path": path, "content": "x\n"}, "id": call_id}
    }


async def test_a_question_the_editor_fails_to_answer_runs_nothing_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    script = write_script(
        tmp_path / "script.json",
        [write("a.txt", "w1")],
        [write("b.txt", "w2")],
        [{"text": "Carrying on."}],
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = agent_env(ACP_AGENT_MODE="ask")
    async with running_agent(
        tmp_path / "home", script=script, client=FailingEditor(), env=env
    ) as client:
        session_id = await client.new_session(workspace)
        response = await client.prompt(session_id)
        updates = client.updates_for(session_id)

    assert response.stop_reason == types.StopReason.END_TURN
    assert len(client.permission_requests) == 2
    assert list(workspace.iterdir()) == []
    said = []
    for call_id in ("w1", "w2"):
        last = calls_of(updates, call_id)[-1]
        assert last.status == types.ToolCallStatus.FAILED
        said.append(last.content[0].content.text)  # type: ignore[index,union-attr]
    assert said == [
        "Not run: you could not be asked: the editor answered with an error "
        "(client failed to show the dialog).",
        "Not run: you could not be asked: the editor's answer was not one (Invalid result "
        "for session/request_permission: outcome: expected an object, got null).",
    ]
    assert not any("cancelled" in text for text in said)
