"""The runtime core: sessions, branches, timelines and the dispatcher.

It imports nothing from `protocol`, the adapters or the far side (models,
MCP, LSP); an import-linter contract checks that.
"""

__all__: tuple[str, ...] = ()
