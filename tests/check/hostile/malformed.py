"""Answers every request with one malformed shape (`SHAPES`), but those whose methods
follow --good: those are answered well (initialize advertising everything, so every
probe behind it runs).

    malformed.py SHAPE [--good METHOD ...]
"""

import json
import sys

from minimal import reply

EVERYTHING = {
    "protocolVersion": 1,
    "agentCapabilities": {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
        "sessionCapabilities": {
            k: {} for k in ("list", "close", "delete", "resume", "additionalDirectories")
        },
    },
}
WRONG_TYPES = {
    "protocolVersion": "1",
    "agentCapabilities": "all",
    "authMethods": "none",
    "agentInfo": 3,
    "sessionId": 5,
    "modes": [],
    "configOptions": {"a": 1},
    "sessions": "none",
    "stopReason": 7,
}
SHAPES = {
    "result-string": lambda i: {"jsonrpc": "2.0", "id": i, "result": "ok"},
    "result-null": lambda i: {"jsonrpc": "2.0", "id": i, "result": None},
    "result-list": lambda i: {"jsonrpc": "2.0", "id": i, "result": [1, 2]},
    "error-string": lambda i: {"jsonrpc": "2.0", "id": i, "error": "boom"},
    "error-no-code": lambda i: {"jsonrpc": "2.0", "id": i, "error": {"message": "boom"}},
    "both": lambda i: {
        "jsonrpc": "2.0",
        "id": i,
        "result": {},
        "error": {"code": 1, "message": "x"},
    },
    "neither": lambda i: {"jsonrpc": "2.0", "id": i},
    "wrong-types": lambda i: {"jsonrpc": "2.0", "id": i, "result": WRONG_TYPES},
    "id-changed": lambda i: {"jsonrpc": "2.0", "id": [i], "result": {}},
    "batch": lambda i: [{"jsonrpc": "2.0", "id": i, "result": {}}],
    "deep": lambda i: "[" * 100_000 + "]" * 100_000,
    "huge": lambda i: {"jsonrpc": "2.0", "id": i, "result": {"x": "y" * (20 * 1024 * 1024)}},
}

shape = SHAPES[sys.argv[1]]
#: Methods answered well (initialize advertising everything), named after --good.
good = set(sys.argv[sys.argv.index("--good") + 1 :]) if "--good" in sys.argv else set()
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message.get("method") in good:
        answer = reply(message)
        if message["method"] == "initialize":
            answer["result"] = EVERYTHING
    else:
        answer = shape(message["id"])
    print(answer if isinstance(answer, str) else json.dumps(answer), flush=True)
