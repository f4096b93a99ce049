"""ACP steps tests take over and over: initialize, open a session, build a prompt."""

from __future__ import annotations

from protocol import methods, types
from tests.support import AcpTestClient

__all__ = ("initialize", "new_session", "prompt_request", "text_of")


async def initialize(client: AcpTestClient, version: int = 1) -> types.InitializeResponse:
    response: types.InitializeResponse = await client.request(
        methods.INITIALIZE, types.InitializeRequest(protocol_version=version)
    )
    return response


async def new_session(client: AcpTestClient, cwd: str = "/tmp") -> str:
    response = await client.request(
        methods.SESSION_NEW, types.NewSessionRequest(cwd=cwd, mcp_servers=[])
    )
    return str(response.session_id)


def prompt_request(session_id: str, *blocks: types.ContentBlock) -> types.PromptRequest:
    return types.PromptRequest(
        session_id=session_id, prompt=list(blocks) or [types.TextContent(text="Hi")]
    )


def text_of(update: types.SessionUpdate) -> str:
    content = getattr(update, "content", None)
    return content.text if isinstance(content, types.TextContent) else ""
