"""`acp-agent store`: look after the session store itself (today: `migrate`).

A front end of its own, beside `headless` and `doctor`: it works on stores
directly, never through an agent process, since it copies between two of them.

- `run_store(argv)`: `acp-agent store migrate --from URL --to URL` (`_migrate`).
"""

from __future__ import annotations

from acp_agent.adapters.store_admin._migrate import main as run_store

__all__ = ("run_store",)
