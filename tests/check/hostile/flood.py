"""A minimal agent that floods session/update for its session from the start, forever."""

import json
import sys
import threading

from minimal import reply

lock = threading.Lock()
update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x" * 200}}
flood = json.dumps(
    {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "sess_minimal", "update": update},
    }
)


def write(text: str) -> None:
    with lock:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def keep_flooding() -> None:
    while True:
        write(flood)


threading.Thread(target=keep_flooding, daemon=True).start()
for line in sys.stdin:
    answer = reply(json.loads(line))
    if answer is not None:
        write(json.dumps(answer))
