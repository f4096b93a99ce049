"""Echoes every line it reads back as chat ("echo: ..."), as a misconfigured relay
would: a client that answers what it cannot parse feeds it forever."""

import sys

for line in sys.stdin:
    sys.stdout.write("echo: " + line)
    sys.stdout.flush()
