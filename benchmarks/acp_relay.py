"""A minimal ACP agent: the floor of the protocol paths the start-up benchmark measures.

Usage: `python benchmarks/acp_relay.py` with `OPENAI_BASE_URL` (ending in `/v1`) and
`OPENAI_API_KEY`; it speaks ACP on stdin and stdout.

It answers `initialize`, and `session/new` with a fresh id (nothing stored), and
relays each `session/prompt` to an OpenAI-compatible server (Chat Completions,
streamed): each text delta goes out as an `agent_message_chunk` as it arrives, then
the prompt is answered `end_turn`. Standard library only, one thread, no history,
no tools: what any agent at least does between an editor and a model, so that
`benchmarks/startup.py` can say how far above it acp-agent is.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import uuid
from typing import Any, BinaryIO
from urllib.parse import urlsplit

MODEL = "relay"


def send(out: BinaryIO, message: dict[str, Any]) -> None:
    out.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    out.flush()


def stream_reply(base_url: str, api_key: str, text: str) -> Any:
    """The text deltas of a streamed Chat Completions reply to `text`, as they arrive."""
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port or 80)
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": text}]}
    connection.request(
        "POST",
        f"{url.path.rstrip('/')}/chat/completions",
        json.dumps(body),
        {"content-type": "application/json", "authorization": f"Bearer {api_key}"},
    )
    response = connection.getresponse()
    try:
        for raw in response:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                return
            for choice in json.loads(data).get("choices") or ():
                content = (choice.get("delta") or {}).get("content")
                if content:
                    yield content
    finally:
        connection.close()


def prompt_text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(block.get("text", "") for block in blocks if block.get("type") == "text")


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    base_url = os.environ["OPENAI_BASE_URL"]
    api_key = os.environ.get("OPENAI_API_KEY", "")
    for line in stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": 1,
                "agentCapabilities": {},
                "authMethods": [],
                "agentInfo": {"name": "acp-relay", "version": "0"},
            }
        elif method == "session/new":
            result = {"sessionId": uuid.uuid4().hex}
        elif method == "session/prompt":
            session_id = params["sessionId"]
            for delta in stream_reply(base_url, api_key, prompt_text(params["prompt"])):
                update = {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": delta},
                }
                send(
                    stdout,
                    {
                        "method": "session/update",
                        "params": {"sessionId": session_id, "update": update},
                    },
                )
            result = {"stopReason": "end_turn"}
        elif request_id is None:
            continue  # a notification (cancel): nothing runs between prompts
        else:
            send(
                stdout,
                {"id": request_id, "error": {"code": -32601, "message": "Method not found"}},
            )
            continue
        send(stdout, {"id": request_id, "result": result})


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
