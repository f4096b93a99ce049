"""Who a person is to acp-agent: the name their sessions and permission rules are kept under.

A session and a remembered permission rule belong to one person (their owner);
only that person's clients see the session, and a rule holds in that person's
sessions only. In the stdio agent the person is the one running it: the OS
user's login name, or `ACP_AGENT_PERSON` when set (a shared account, a CI
runner naming whom it works for). The app server names each connection's person
itself (`acp_agent.adapters.server._identity`).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from typing import Final

__all__ = ("PERSON_ENV", "local_person", "person_of_uid")

#: The environment variable naming the person, instead of the OS user.
PERSON_ENV: Final = "ACP_AGENT_PERSON"


def local_person(env: Mapping[str, str] | None = None) -> str:
    """The person this process works for: `ACP_AGENT_PERSON`, else the OS user's name."""
    given = (os.environ if env is None else env).get(PERSON_ENV, "").strip()
    return given or person_of_uid(os.getuid())


def person_of_uid(uid: int) -> str:
    """The login name of `uid`; `uid:<n>` for a uid without an account (a container's)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid:{uid}"
