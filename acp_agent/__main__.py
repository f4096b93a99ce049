"""`python -m acp_agent`: the same as the `acp-agent` command."""

from acp_agent.cli import main

__all__: tuple[str, ...] = ()

raise SystemExit(main())
