"""Answers each request with the lines a plan (a JSON file) gives its method, and nothing
for a method the plan leaves out; the fuzz test draws the plans.

A plan is {method: [line, ...]}: a line is {"raw": text}, written as it is, or
{"json": value}, where the strings "$ID", "$ID_TEXT", "$NEW" and "$SID" stand for the
request's id, that id as a string, a new session id, and the request's sessionId.
"""

import itertools
import json
import sys
from pathlib import Path

plan = json.loads(Path(sys.argv[1]).read_text())
fresh = itertools.count(1)


def fill(value, request):
    if isinstance(value, dict):
        return {k: fill(v, request) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, request) for v in value]
    params = request.get("params")
    stands_for = {
        "$ID": lambda: request["id"],
        "$ID_TEXT": lambda: str(request["id"]),
        "$NEW": lambda: f"sess_{next(fresh)}",
        "$SID": lambda: params.get("sessionId") if isinstance(params, dict) else None,
    }
    return stands_for[value]() if isinstance(value, str) and value in stands_for else value


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request or "method" not in request:
        continue
    for out in plan.get(request["method"], []):
        text = out["raw"] if "raw" in out else json.dumps(fill(out["json"], request))
        print(text, flush=True)
