"""The app server's front end: one runtime, many ACP clients (`acp-agent server`).

A sibling of `adapters/acp` built on it: each connection, over the Unix socket
or WebSocket, is served by the ACP adapter itself (`_agent.ServerAcpAgent`),
exactly as a client over stdio, and reaches the runtime only through the
session handles. What the server adds:

- `_server.AppServer`: the listeners and the connections' lives (`_stream_io`
  for sockets, `_websocket` for WebSocket, `_places` for where it listens);
- `_audience`: who follows each session (attached clients by role, the client
  whose turn runs) and the side a session opens with;
- `_views.SessionView`: what one connection is shown of one session, each
  update with its cursor once attached (`_cursors`);
- `_attach`: `_acp-agent/attach` and `_acp-agent/detach`;
- `_children`: a session's branches as subagent sessions, for an attached
  client that negotiated them;
- `_questions.QuestionBroker`: a permission question asked of every controller,
  answered once (a branch's where each client sees it: `_branch_side`);
- `_files.SessionFiles`: a session's files, the server's disk or those of the
  controller that serves them;
- `_web`: the web page of `--web` and its one-time login (files in `web/`);
- `_jobs`: what attached clients are told of background jobs;
- `_bridge`: `acp-agent --connect`, the stdio command as a bridge to the server
  (it imports none of the above).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_agent.lazy_face import lazy_face as _lazy_face

if TYPE_CHECKING:
    from acp_agent.adapters.server._bridge import (
        ServerSettings,
        run_bridge,
        server_arguments,
        server_settings,
        server_socket,
        start_server,
    )
    from acp_agent.adapters.server._identity import TokenTableError, peer_person, token_table
    from acp_agent.adapters.server._places import PlaceError, default_socket, token_file
    from acp_agent.adapters.server._server import AppServer, ServerRunning
    from acp_agent.adapters.server._web import WebLogin
    from acp_agent.adapters.server._websocket import (
        AddressRefused,
        ListenAddress,
        WebSocketGate,
        listen_address,
        listen_websocket,
        server_token,
    )

__all__ = (
    "AddressRefused",
    "AppServer",
    "ListenAddress",
    "PlaceError",
    "ServerRunning",
    "ServerSettings",
    "TokenTableError",
    "WebLogin",
    "WebSocketGate",
    "default_socket",
    "listen_address",
    "listen_websocket",
    "peer_person",
    "run_bridge",
    "server_arguments",
    "server_settings",
    "server_socket",
    "server_token",
    "start_server",
    "token_file",
    "token_table",
)

#: The server's parts load when a server starts, never with the bridge.
__getattr__, __dir__ = _lazy_face(
    __name__,
    {
        "AppServer": "acp_agent.adapters.server._server",
        "ServerRunning": "acp_agent.adapters.server._server",
        "WebLogin": "acp_agent.adapters.server._web",
        "PlaceError": "acp_agent.adapters.server._places",
        "default_socket": "acp_agent.adapters.server._places",
        "token_file": "acp_agent.adapters.server._places",
        "ServerSettings": "acp_agent.adapters.server._bridge",
        "run_bridge": "acp_agent.adapters.server._bridge",
        "server_settings": "acp_agent.adapters.server._bridge",
        "server_arguments": "acp_agent.adapters.server._bridge",
        "server_socket": "acp_agent.adapters.server._bridge",
        "start_server": "acp_agent.adapters.server._bridge",
        "TokenTableError": "acp_agent.adapters.server._identity",
        "peer_person": "acp_agent.adapters.server._identity",
        "token_table": "acp_agent.adapters.server._identity",
        **dict.fromkeys(
            (
                "AddressRefused",
                "ListenAddress",
                "WebSocketGate",
                "listen_address",
                "listen_websocket",
                "server_token",
            ),
            "acp_agent.adapters.server._websocket",
        ),
    },
)
