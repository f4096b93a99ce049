"""An MCP server over streamable HTTP (`http`) or SSE (`sse`) on 127.0.0.1, for the tests.

Binds a free port first and prints it on stdout, then serves the same
`add` and `picture` tools as `tools_server.py`.
"""

from __future__ import annotations

import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from tools_server import add, picture  # the same functions, another server

server = MCPServer("test-http")
server.add_tool(add)
server.add_tool(picture)


def main() -> None:
    transport = sys.argv[1]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    print(sock.getsockname()[1], flush=True)
    app = server.streamable_http_app() if transport == "http" else server.sse_app()
    config = uvicorn.Config(app, log_level="warning")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
