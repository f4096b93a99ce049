"""Helpers for the session-surface tests: an editor-like client, requests, the wire in order.

`open_agent()` starts the real agent (`python -m acp_agent`) with a home of the
test's own (a real SQLite file), initializes it as an editor would (optionally
offering its file system), and checks every line it wrote against the schema
when it stops. `EditorClient` answers `fs/read_text_file` from its open
buffers (unsaved text wins over the disk) and permission questions from a list.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from protocol import methods, types
from tests.support import AcpTestClient, agent_env

__all__ = (
    "EditorClient",
    "after",
    "before",
    "kinds",
    "open_agent",
    "openai_text",
    "wire_kind",
    "write_script",
)


class EditorClient(AcpTestClient):
    """A client with open buffers it serves through `fs/read_text_file`, and answers.

    Permission questions take the next of `answers` (an option id), or wait for
    `session/cancel` and answer `cancelled` when there is none.
    """

    def __init__(self, *, unstable: bool = False) -> None:
        super().__init__(unstable=unstable)
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.answers: list[str] = []
        self.permission_requests: list[types.RequestPermissionRequest] = []
        self._cancel_sent = asyncio.Event()
        self.register(methods.FS_READ_TEXT_FILE, self._read)
        self.register(methods.SESSION_REQUEST_PERMISSION, self._answer)

    async def _answer(
        self, params: types.RequestPermissionRequest
    ) -> types.RequestPermissionResponse:
        self.permission_requests.append(params)
        if not self.answers:
            await self._cancel_sent.wait()
            return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())
        return types.RequestPermissionResponse(
            outcome=types.SelectedPermissionOutcome(option_id=self.answers.pop(0))
        )

    def cancel(self, session_id: str) -> None:
        self.notify(methods.SESSION_CANCEL, types.CancelNotification(session_id=session_id))
        self._cancel_sent.set()

    async def new_session(self, cwd: Path) -> str:
        response = await self.request(
            methods.SESSION_NEW, types.NewSessionRequest(cwd=str(cwd), mcp_servers=[])
        )
        return str(response.session_id)

    async def prompt(self, session_id: str, text: str = "Go") -> types.PromptResponse:
        return await self.prompt_blocks(session_id, types.TextContent(text=text))

    async def _read(self, params: types.ReadTextFileRequest) -> types.ReadTextFileResponse:
        self.reads.append(params.path)
        if params.path in self.buffers:
            return types.ReadTextFileResponse(content=self.buffers[params.path])
        text = await anyio.Path(params.path).read_text()
        return types.ReadTextFileResponse(content=text)

    async def prompt_blocks(
        self, session_id: str, *blocks: types.ContentBlock
    ) -> types.PromptResponse:
        response: types.PromptResponse = await self.request(
            methods.SESSION_PROMPT, types.PromptRequest(session_id=session_id, prompt=list(blocks))
        )
        return response

    async def load(self, session_id: str, cwd: Path) -> types.LoadSessionResponse:
        response: types.LoadSessionResponse = await self.request(
            methods.SESSION_LOAD,
            types.LoadSessionRequest(session_id=session_id, cwd=str(cwd), mcp_servers=[]),
        )
        return response

    async def resume(self, session_id: str, cwd: Path) -> types.ResumeSessionResponse:
        response: types.ResumeSessionResponse = await self.request(
            methods.SESSION_RESUME, types.ResumeSessionRequest(session_id=session_id, cwd=str(cwd))
        )
        return response

    async def list_sessions(
        self, cwd: Path | None = None, cursor: str | None = None
    ) -> types.ListSessionsResponse:
        response: types.ListSessionsResponse = await self.request(
            methods.SESSION_LIST,
            types.ListSessionsRequest(cwd=None if cwd is None else str(cwd), cursor=cursor),
        )
        return response

    async def set_option(
        self, session_id: str, config_id: str, value: str
    ) -> types.SetSessionConfigOptionResponse:
        response: types.SetSessionConfigOptionResponse = await self.request(
            methods.SESSION_SET_CONFIG_OPTION,
            types.SetSessionConfigOptionRequestValueId(
                session_id=session_id, config_id=config_id, value=value
            ),
        )
        return response


@asynccontextmanager
async def open_agent(
    home: Path,
    *,
    script: Path | None = None,
    args: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    reads_files: bool = False,
    unstable: bool = False,
    shows_compaction: bool = False,
) -> AsyncIterator[EditorClient]:
    """The real agent with `home`, initialized; stopped and its wire checked on exit."""
    command = [sys.executable, "-m", "acp_agent", "--home", str(home), *args]
    if script is not None:
        command += ["--script", str(script)]
    if unstable:
        command.append("--unstable")
    client = EditorClient(unstable=unstable)
    await client.start_io(*command, env=dict(env) if env is not None else agent_env())
    capabilities = types.ClientCapabilities(
        fs=types.FileSystemCapabilities(read_text_file=reads_files, write_text_file=False),
        session=(
            types.ClientSessionCapabilities(compaction=types.CompactionCapabilities())
            if shows_compaction
            else None
        ),
    )
    try:
        await client.request(
            methods.INITIALIZE,
            types.InitializeRequest(protocol_version=1, client_capabilities=capabilities),
        )
        yield client
    finally:
        await client.stop()
    assert client.wire_problems() == []


def write_script(path: Path, *replies: list[dict[str, Any]], **extra: Any) -> Path:
    """Write a script of `replies` to `path`; returns it."""
    path.write_text(json.dumps({"replies": list(replies), **extra}))
    return path


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
