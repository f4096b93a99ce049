"""`acp-agent doctor`: the local set-up inspected directly, one screen of what works.

A front end beside `adapters/acp`, `adapters/headless` and `adapters/check`;
unlike those two it drives no agent over ACP but calls the runtime's own loaders
(paths, the models config, the store, the MCP and language-server settings), so
what it reports is what a session would get. Nothing imports it but `cli.py`,
lazily: serving never loads it.

- `run_doctor(argv)`: the command (`_command`); the checks are one module each
  (`_installation`, `_model` with `_provider_probe`, `_store`, `_sandbox`,
  `_mcp`, `_lsp`, `_project`), the report and its `--json` shape in `_report`, the screen in
  `_screen`.
"""

from __future__ import annotations

from acp_agent.adapters.doctor._command import main as run_doctor

__all__ = ("run_doctor",)
