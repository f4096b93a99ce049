"""Exits at once, saying why on stderr, as an agent without its API key does."""

import sys

print("fatal: SOME_API_KEY is not set", file=sys.stderr)
sys.exit(3)
