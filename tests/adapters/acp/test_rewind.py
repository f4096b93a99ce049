"""Rewind end to end: checkpoints of every change, and going back to a person's message.

The real agent over stdio with a fake OpenAI provider (real HTTP), real files
in a workspace, a real SQLite store. A rewind is asked for through the
`_acp-agent/rewind` extension request and through `/rewind`; the tests check
the files byte for byte, the next model request, a reload and a fork.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from protocol import methods, types
from tests.support import EditorClient, openai_env, running_agent, write_script
from tests.support.editor_client import allow_all
from tests.support.fake_provider import FakeProviderServer, openai_reply, openai_tool_calls

pytestmark = pytest.mark.e2e

REWIND = "_acp-agent/rewind"


def message_id_of(answer: types.PromptResponse) -> str:
    assert answer.meta is not None
    return str(answer.meta["acp-agent"]["messageId"])


def texts_of(updates: list[types.SessionUpdate], kind: type) -> list[str]:
    return [
        u.content.text
        for u in updates
        if isinstance(u, kind) and isinstance(u.content, types.TextContent)
    ]


def workspace_with(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_bytes(b"alpha\r\nline two\r\n")
    (workspace / "a.txt").chmod(0o755)
    (workspace / "d.txt").write_text("delete me\n")
    (workspace / "m.txt").write_text("move me\n")
    return workspace


def two_turns(server: FakeProviderServer) -> None:
    """Turn 1 edits a.txt; turn 2 edits it again, creates b.txt, deletes d.txt, moves
    m.txt, runs a command; turn 3 (after the rewind) only answers."""
    server.add(
        openai_tool_calls(("r1", "read", {"path": "a.txt"})),
        openai_tool_calls(
            ("e1", "edit", {"path": "a.txt", "old_text": "alpha", "new_text": "ALPHA"})
        ),
        openai_reply("Done one."),
        openai_tool_calls(
            ("e2", "edit", {"path": "a.txt", "old_text": "line two", "new_text": "LINE TWO"}),
            ("w1", "write", {"path": "sub/b.txt", "content": "bee\n"}),
            ("x1", "delete", {"path": "d.txt"}),
            ("m1", "move", {"source": "m.txt", "destination": "moved/m.txt"}),
            ("s1", "shell", {"command": "echo side > e.txt"}),
        ),
        openai_reply("Done two."),
        openai_reply("Fresh."),
    )


async def test_a_rewind_restores_every_file_and_the_model_no_longer_reads_the_later_turns(
    tmp_path: Path,
) -> None:
    workspace = workspace_with(tmp_path)
    home = tmp_path / "home"
    with FakeProviderServer() as server:
        two_turns(server)
        env = openai_env(server.base_url)
        async with running_agent(
            home, env=env, client=EditorClient(decide=allow_all, unstable=True), unstable=True
        ) as client:
            session_id = await client.new_session(workspace)
            first = await client.prompt(session_id, "Change a")
            second = await client.prompt(session_id, "Change more")
            changed = {
                name: (workspace / name).exists()
                for name in ("sub/b.txt", "d.txt", "m.txt", "moved/m.txt")
            }
            forked = await client.request(
                methods.SESSION_FORK,
                types.ForkSessionRequest(
                    session_id=session_id,
                    cwd=str(workspace),
                    meta={"acp-agent": {"beforeMessage": message_id_of(first)}},
                ),
            )
            before_rewind = len(client.session_updates_for(session_id))
            answer = await client.request_raw(
                REWIND, {"sessionId": session_id, "messageId": message_id_of(first)}
            )
            during_rewind = client.session_updates_for(session_id)[before_rewind:]
            third = await client.prompt(session_id, "Fresh start")
        bodies = [request.json() for request in server.requests]
    async with running_agent(home, env=env) as client:
        await client.load(session_id, workspace)
        replayed = client.updates_for(session_id)
        await client.load(str(forked.session_id), workspace)
        fork_replay = client.updates_for(str(forked.session_id))

    assert (first.stop_reason, second.stop_reason, third.stop_reason) == (
        types.StopReason.END_TURN,
    ) * 3
    assert changed == {"sub/b.txt": True, "d.txt": False, "m.txt": False, "moved/m.txt": True}
    result = answer["result"]
    assert result == {
        "messageId": message_id_of(first),
        "rewound": True,
        "restored": [str(workspace / name) for name in ("a.txt", "d.txt", "m.txt")],
        "removed": [str(workspace / name) for name in ("moved/m.txt", "sub/b.txt")],
        "conflicts": [],
        "notUndone": ["Run `echo side > e.txt`"],
    }
    assert during_rewind == []  # a request, not a prompt: nothing streams
    # Byte for byte, with its mode; the deleted file is back, the created one gone.
    assert (workspace / "a.txt").read_bytes() == b"alpha\r\nline two\r\n"
    assert stat.S_IMODE((workspace / "a.txt").stat().st_mode) == 0o755
    assert (workspace / "d.txt").read_text() == "delete me\n"
    assert not (workspace / "sub/b.txt").exists()
    assert (workspace / "m.txt").read_text() == "move me\n"  # the move is undone
    assert not (workspace / "moved").exists()  # made for the move, removed with it
    assert not (workspace / "sub").exists()
    assert (workspace / "e.txt").read_text() == "side\n"  # a command's effect stays
    # The next model request no longer has the later turns; it is told of the rewind.
    after = json.dumps(bodies[-1])
    for gone in ("Change a", "Change more", "Done one.", "Done two.", "ALPHA"):
        assert gone not in after
    assert "Fresh start" in after
    assert "session/rewind" in after
    # The reload replays the session as rewound, with a marker where it was.
    assert texts_of(replayed, types.UserMessageChunk) == ["Fresh start"]
    said = texts_of(replayed, types.AgentMessageChunk)
    assert said[0].startswith("**Rewound here**")
    assert said[1:] == ["Fresh."]
    # The fork at the same anchor is a new session before that message.
    assert texts_of(fork_replay, types.UserMessageChunk) == []


async def test_a_file_changed_outside_the_agent_stops_the_rewind_before_anything_changes(
    tmp_path: Path,
) -> None:
    workspace = workspace_with(tmp_path)
    script = write_script(
        tmp_path / "script.json",
        [{"tool_call": {"name": "write", "arguments": {"path": "new.txt", "content": "one\n"}}}],
        [{"tool_call": {"name": "write", "arguments": {"path": "other.txt", "content": "x\n"}}}],
        [{"text": "Written."}],
    )
    async with running_agent(
        tmp_path / "home", script=script, client=EditorClient(decide=allow_all)
    ) as client:
        session_id = await client.new_session(workspace)
        first = await client.prompt(session_id, "Write them")
        (workspace / "new.txt").write_text("the person's own words\n")
        shown = len(client.updates_for(session_id))
        listing = await client.prompt(session_id, "/rewind")
        [table] = texts_of(client.updates_for(session_id)[shown:], types.AgentMessageChunk)
        shown = len(client.updates_for(session_id))
        refused = await client.prompt(session_id, "/rewind 1")
        said = texts_of(client.updates_for(session_id)[shown:], types.AgentMessageChunk)
        answer = await client.request_raw(
            REWIND, {"sessionId": session_id, "messageId": message_id_of(first)}
        )
        unknown = await client.request_raw(
            REWIND, {"sessionId": session_id, "messageId": "turn_nope"}
        )

    assert (listing.stop_reason, refused.stop_reason) == (types.StopReason.END_TURN,) * 2
    assert "| 1 | Write them | `new.txt`, `other.txt` | none |" in table
    [report] = said
    assert report.startswith("Not rewound, and nothing was changed")
    assert str(workspace / "new.txt") in report
    assert answer["result"]["rewound"] is False
    assert answer["result"]["conflicts"] == [
        f"{workspace / 'new.txt'}: changed outside the agent since it last wrote it"
    ]
    # Nothing changed: the person's text stays, and so does what the agent wrote.
    assert (workspace / "new.txt").read_text() == "the person's own words\n"
    assert (workspace / "other.txt").read_text() == "x\n"
    assert unknown["error"]["code"] == -32602
    assert "turn_nope" in unknown["error"]["message"]


async def test_a_rewind_is_refused_while_a_branch_runs(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    [
                        {
                            "tool_call": {
                                "name": "branch",
                                "arguments": {"task": "Wait", "title": "slow"},
                            }
                        }
                    ],
                    [{"text": "Started."}],
                ],
                "branches": [
                    {"title": "slow", "replies": [[{"sleep_ms": 5000}, {"text": "done"}]]}
                ],
            }
        )
    )
    async with running_agent(
        tmp_path / "home", script=script, client=EditorClient(decide=allow_all)
    ) as client:
        session_id = await client.new_session(workspace)
        first = await client.prompt(session_id, "Start it")
        answer = await client.request_raw(
            REWIND, {"sessionId": session_id, "messageId": message_id_of(first)}
        )
        shown = len(client.updates_for(session_id))
        await client.prompt(session_id, "/rewind 1")
        said = texts_of(client.updates_for(session_id)[shown:], types.AgentMessageChunk)

    assert answer["error"]["code"] == -32600
    assert "branches are still working (slow)" in answer["error"]["message"]
    assert any(text.startswith("Not rewound: branches are still working (slow)") for text in said)


async def test_a_rewind_puts_back_what_a_branch_changed(tmp_path: Path) -> None:
    workspace = workspace_with(tmp_path)
    script = tmp_path / "script.json"
    write = {"name": "write", "arguments": {"path": "by_branch.txt", "content": "mine\n"}}
    script.write_text(
        json.dumps(
            {
                "replies": [
                    [
                        {
                            "tool_call": {
                                "name": "branch",
                                "arguments": {"task": "Write", "title": "w"},
                            }
                        }
                    ],
                    [{"tool_call": {"name": "branch_wait", "arguments": {"all": True}}}],
                    [{"text": "The branch wrote it."}],
                ],
                "branches": [{"title": "w", "replies": [[{"tool_call": write}], [{"text": "ok"}]]}],
            }
        )
    )
    async with running_agent(
        tmp_path / "home", script=script, client=EditorClient(decide=allow_all)
    ) as client:
        session_id = await client.new_session(workspace)
        first = await client.prompt(session_id, "Have a branch write")
        written = (workspace / "by_branch.txt").read_text()
        answer = await client.request_raw(
            REWIND, {"sessionId": session_id, "messageId": message_id_of(first)}
        )

    assert written == "mine\n"
    assert answer["result"]["removed"] == [str(workspace / "by_branch.txt")]
    assert not (workspace / "by_branch.txt").exists()
