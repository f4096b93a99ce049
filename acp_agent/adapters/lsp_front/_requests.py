"""Requests to the editor from the runtime's tasks, safely cancellable and bounded.

pygls 2.1.1 sets a late reply on the future of a request whose waiter was cancelled
and logs `InvalidStateError` (pygls #621): the waiter awaits a shield of it instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import anyio
from pygls.lsp.server import LanguageServer

from acp_agent.toolkit import ClientTimedOut

__all__ = ("request",)


async def request(
    server: LanguageServer, method: str, params: Any, *, timeout_s: float | None
) -> Any:
    """Send `method` to the editor and wait for its result (`timeout_s`: `ClientTimedOut`
    after that long; None: a person answers it, as long as they take). An error reply
    raises pygls' `JsonRpcException` for it."""
    future = asyncio.wrap_future(server.protocol.send_request(method, params))
    waiting = contextlib.nullcontext() if timeout_s is None else anyio.fail_after(timeout_s)
    try:
        with waiting:
            return await asyncio.shield(future)
    except TimeoutError:
        raise ClientTimedOut(method, timeout_s or 0.0) from None
