"""Bounds on JSON from outside: how deep a value may nest, how long a line of it may be.

A leaf both the wire layer (`protocol`) and the agent (`acp_agent`) use: JSON
a peer, a provider or a tool server sends is walked by recursive code later,
and a line of it is held in memory whole, so each is bounded where it enters.
It imports nothing of either (only attrs), so neither has to keep a copy.

- `nesting_exceeds(value)`: whether a value nests deeper than `MAX_JSON_DEPTH`
  levels, and `TOO_DEEP`, how a refusal names that limit;
- `LineSplitter`: a byte stream's lines, each kept only up to a limit; a
  longer one comes out as an `OverLongLine` (its size and first bytes).
"""

from __future__ import annotations

from jsonbounds._lines import HEAD_BYTES, LineSplitter, OverLongLine
from jsonbounds._nesting import MAX_JSON_DEPTH, TOO_DEEP, nesting_exceeds

__all__ = (
    "HEAD_BYTES",
    "MAX_JSON_DEPTH",
    "TOO_DEEP",
    "LineSplitter",
    "OverLongLine",
    "nesting_exceeds",
)
