"""`acp-agent check`: our client side as a conformance checker for any ACP agent.

A front end beside `adapters/acp` and `adapters/headless`: it starts the agent
under test (a fresh process per group of rules, its sessions in a scratch
directory), drives it
with our `ClientConnection` (`_probe`), and decides each rule of the catalogue
(`_rules`) with evidence (`_runs`). It imports `protocol` and the small shared
modules only, and jsonschema through `protocol.validation`.

- `run_check(argv)`: the command (`_command`).
"""

from __future__ import annotations

from acp_agent.adapters.check._command import main as run_check

__all__ = ("run_check",)
