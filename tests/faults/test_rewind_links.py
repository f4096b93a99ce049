"""A rewind never writes outside the workspace, even where a path now leads there by a link.

The agent edits `sub/a.txt` and creates `sub/new.txt`. Then, outside the
agent, `sub` is moved out of the workspace and a symbolic link to it takes its
place: every recorded path still names a file holding exactly what the agent
left there, but acting on it would now write and delete outside every root. Both
`_acp-agent/rewind` and `/rewind` refuse, naming each such path as a conflict,
and nothing outside the workspace changes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol import types
from tests.support import EditorClient, running_agent, write_script
from tests.support.editor_client import allow_all

pytestmark = pytest.mark.e2e

REWIND = "_acp-agent/rewind"


async def test_a_rewind_across_a_path_that_became_a_link_to_outside_touches_nothing(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "sub" / "a.txt").write_text("alpha\n")
    outside = tmp_path / "elsewhere"
    script = write_script(
        tmp_path / "script.json",
        [{"tool_call": {"name": "read", "arguments": {"path": "sub/a.txt"}}}],
        [
            {
                "tool_call": {
                    "name": "edit",
                    "arguments": {"path": "sub/a.txt", "old_text": "alpha", "new_text": "ALPHA"},
                }
            },
            {
                "tool_call": {
                    "name": "write",
                    "arguments": {"path": "sub/new.txt", "content": "1\n"},
                }
            },
        ],
        [{"text": "Changed."}],
    )
    async with running_agent(
        tmp_path / "home", script=script, client=EditorClient(decide=allow_all)
    ) as client:
        session_id = await client.new_session(workspace)
        first = await client.prompt(session_id, "Change sub")
        assert first.meta is not None
        message_id = first.meta["acp-agent"]["messageId"]
        (workspace / "sub").rename(outside)
        (workspace / "sub").symlink_to(outside, target_is_directory=True)

        answer = await client.request_raw(
            REWIND, {"sessionId": session_id, "messageId": message_id}
        )
        shown = len(client.updates_for(session_id))
        by_command = await client.prompt(session_id, "/rewind 1")
        said = [
            update.content.text
            for update in client.updates_for(session_id)[shown:]
            if isinstance(update, types.AgentMessageChunk)
            and isinstance(update.content, types.TextContent)
        ]

    leads_outside = "it now leads outside the workspace (a directory on its way is a link)"
    assert answer["result"] == {
        "messageId": message_id,
        "rewound": False,
        "restored": [],
        "removed": [],
        "conflicts": [
            f"{workspace / 'sub' / 'a.txt'}: {leads_outside}; not touched",
            f"{workspace / 'sub' / 'new.txt'}: {leads_outside}; not touched",
        ],
        "notUndone": [],
    }
    assert by_command.stop_reason == types.StopReason.END_TURN
    [report] = said
    assert report.startswith("Not rewound, and nothing was changed")
    assert str(workspace / "sub" / "new.txt") in report
    # Outside the workspace, everything is as the agent's changes left it.
    assert (outside / "a.txt").read_text() == "ALPHA\n"
    assert (outside / "new.txt").read_text() == "1\n"
    assert (workspace / "sub").is_symlink()
