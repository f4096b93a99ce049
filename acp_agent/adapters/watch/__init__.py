"""`acp-agent watch`: follow (and steer) a session of the app server from a terminal.

A client of the server like any other: it speaks ACP on the server's Unix
socket and attaches to a session (`_acp-agent/attach`), so everything it
shows comes from the session's updates and the server's notices; it reads
nothing from the store. `_client` is the connection, `_show` how a session is
shown (one line per event, or the terminal view), `_lines` the line each
event makes, `_main` the command. It imports none of the runtime.
"""

from __future__ import annotations

from acp_agent.adapters.watch._main import main as run_watch

__all__ = ("run_watch",)
