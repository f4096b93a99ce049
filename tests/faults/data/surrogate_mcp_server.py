"""A bare stdio MCP server whose one tool answers text holding a lone surrogate.

Written without the SDK, whose encoder would refuse the surrogate: JSON allows
`\\ud800` on its own, and a server in another language may well send it.
"""

from __future__ import annotations

import json
import sys

TOOL = {
    "name": "garbled",
    "description": "Text with a lone surrogate.",
    "inputSchema": {"type": "object"},
}


def answer(msg_id: object, result: object) -> None:
    # ensure_ascii (the default) writes the lone surrogate as the escape `\ud800`.
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, msg_id = message.get("method"), message.get("id")
    if msg_id is None:
        continue  # notifications
    if method == "initialize":
        answer(
            msg_id,
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "garbled", "version": "1"},
            },
        )
    elif method == "tools/list":
        answer(msg_id, {"tools": [TOOL]})
    elif method == "tools/call":
        answer(msg_id, {"content": [{"type": "text", "text": "before \ud800 after"}]})
    else:
        sys.stdout.write(
            json.dumps(
                {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": method}}
            )
            + "\n"
        )
        sys.stdout.flush()
