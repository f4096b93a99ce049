"""Many long-lived objects made at once (a long session's history read, folded, replayed).

CPython's cyclic collector runs every few hundred allocations, and a full pass
walks every object alive: while a load decodes, folds and replays ninety
thousand events, the passes it triggers walk the history made so far again and
again (for a 5,000-turn session they doubled the load). `gc_paused()` keeps the
collector off for such a stretch; objects are still freed by their reference
counts, and the first collection after it finds whatever cycles were left.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ("gc_paused",)

_lock = threading.Lock()
#: Stretches paused now (a thread's read and the event loop's replay may overlap).
_depth = 0
#: Whether the collector was on when the first of them began.
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off for the block (and any overlapping one), then as it was."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
