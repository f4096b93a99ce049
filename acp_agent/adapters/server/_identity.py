"""Who a connection to the app server is: the person its sessions and rules belong to.

- **Unix socket**: the peer's uid, as the kernel reports it (`SO_PEERCRED`):
  the server's own uid is the server's person (`local_person`: the login name,
  or `ACP_AGENT_PERSON`), any other uid its login name. The socket is 0600 in
  a 0700 folder, so only the server's uid (and root) connect unless a person
  opened it up themselves.
- **WebSocket**: the bearer token. The server's token (`ACP_AGENT_SERVER_TOKEN`,
  or the one drawn at start) is the server's person. A token table
  (`ACP_AGENT_SERVER_TOKENS`: a file of `person token` lines, private to the
  server's uid) adds one token per person, for a team sharing one server.

The person decides what a client sees: the sessions it creates are theirs,
and it lists, loads, attaches to, forks and deletes only theirs; the
permission rules they keep hold in their sessions only (`acp_agent.people`).
"""

from __future__ import annotations

import os
import socket as sockets
import stat
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from acp_agent.adapters.server._places import PlaceError
from acp_agent.people import local_person, person_of_uid

__all__ = ("TOKENS_VARIABLE", "TokenTableError", "peer_person", "token_table")

#: The environment variable naming the token table's file.
TOKENS_VARIABLE: Final = "ACP_AGENT_SERVER_TOKENS"

#: `struct ucred`: pid, uid, gid.
_UCRED: Final = struct.Struct("3i")


class TokenTableError(PlaceError):
    """The token table cannot be used (unreadable, open to others, malformed)."""


def peer_person(connection: sockets.socket, server_person: str | None = None) -> str:
    """The person at the other end of a Unix socket connection (see the module docstring)."""
    raw = connection.getsockopt(sockets.SOL_SOCKET, sockets.SO_PEERCRED, _UCRED.size)
    _, uid, _ = _UCRED.unpack(raw)
    if uid == os.getuid():
        return local_person() if server_person is None else server_person
    return person_of_uid(uid)


def token_table(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Token -> person from the file `ACP_AGENT_SERVER_TOKENS` names; empty when unset.

    One `person token` pair a line (blank lines and `#` comments skipped); the file
    must belong to the server's uid and be readable by it alone (it holds secrets).
    """
    named = (os.environ if env is None else env).get(TOKENS_VARIABLE, "").strip()
    if not named:
        return {}
    path = Path(named)
    try:
        status = path.stat()
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenTableError(f"{TOKENS_VARIABLE}: cannot read {path}: {exc}") from exc
    if status.st_uid != os.getuid() or stat.S_IMODE(status.st_mode) & 0o077:
        raise TokenTableError(
            f"{TOKENS_VARIABLE}: {path} holds tokens: it must be yours and private (chmod 600)"
        )
    table: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2:
            raise TokenTableError(f"{path}:{number}: expected `person token`")
        person, token = words
        if token in table and table[token] != person:
            raise TokenTableError(f"{path}:{number}: a token given to two people")
        table[token] = person
    return table
