"""A lone surrogate (which JSON allows: `\\ud800`) never loses a turn, from wherever it comes.

The policy: at each edge where outside text enters (the editor's prompt, a file
the editor returns, the model's stream and its tool calls' arguments, an MCP
server's output) a lone surrogate becomes U+FFFD. The turn ends normally, the text before the bad
character reaches the editor, the model reads the replaced text, and a
`session/load` replays exactly what was shown live.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from protocol import types
from tests.support import EditorClient, openai_env, running_agent
from tests.support.fake_provider import (
    Exchange,
    FakeProviderServer,
    openai_chunk,
    openai_reply,
    openai_stream,
    openai_tool_calls,
)

pytestmark = pytest.mark.e2e

LONE = "\ud800"
REPLACED = "\ufffd"
SERVER = Path(__file__).resolve().parent / "data" / "surrogate_mcp_server.py"


def escaped_sse(payload: object) -> bytes:
    """An SSE event whose JSON escapes what UTF-8 cannot hold (`\\ud800`)."""
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def shown_text(updates: list[types.SessionUpdate], *, typed: bool = True) -> str:
    """Everything the editor was shown as text: messages (the person's only with `typed`:
    a live prompt is not echoed; a message's chunks joined, as a replay sends it in one),
    and tool call contents."""
    pieces: list[str] = []
    message: tuple[str, str | None] | None = None
    for update in updates:
        content = getattr(update, "content", None)
        if isinstance(update, types.UserMessageChunk) and not typed:
            continue
        if isinstance(update, types.UserMessageChunk | types.AgentMessageChunk):
            if isinstance(content, types.TextContent):
                if message == (update.session_update, update.message_id):
                    pieces[-1] += content.text
                else:
                    pieces.append(content.text)
                message = (update.session_update, update.message_id)
            continue
        message = None
        if isinstance(content, list):
            for part in content:
                inner = getattr(part, "content", None)
                if isinstance(inner, types.TextContent):
                    pieces.append(inner.text)
    return "\n".join(pieces)


def model_inputs(server: FakeProviderServer) -> str:
    """Every string of the messages the model was sent, one per line."""
    found: list[str] = []

    def collect(value: object) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            for item in value:
                collect(item)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)

    for request in server.requests:
        collect(request.json()["messages"])
    return "\n".join(found)


async def test_a_lone_surrogate_from_every_source_becomes_a_replacement_character(
    tmp_path: Path,
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    note = workspace / "note.txt"
    note.write_text("on disk\n")
    home = tmp_path / "home"
    editor = EditorClient()
    editor.buffers[str(note)] = f"buffer {LONE} text\n"
    capabilities = types.ClientCapabilities(fs=types.FileSystemCapabilities(read_text_file=True))
    mcp = types.McpServerStdio(name="garbled", command=sys.executable, args=[str(SERVER)], env=[])
    with FakeProviderServer() as server:
        server.add(
            openai_reply("Seen the prompt."),
            openai_reply("Seen the file."),
            Exchange(
                chunks=[
                    openai_stream(
                        openai_chunk({"content": "Before the bad character. "}),
                        escaped_sse(openai_chunk({"content": f"bad {LONE} here"})),
                        openai_chunk({}, "stop"),
                    )
                ]
            ),
            openai_tool_calls(("mcp_1", "mcp__garbled__garbled", {})),
            openai_reply("Seen the tool."),
            openai_tool_calls(("write_1", "write", {"path": "out.txt", "content": f"x{LONE}y"})),
            openai_reply("Written."),
        )
        env = openai_env(server.base_url)
        async with running_agent(home, env=env, client=editor, capabilities=capabilities) as client:
            session_id = await client.new_session(workspace, [mcp])
            client.answers = ["allow_once", "allow_once"]
            answers = [
                await client.prompt(session_id, f"typed {LONE} text"),
                await client.prompt_blocks(
                    session_id,
                    types.TextContent(text="Look at this"),
                    types.ResourceLink(uri=note.as_uri(), name="note.txt"),
                ),
                await client.prompt(session_id, "Say something"),
                await client.prompt(session_id, "Call the tool"),
                await client.prompt(session_id, "Write a file"),
            ]
            live = shown_text(client.updates_for(session_id), typed=False)
        sent_to_model = model_inputs(server)

        async with running_agent(home, env=env) as client:
            await client.load(session_id, workspace)
            replayed = client.updates_for(session_id)

    assert [answer.stop_reason for answer in answers] == [types.StopReason.END_TURN] * 5
    assert f"typed {REPLACED} text" in shown_text(replayed)
    assert "Before the bad character. " in live
    assert f"bad {REPLACED} here" in live
    assert f"before {REPLACED} after" in live
    assert LONE not in live
    assert (workspace / "out.txt").read_text() == f"x{REPLACED}y"
    # The model read the replaced text of each source.
    for text in (f"typed {REPLACED} text", f"buffer {REPLACED} text", f"before {REPLACED} after"):
        assert text in sent_to_model, text
    assert shown_text(replayed, typed=False) == live
