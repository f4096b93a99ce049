"""`acp-agent check`: our client side as a conformance checker for any ACP agent.

A front end beside `adapters/acp` and `adapters/headless`. It starts the agent under
test in fresh processes, each in a process group of its own (`_process`), speaks to
it as a client of its own (`_probe`) and holds it to the catalogue (`_rules`), group
by group (`_handshake`, `_sessions` with `_prompts` and `_settings`, `_turns`,
`_persistence`), within a deadline (`_runs`); every line is judged as it arrives
(`_judge`) and every reply read without trusting its shape (`_replies`). It imports
`protocol` and the small shared modules only, and jsonschema through
`protocol.validation`.

- `run_check(argv)`: the command (`_command`).
"""

from __future__ import annotations

from acp_agent.adapters.check._command import main as run_check

__all__ = ("run_check",)
