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
#: What to do about a socket's folder that cannot be used.
_ELSEWHERE: Final = "name another place for the socket with --socket or ACP_AGENT_SOCKET"


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
    ours, 0700. `PlaceError` if it is not a folder, cannot be made, belongs to someone
    else or cannot be made private, or if it was there already and others may enter it:
    a folder of the person's (their home, `/tmp`) is never made private behind their back.
    """
    existed = os.path.lexists(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError:  # a file (not a folder) is there
        raise PlaceError(f"{folder} is not a folder; {_ELSEWHERE}") from None
    except OSError as exc:  # a file on the way, no permission, a read-only disk
        raise PlaceError(
            f"the folder {folder} cannot be made ({_why(exc)}); {_ELSEWHERE}"
        ) from None
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise PlaceError(f"{folder} is not a folder; {_ELSEWHERE}")
    if info.st_uid != os.getuid():
        raise PlaceError(f"{folder} belongs to another user; refusing to listen there")
    mode = stat.S_IMODE(info.st_mode)
    if mode != 0o700 and existed and mode & 0o077:
        raise PlaceError(
            f"others may enter {folder} (mode {mode:o}), and the socket's folder must be "
            f"yours alone; {_ELSEWHERE} (a folder of its own, which it makes private)"
        )
    if mode != 0o700:
        try:
            os.chmod(folder, 0o700)
        except OSError as exc:
            raise PlaceError(
                f"the folder {folder} cannot be made private ({_why(exc)}); {_ELSEWHERE}"
            ) from None
    return folder


def _why(exc: OSError) -> str:
    """An `OSError`'s reason alone ("Permission denied"), its path being said already."""
    return exc.strerror or str(exc)


def check_socket_path(socket: Path) -> None:
    """`PlaceError` for a path a Unix socket address cannot hold."""
    if len(os.fsencode(socket)) > MAX_SOCKET_PATH_BYTES:
        raise PlaceError(
            f"the socket path {socket} is longer than {MAX_SOCKET_PATH_BYTES} bytes; "
            "name a shorter one with --socket or ACP_AGENT_SOCKET"
        )
