"""The services the runtime itself provides, by scope.

Components registered in a `ServiceRegistry` resolve these with
`scope.get(KEY)`; the instance is the one of the caller's scope chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from acp_agent.core.scopes import ScopeKind, ServiceKey

if TYPE_CHECKING:
    from acp_agent.core.branch import Branch
    from acp_agent.core.dispatcher import Dispatcher
    from acp_agent.core.runtime import Runtime
    from acp_agent.core.session import Session
    from acp_agent.core.store import Store
    from acp_agent.core.timeline import Timeline

__all__ = ("BRANCH", "DISPATCHER", "RUNTIME", "SESSION", "STORE", "TIMELINE")

STORE: Final[ServiceKey[Store]] = ServiceKey("store", ScopeKind.PROCESS)
RUNTIME: Final[ServiceKey[Runtime]] = ServiceKey("runtime", ScopeKind.PROCESS)
SESSION: Final[ServiceKey[Session]] = ServiceKey("session", ScopeKind.SESSION)
BRANCH: Final[ServiceKey[Branch]] = ServiceKey("branch", ScopeKind.BRANCH)
TIMELINE: Final[ServiceKey[Timeline]] = ServiceKey("timeline", ScopeKind.BRANCH)
DISPATCHER: Final[ServiceKey[Dispatcher]] = ServiceKey("dispatcher", ScopeKind.BRANCH)
