"""Make the event format 1 fixture: a store written by the real agent, and what it showed.

    .venv/bin/python -m tests.store.data.format_v1.make            # the store, then the rest
    .venv/bin/python -m tests.store.data.format_v1.make --shown    # only what it shows

The store can only be made by an acp-agent that writes event format 1 (this
refuses to run on a later one): it is the record of what such a version wrote,
and a later version must read it. What it shows (`replay.jsonl`, `projection.json`,
`transcript.md`) was recorded by the same version; `--shown` records it again
from the committed store, with the code checked out (only for a change meant to
alter what a replay shows, after reading the diff).

The sessions, played by the scripted model (`script.json`) through a client
that offers files and terminals and shows Zed's terminal output:

1. A prompt of every kind of block (text with annotations and `_meta`, an image,
   a link read into the file, a link outside the workspace, a web link, a text
   resource, a blob of UTF-8 text, a binary blob); the reply thinks, reads,
   plans, writes a new file, runs a command in a terminal, calls an MCP tool that
   returns an image, reads a missing file (an error), edits a file (a diff),
   starts a branch (which runs a command itself) and waits for it.
2. A template (`/greet Ada`), expanded; the reply breaks off (a failure).
3. A refusal. 4. `/compact`. 5. A reply cut at `max_tokens`.
6. The session forked after its first prompt; the fork's own prompt, then
   `/rewind 2` back to before it.
7. In a second agent process, whose client has no terminals, a command the
   agent runs itself, shown as its own terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from acp_agent.core import EVENT_FORMAT_VERSION
from acp_agent.store import SqliteStore, default_database_path
from protocol import methods, types
from tests.mcp.servers.sample_png import PNG
from tests.store.stored_format import (
    FORMAT_V1,
    copy_store,
    fixture_sessions,
    projected,
    replay_lines,
    transcript_of,
)
from tests.support.agent import running_agent
from tests.support.editor_client import EditorClient, allow_all
from tests.tools.editor import EditorBridge

SERVER = Path(__file__).resolve().parents[3] / "mcp" / "servers" / "tools_server.py"
PLAN = [
    {"content": "Read the notes", "status": "completed", "priority": "high"},
    {"content": "Write them down", "status": "in_progress", "priority": "medium"},
    {"content": "Tidy up", "status": "pending", "priority": "low"},
]


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments, "id": call_id}}


SCRIPT: dict[str, Any] = {
    "replies": [
        [
            {"thought": "Reading what you sent."},
            {"text": "Let me look."},
            call("read", "read_notes", path="notes.txt"),
            call("plan", "plan_1", entries=PLAN),
            call("write", "write_new", path="new.txt", content="new\n"),
            call("shell", "shell_hi", command="echo hi"),
            call("mcp__pics__picture", "picture"),
            call("read", "read_missing", path="missing.txt"),
            {"usage": {"input_tokens": 1200, "output_tokens": 40}},
        ],
        [
            {"text": "Now an edit, and a helper."},
            call("edit", "edit_notes", path="notes.txt", old_text="milk", new_text="bread"),
            call("branch", "start_branch", task="Write b.txt", title="helper"),
        ],
        [call("branch_wait", "wait_branch", all=True, timeout_s=20)],
        [{"text": "All "}, {"text": "done."}, {"usage": {"input_tokens": 2000}}],
        [{"text": "Hello Ada"}, {"error": "stream_broken", "message": "the line dropped"}],
        [{"text": "I won't."}, {"stop": "refusal"}],
        [{"text": "Still here, and"}, {"stop": "max_tokens"}],
        [{"text": "Fine."}],
    ],
    "branches": [
        {
            "title": "helper",
            "replies": [
                [{"thought": "Quick."}, call("shell", "shell_b", command="echo b > b.txt")],
                [{"text": "Branch done."}],
            ],
        }
    ],
    "context_window": 64000,
}


#: The third session's: a command run by the agent itself.
LOCAL_SCRIPT: dict[str, Any] = {
    "replies": [
        [call("shell", "shell_local", command="printf 'one\\ntwo\\n'")],
        [{"text": "Ran it."}],
    ]
}


def blocks(workspace: Path, outside: Path) -> list[types.ContentBlock]:
    """One block of every kind a prompt may hold."""
    notes = workspace / "notes.txt"
    return [
        types.TextContent(
            text="Look at these.",
            annotations=types.Annotations(
                audience=[types.Role.USER], priority=0.5, last_modified="2025-01-02T03:04:05Z"
            ),
            meta={"editor": {"selection": [1, 2]}},
        ),
        types.ImageContent(
            data=base64.b64encode(PNG).decode(), mime_type="image/png", uri="file:///pic.png"
        ),
        types.ResourceLink(
            uri=notes.as_uri(),
            name="notes.txt",
            title="The notes",
            description="What to buy",
            mime_type="text/plain",
            size=notes.stat().st_size,
        ),
        types.ResourceLink(uri=outside.as_uri(), name="elsewhere.txt"),
        types.ResourceLink(uri="https://example.com/spec", name="spec", meta={"k": "v"}),
        types.EmbeddedResource(
            resource=types.TextResourceContents(
                uri="file:///snippet.py",
                text="print(1)\n",
                mime_type="text/x-python",
                meta={"a": 1},
            ),
            annotations=types.Annotations(priority=1.0),
        ),
        types.EmbeddedResource(
            resource=types.BlobResourceContents(
                uri="file:///decoded.txt",
                blob=base64.b64encode("héllo\n".encode()).decode(),
                mime_type="text/plain",
            )
        ),
        types.EmbeddedResource(
            resource=types.BlobResourceContents(
                uri="file:///bytes.bin", blob=base64.b64encode(b"\x00\x01\x02").decode()
            ),
            meta={"source": "drop"},
        ),
    ]


async def play(folder: Path, work: Path) -> None:
    """Play the sessions through the real agent; the store and its sessions into `folder`."""
    workspace = work / "workspace"
    (workspace / ".acp-agent" / "commands").mkdir(parents=True)
    (workspace / ".acp-agent" / "commands" / "greet.md").write_text(
        "# Greet someone\n\nSay hello to $ARGUMENTS.\n"
    )
    (workspace / "notes.txt").write_text("Buy milk.\n")
    outside = work / "elsewhere.txt"
    outside.write_text("not read\n")
    script = folder / "script.json"
    script.write_text(json.dumps(SCRIPT, indent=2) + "\n")
    local_script = work / "local.json"
    local_script.write_text(json.dumps(LOCAL_SCRIPT))
    home = work / "home"
    server = types.McpServerStdio(name="pics", command=sys.executable, args=[str(SERVER)], env=[])
    async with EditorBridge(has_terminals=True, streams_terminal_output=True) as editor:
        client = EditorClient(editor=editor, decide=allow_all, unstable=True)
        async with running_agent(home, script=script, client=client, unstable=True):
            first = await client.new_session(workspace, [server])
            await client.prompt_blocks(first, *blocks(workspace, outside))
            await client.prompt(first, "/greet Ada")
            await client.prompt(first, "Refuse this.")
            await client.prompt(first, "/compact")
            await client.prompt(first, "And now?")
            response = await client.request(
                methods.SESSION_FORK,
                types.ForkSessionRequest(
                    session_id=first, cwd=str(workspace), meta={"acp-agent": {"throughPrompt": 1}}
                ),
            )
            fork = str(response.session_id)
            await client.prompt(fork, "In the fork.")
            await client.prompt(fork, "/rewind 2")
    # A second process, for a client without terminals that shows Zed's terminal output:
    # the command runs here, shown as a terminal of ours (`local_cwd`).
    async with EditorBridge(has_terminals=False, streams_terminal_output=True) as editor:
        client = EditorClient(editor=editor, decide=allow_all, unstable=True)
        async with running_agent(home, script=local_script, client=client, unstable=True):
            local = await client.new_session(workspace)
            await client.prompt(local, "Run it here.")
    database = default_database_path(home / "data")
    with sqlite3.connect(database) as connection:  # everything in the main file, no WAL
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    store = await SqliteStore.open(database)
    try:
        mains = [(await store.list_branches(s))[0].branch_id for s in (first, fork, local)]
    finally:
        await store.aclose()
    with sqlite3.connect(database) as connection:
        connection.execute("PRAGMA journal_mode=DELETE")
    connection.close()
    shutil.copyfile(database, folder / "store.sqlite3")
    sessions = {
        "sessions": [first, fork, local],
        "main_branches": [str(branch) for branch in mains],
        "workspace": str(workspace),
    }
    (folder / "sessions.json").write_text(json.dumps(sessions, indent=2) + "\n")


async def record_shown(folder: Path, work: Path) -> None:
    """What the checked-out code shows of the committed store, into `folder`."""
    sessions = fixture_sessions(folder)
    home = work / "shown-home"
    copy_store(home, folder)
    workspace = work / "shown-workspace"
    workspace.mkdir()
    replay = await replay_lines(
        home, workspace, sessions["sessions"], script=folder / "script.json"
    )
    (folder / "replay.jsonl").write_text("".join(line + "\n" for line in replay))
    projection = await projected(folder / "store.sqlite3", sessions["main_branches"])
    (folder / "projection.json").write_text(
        json.dumps(projection, indent=1, ensure_ascii=False) + "\n"
    )
    (folder / "transcript.md").write_text(transcript_of(replay))


async def main(argv: list[str]) -> None:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--shown", action="store_true", help="only record what it shows")
    shown_only = arguments.parse_args(argv).shown
    with tempfile.TemporaryDirectory(prefix="acp-agent-format-v1-") as work:
        if not shown_only:
            if EVENT_FORMAT_VERSION != 1:
                sys.exit(f"this acp-agent writes event format {EVENT_FORMAT_VERSION}, not 1")
            await play(FORMAT_V1, Path(work))
        await record_shown(FORMAT_V1, Path(work))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
