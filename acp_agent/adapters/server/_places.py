"""Where the app server listens and keeps its token: private to the person running it.

The Unix socket lives in a folder only its owner may enter (0700, checked to
be ours: a folder someone else made there is refused, not used), and is
itself 0600; that is the socket's whole security (the kernel checks the
permissions on connect). Beside it: `server.lock` (held while a server
runs) and `server.pid` (its process id, removed when it stops). The default
is `<state folder>/server/acp.sock`, or `ACP_AGENT_SOCKET`; a path longer
than a socket address can hold is refused with a clear message. The
WebSocket token file (0600) sits beside it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

__all__ = (
    "MAX_SOCKET_PATH_BYTES",
    "PlaceError",
    "check_socket_path",
    "default_socket",
    "private_folder",
    "token_file",
)

#: What `sockaddr_un.sun_path` holds on Linux, less its final NUL.
MAX_SOCKET_PATH_BYTES: Final = 107


class PlaceError(Exception):
    """The socket's folder or path cannot be used safely."""


def default_socket(state_dir: Path) -> Path:
    """The server's socket: `ACP_AGENT_SOCKET`, else `<state_dir>/server/acp.sock`."""
    named = os.environ.get("ACP_AGENT_SOCKET")
    return Path(named) if named else state_dir / "server" / "acp.sock"


def token_file(socket: Path) -> Path:
    """Where a per-start WebSocket token is written (beside the socket)."""
    return socket.parent / "ws-token"


def private_folder(folder: Path) -> Path:
    """Make `folder` (and its parents) if need be, and make sure only we may enter it:
    ours, 0700. `PlaceError` if it belongs to someone else or cannot be made private."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise PlaceError(f"{folder} is not a folder")
    if info.st_uid != os.getuid():
        raise PlaceError(f"{folder} belongs to another user; refusing to listen there")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(folder, 0o700)
    return folder


def check_socket_path(socket: Path) -> None:
    """`PlaceError` for a path a Unix socket address cannot hold."""
    if len(os.fsencode(socket)) > MAX_SOCKET_PATH_BYTES:
        raise PlaceError(
            f"the socket path {socket} is longer than {MAX_SOCKET_PATH_BYTES} bytes; "
            "name a shorter one with --socket or ACP_AGENT_SOCKET"
        )
