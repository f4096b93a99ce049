"""A stdio "server" that reads every request and never answers (exits when stdin closes)."""

from __future__ import annotations

import sys

for _line in sys.stdin:
    pass
