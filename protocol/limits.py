"""Limits on what a peer may send, enforced where its messages enter.

A line the agent reads may be at most `MAX_AGENT_LINE_BYTES` long: a longer
one is skipped to its newline without being kept (so one line costs at most
that much memory) and answered -32600.

A message may nest at most `MAX_JSON_DEPTH` levels, counting the message
object itself as level 1 (`nesting_exceeds` tells): everything a peer sends
is walked by recursive code sooner or later, so nesting is bounded at the
edge. Both bounds are the agent's too; they live in `jsonbounds`, a leaf this
package and the agent share.
"""

from __future__ import annotations

from typing import Final

from jsonbounds import MAX_JSON_DEPTH, nesting_exceeds

__all__ = ("MAX_AGENT_LINE_BYTES", "MAX_JSON_DEPTH", "nesting_exceeds")

#: The largest line the agent side reads from its client, newline excluded.
#: Generous (a prompt carries whole files and base64 images), and what one
#: line may cost in memory: a longer line is skipped without being kept.
MAX_AGENT_LINE_BYTES: Final = 64 * 1024 * 1024
