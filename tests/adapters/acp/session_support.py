"""Helpers for the session-surface tests: the wire in order, kinds of updates, replies.

The agent itself is started with `tests.support.running_agent`, and talked to
through `tests.support.EditorClient`.
"""

from __future__ import annotations

from typing import Any

from protocol import methods, types

__all__ = (
    "NOTES_TURNS",
    "PLAN",
    "after",
    "before",
    "call",
    "kinds",
    "openai_text",
    "wire_kind",
)


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    """A scripted reply's tool call."""
    return {"tool_call": {"name": name, "arguments": arguments, "id": call_id}}


PLAN = [
    {"content": "Read the notes", "status": "completed", "priority": "high"},
    {"content": "Write the summary", "status": "in_progress", "priority": "medium"},
]

#: Three scripted replies over a workspace's notes.txt: thoughts, text, a read and a plan;
#: a write (asking permission); text alone.
NOTES_TURNS: list[list[dict[str, Any]]] = [
    [
        {"thought": "The notes first."},
        {"text": "Let me read them."},
        call("read", "r1", path="notes.txt"),
        call("plan", "p1", entries=PLAN),
    ],
    [{"text": "Writing it down."}, call("write", "w1", path="summary.txt", content="short")],
    [{"text": "The summary is written."}],
]


def wire_kind(message: dict[str, Any]) -> str:
    """`update:<kind>` for a session/update, `response:<id>` for a response, else the method."""
    if message.get("method") == methods.SESSION_UPDATE:
        return f"update:{message['params']['update']['sessionUpdate']}"
    if "id" in message and "method" not in message:
        return f"response:{message['id']}"
    return str(message.get("method"))


def before(messages: list[dict[str, Any]], msg_id: str) -> list[str]:
    """The kinds of the agent's lines before its response to `msg_id`."""
    at = next(i for i, m in enumerate(messages) if wire_kind(m) == f"response:{msg_id}")
    return [wire_kind(m) for m in messages[:at]]


def after(messages: list[dict[str, Any]], msg_id: str) -> list[str]:
    """The kinds of the agent's lines after its response to `msg_id`."""
    at = next(i for i, m in enumerate(messages) if wire_kind(m) == f"response:{msg_id}")
    return [wire_kind(m) for m in messages[at + 1 :]]


def kinds(updates: list[types.SessionUpdate]) -> list[str]:
    return [update.session_update for update in updates]


def openai_text(*pieces: str) -> Any:
    """An OpenAI streaming reply with `pieces` of text (for the fake provider)."""
    from tests.support.fake_provider import Exchange, openai_chunk, openai_stream

    usage = {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912}
    return Exchange(
        chunks=[
            openai_stream(
                openai_chunk({"role": "assistant", "content": ""}),
                *(openai_chunk({"content": piece}) for piece in pieces),
                openai_chunk({}, "stop"),
                openai_chunk(usage=usage),
            )
        ]
    )
