"""Writes back every line it reads, as a misconfigured relay would, after a greeting
and a batch of its own: a client that answers garbage or arrays loops with it."""

import sys

print("hello?", flush=True)
print("[1, 2, 3]", flush=True)
for line in sys.stdin:
    sys.stdout.write(line)
    sys.stdout.flush()
