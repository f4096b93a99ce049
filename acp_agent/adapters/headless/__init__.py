"""The headless front end: `acp-agent exec` and `acp-agent sessions`, for scripts and terminals.

A sibling of `adapters/acp`, not a part of it: each command starts the agent as a
child process serving ACP and drives it from the client side (`_agent_process`),
so a script gets exactly what an editor gets. It imports only `protocol` and the
small shared modules, never the runtime.

- `run_exec(argv)`: one prompt; the final answer (or JSON lines) on stdout (`_exec`).
- `run_sessions(argv)`: list, show, export, delete stored sessions (`_sessions`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ("run_exec", "run_sessions")


def run_exec(argv: Sequence[str]) -> int:
    """`acp-agent exec` with `argv` (after the command name); its exit status."""
    # Only the command line's modules load first: `exec` starts its agent before it
    # loads the rest (see `_exec`).
    from acp_agent.adapters.headless._exec import main

    return main(argv)


def run_sessions(argv: Sequence[str]) -> int:
    """`acp-agent sessions` with `argv` (after the command name); its exit status."""
    from acp_agent.adapters.headless._sessions import main

    return main(argv)
