"""Debug-only extension requests, served with `ACP_AGENT_DEBUG=1`: what tests observe inside.

`_acp-agent/debug/modules` answers `{"modules": [...], "warmup": state,
"gcThresholds": [...]}`: the modules the agent process has imported so far (sorted),
so a test can check what answering a request cost in imports, in the process itself
and at that moment, where the background warm-up is (`waiting`, `running`, `done`,
or `off`), and the garbage collector's thresholds (raised while the agent starts).
"""

from __future__ import annotations

import gc
import sys
from typing import Any, Final

from acp_agent.adapters.acp._warmup import Warmup
from protocol.connection import AgentConnection
from protocol.methods import MessageKind

__all__ = ("MODULES_METHOD", "register_debug")

#: The extension request listing the imported modules.
MODULES_METHOD: Final = "_acp-agent/debug/modules"


def register_debug(connection: AgentConnection, warmup: Warmup | None = None) -> None:
    """Serve the debug requests on `connection` (only when debugging is asked for)."""

    def modules(params: Any) -> dict[str, Any]:
        state = "off" if warmup is None else warmup.state.value
        # A None entry marks a module as absent (httpx's command line client): not loaded.
        loaded = [name for name, module in list(sys.modules.items()) if module is not None]
        return {
            "modules": sorted(loaded),
            "warmup": state,
            "gcThresholds": list(gc.get_threshold()),
        }

    connection.register(MODULES_METHOD, modules, kind=MessageKind.REQUEST)
