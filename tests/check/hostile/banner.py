"""Banners and progress chatter on stdout around a minimal agent's answers."""

import json
import sys

from minimal import reply

print("Welcome to banner-agent 1.0 (c) nobody", flush=True)
print("\x1b[32mready\x1b[0m", flush=True)
for line in sys.stdin:
    print("processing request...", flush=True)
    answer = reply(json.loads(line))
    if answer is not None:
        print(json.dumps(answer), flush=True)
