"""Helpers for the loop's end-to-end tests: an agent with its own home, script and answers.

`running_agent()` starts the real `python -m acp_agent` over real pipes with a
home of the test's own (a real SQLite file), and checks every line it wrote
against the schema when it stops. `AnsweringClient` answers
`session/request_permission` as the test says, and, as ACP requires of a
client, answers its pending questions `cancelled` once it sent `session/cancel`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from protocol import methods, types
from tests.support import AcpTestClient, agent_env
from tests.support.steps import initialize

__all__ = (
    "Answer",
    "AnsweringClient",
    "calls_of",
    "kinds_of",
    "running_agent",
    "text_of_updates",
    "write_script",
)

#: What the test answers a permission question with: an option id, or None to wait for
#: `session/cancel` and answer `cancelled`.
Answer = str | None


class AnsweringClient(AcpTestClient):
    """A test client that answers permission questions from a list, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[Answer] = []
        self.permission_requests: list[types.RequestPermissionRequest] = []
        self.asked = asyncio.Event()
        self._cancel_sent = asyncio.Event()
        self.register(methods.SESSION_REQUEST_PERMISSION, self._answer)

    async def _answer(
        self, params: types.RequestPermissionRequest
    ) -> types.RequestPermissionResponse:
        self.permission_requests.append(params)
        self.asked.set()
        answer = self.answers.pop(0) if self.answers else None
        if answer is None:
            await self._cancel_sent.wait()
            return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())
        return types.RequestPermissionResponse(
            outcome=types.SelectedPermissionOutcome(option_id=answer)
        )

    def cancel(self, session_id: str) -> None:
        """Send `session/cancel`; pending questions are then answered `cancelled`."""
        self.notify(methods.SESSION_CANCEL, types.CancelNotification(session_id=session_id))
        self._cancel_sent.set()

    async def new_session(self, cwd: Path) -> str:
        response = await self.request(
            methods.SESSION_NEW, types.NewSessionRequest(cwd=str(cwd), mcp_servers=[])
        )
        return str(response.session_id)

    async def prompt(self, session_id: str, text: str = "Go") -> types.PromptResponse:
        response: types.PromptResponse = await self.request(
            methods.SESSION_PROMPT,
            types.PromptRequest(session_id=session_id, prompt=[types.TextContent(text=text)]),
        )
        return response


@asynccontextmanager
async def running_agent(
    home: Path,
    *,
    script: Path | None = None,
    args: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[AnsweringClient]:
    """The real agent with `home`, initialized; stopped and its wire checked on exit."""
    import sys

    command = [sys.executable, "-m", "acp_agent", "--home", str(home), *args]
    if script is not None:
        command += ["--script", str(script)]
    client = AnsweringClient()
    await client.start_io(*command, env=dict(env) if env is not None else agent_env())
    try:
        await initialize(client)
        yield client
    finally:
        await client.stop()
    assert client.wire_problems() == []


def write_script(path: Path, *replies: list[dict[str, Any]], **extra: Any) -> Path:
    """Write a script of `replies` to `path`; returns it."""
    path.write_text(json.dumps({"replies": list(replies), **extra}))
    return path


def kinds_of(updates: list[types.SessionUpdate]) -> list[str]:
    """Each update's `sessionUpdate` kind, with a tool call's status after it."""
    kinds = []
    for update in updates:
        kind = update.session_update
        status = getattr(update, "status", None)
        kinds.append(f"{kind}:{status.value}" if status is not None else kind)
    return kinds


def calls_of(
    updates: list[types.SessionUpdate], call_id: str
) -> list[types.ToolCall | types.ToolCallProgress]:
    """The `tool_call` and `tool_call_update`s of one call."""
    found: list[Any] = []
    for update in updates:
        is_call = isinstance(update, types.ToolCall | types.ToolCallProgress)
        if is_call and update.tool_call_id == call_id:  # type: ignore[union-attr]
            found.append(update)
    return found


def text_of_updates(
    updates: list[types.SessionUpdate], kind: Callable[[Any], bool] | None = None
) -> str:
    """The text of the agent message chunks among `updates`, joined."""
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, types.AgentMessageChunk) and isinstance(u.content, types.TextContent)
    )
