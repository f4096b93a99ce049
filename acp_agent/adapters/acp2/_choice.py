"""Which ACP version a connection speaks, chosen at its first `initialize`.

    choose_protocol(connection, v1=register_v1, v2=register_v2)

The v1 adapter is registered from the start (a v1 client, the default, pays
nothing for v2: `protocol.v2` is imported only once v2 is chosen). At the first
`initialize` the requested `protocolVersion` decides, before the request is
routed: 2 gets the v2 adapter, 1 the v1 adapter, anything else the highest
version the agent speaks (2), as ACP says an agent answers a version it does
not speak. A request in v1's shape (without v2's required `info`: a v1 client,
whatever version it names) gets v1, which answers version 1 to any request.
`ACP_AGENT_PROTOCOL=v1|v2` forces one whatever the client asks (`auto`, the
default, chooses; the peers' `CLAUDE_AGENT_ACP_PROTOCOL` works alike). Later
`initialize`s go to the adapter chosen.
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Callable
from typing import Any, Final

from protocol.connection import AgentConnection

__all__ = (
    "PROTOCOL_ENV",
    "ProtocolSetting",
    "choose_protocol",
    "chosen_version",
    "protocol_setting",
)

logger = logging.getLogger(__name__)

#: The setting that forces a version (`auto`, `v1`, `v2`).
PROTOCOL_ENV: Final = "ACP_AGENT_PROTOCOL"
#: The highest ACP version this agent speaks.
HIGHEST: Final = 2


class ProtocolSetting(enum.StrEnum):
    """What `ACP_AGENT_PROTOCOL` says: choose by the client's request, or force one."""

    AUTO = "auto"
    V1 = "v1"
    V2 = "v2"


def protocol_setting(environ: dict[str, str] | None = None) -> ProtocolSetting:
    """The setting in `environ` (default: ours); an unknown value is `auto`, logged."""
    text = (os.environ if environ is None else environ).get(PROTOCOL_ENV, "auto")
    try:
        return ProtocolSetting(text.strip().lower() or "auto")
    except ValueError:
        logger.warning("%s=%r is not auto, v1 or v2; choosing by the client", PROTOCOL_ENV, text)
        return ProtocolSetting.AUTO


def chosen_version(requested: Any, setting: ProtocolSetting, *, v1_shaped: bool = False) -> int:
    """The version to speak with a client whose `initialize` asked for `requested`;
    `v1_shaped`: the request lacks v2's required `info` (a v1 client, whatever it asks)."""
    if setting is ProtocolSetting.V1:
        return 1
    if setting is ProtocolSetting.V2:
        return 2
    if isinstance(requested, bool) or not isinstance(requested, int):
        return 1  # not a version at all: the v1 adapter answers it (-32602)
    if v1_shaped:
        return 1
    return requested if requested in (1, 2) else HIGHEST


def choose_protocol(
    connection: AgentConnection,
    *,
    v1: Callable[[], None],
    v2: Callable[[], None],
    setting: ProtocolSetting | None = None,
) -> None:
    """Register the v1 adapter (`v1()`) now; switch to v2 (`v2()`) at an `initialize`
    that asks for it (see the module docstring). Both register their handlers."""
    chosen = protocol_setting() if setting is None else setting
    v1()

    def on_request(method: str, params: Any) -> None:
        if method != "initialize":
            return
        connection.protocol.on_request(None)  # the first `initialize` decides
        fields = params if isinstance(params, dict) else {}
        requested = fields.get("protocolVersion")
        version = chosen_version(requested, chosen, v1_shaped="info" not in fields)
        logger.info(
            "Client asked for ACP version %r; speaking version %d (%s=%s)",
            requested,
            version,
            PROTOCOL_ENV,
            chosen.value,
        )
        if version == 2:
            from protocol.v2 import methods as v2_methods

            connection.protocol.use_methods(v2_methods, batches=True)
            v2()

    connection.protocol.on_request(on_request)
