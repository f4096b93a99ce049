"""A session's conversation as Markdown, kept in the agent's data folder.

Editors that support `window/showDocument` open it after each turn: the whole
exchange in a readable document, never a file in the workspace. What a rewind took
out of the conversation is left out here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio

from acp_agent.agent import (
    Event,
    ModelTextDelta,
    ToolCallRequested,
    UserInputAdopted,
    hidden_ranges,
    is_hidden,
)
from acp_agent.content import TextContent

__all__ = ("render_transcript", "write_transcript")


def render_transcript(title: str | None, events: Sequence[Event]) -> str:
    """The conversation of `events` (a main line's history) as Markdown."""
    hidden = hidden_ranges(events)
    blocks = [f"# {title or 'acp-agent session'}"]
    speaking = False
    for event in events:
        if is_hidden(int(event.seq), hidden):
            continue
        payload = event.payload
        if isinstance(payload, UserInputAdopted):
            text = "\n".join(p.text for p in payload.shown() if isinstance(p, TextContent))
            blocks += ["## You", text.strip()]
            speaking = False
        elif isinstance(payload, ToolCallRequested):
            blocks.append(f"- *{payload.title or payload.tool}*")
            speaking = False
        elif isinstance(payload, ModelTextDelta):
            if not speaking:
                blocks += ["## acp-agent", ""]
                speaking = True
            blocks[-1] += payload.text
    return "\n\n".join(block.strip() for block in blocks if block.strip()) + "\n"


async def write_transcript(folder: Path, session_id: str, text: str) -> Path:
    """Write the transcript of `session_id` under `folder`; its path."""
    path = folder / f"{session_id}.md"
    await anyio.Path(folder).mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".md.tmp")
    await anyio.Path(temporary).write_text(text, encoding="utf-8")
    await anyio.Path(temporary).replace(path)
    return path
