"""A store written by an older acp-agent, and what it shows: the fixture of `test_stored_format`.

`data/format_v1/` holds a SQLite store that acp-agent wrote with event format 1
(content as JSON objects: the person's in ACP's camelCase, tools' in a snake_case
of their own), made by `data/format_v1/make.py` through the real agent, and what
that code showed of it: the `session/load` replay of each session (the lines as
the agent wrote them), the messages the model reads of each main line, and the
headless transcript. A later version must load the same store and show the same.

    replay = await replay_lines(home, workspace, session_ids)
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from acp_agent.capabilities.context._projection import Projection
from acp_agent.store import SqliteStore, default_database_path
from protocol import methods
from tests.support.agent import running_agent
from tests.support.client import SESSION_LEVEL_UPDATES
from tests.support.editor_client import EditorClient, allow_all

__all__ = (
    "FORMAT_V1",
    "copy_store",
    "fixture_sessions",
    "projected",
    "replay_lines",
    "transcript_of",
)

#: The fixture of event format 1.
FORMAT_V1: Final = Path(__file__).resolve().parent / "data" / "format_v1"
#: The session updates that describe the session, not its conversation: they follow
#: what the running agent offers now (commands, modes, options), not the record.
_SESSION_LEVEL: Final = frozenset(
    {"available_commands_update", "current_mode_update", "config_option_update"}
)


def fixture_sessions(folder: Path = FORMAT_V1) -> dict[str, Any]:
    """What the maker wrote down: the session ids, the workspace, the script."""
    sessions: dict[str, Any] = json.loads((folder / "sessions.json").read_text())
    return sessions


def copy_store(home: Path, folder: Path = FORMAT_V1) -> Path:
    """The fixture's store copied into `home`'s data folder (the original stays as it is)."""
    target = default_database_path(home / "data")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / "store.sqlite3", target)
    return target


async def replay_lines(
    home: Path,
    workspace: Path,
    session_ids: Sequence[str],
    *,
    script: Path,
    env: dict[str, str] | None = None,
) -> list[str]:
    """Each session's `session/load` replay, as the lines the agent wrote (session-level
    updates left out), one agent process for all."""
    client = EditorClient(decide=allow_all, unstable=True)
    lines: list[str] = []
    async with running_agent(home, script=script, client=client, unstable=True, env=env):
        for session_id in session_ids:
            start = len(client.received)
            await client.load(session_id, workspace)
            for line in client.received[start:]:
                message = json.loads(line)
                if message.get("method") != methods.SESSION_UPDATE:
                    continue
                if message["params"]["update"]["sessionUpdate"] in _SESSION_LEVEL:
                    continue
                lines.append(line.decode("utf-8"))
    assert SESSION_LEVEL_UPDATES  # the kinds above are these (imported to keep them in step)
    return lines


async def projected(store_path: Path, branch_ids: Sequence[str]) -> list[Any]:
    """The messages the model reads of each branch's own events, as JSON data."""
    store = await SqliteStore.open(store_path)
    try:
        folded = []
        for branch_id in branch_ids:
            projection = Projection()
            projection.feed(await store.read(branch_id))  # type: ignore[arg-type]
            folded.append([_message_data(m.message) for m in projection.messages()])
        return folded
    finally:
        await store.aclose()


def _message_data(message: Any) -> dict[str, Any]:
    return {
        "role": message.role,
        "parts": [{type(part).__name__: attrs.asdict(part)} for part in message.parts],
    }


def transcript_of(replay: Sequence[str]) -> str:
    """The headless transcript of the replayed updates (each session after the other)."""
    from acp_agent.adapters.headless._transcript import Transcript

    transcript = Transcript()
    for line in replay:
        transcript.add(json.loads(line)["params"]["update"])
    return transcript.markdown()
