"""The least an agent can be: initialize, session/new and session/prompt answered; the
rest refused. The hostile agents beside it build on it (run as scripts, they import it)."""

import json
import sys


def reply(message: dict) -> dict | None:
    """The response to `message`, or None for a notification."""
    if "id" not in message:
        return None
    results = {
        "initialize": {"protocolVersion": 1},
        "session/new": {"sessionId": "sess_minimal"},
        "session/prompt": {"stopReason": "end_turn"},
    }
    result = results.get(message.get("method"))
    if result is None:
        return {
            "jsonrpc": "2.0",
            "id": message["id"],
            "error": {"code": -32601, "message": "Method not found"},
        }
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def serve() -> None:
    for line in sys.stdin:
        answer = reply(json.loads(line))
        if answer is not None:
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    serve()
