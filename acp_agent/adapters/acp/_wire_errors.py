"""The runtime's errors as ACP error responses: one table, for every handler.

    with wire_errors(session_id):
        session = await runtime.load_session(session_id)

Inside the block, an error the core, the store or the runtime host raises is
answered as the table says; anything else propagates (a handler's own
`AcpError`, or a bug, which the connection answers -32603 and logs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from acp_agent.adapters.acp._host import RuntimeUnavailable
from protocol.errors import AcpError, InternalError, InvalidParams, InvalidRequest, ResourceNotFound

__all__ = ("wire_error", "wire_errors")


def _not_found(exc: Exception, session_id: str | None, field: str | None) -> AcpError:
    what = f"no session {session_id}" if session_id is not None else str(exc)
    data = {"sessionId": session_id} if session_id is not None else None
    return ResourceNotFound(f"Resource not found: {what}", data)


def _illegal_cut(exc: Exception, session_id: str | None, field: str | None) -> AcpError:
    return InvalidParams(f"Invalid params: {field}: {exc}" if field else f"Invalid params: {exc}")


def _held(exc: Exception, session_id: str | None, field: str | None) -> AcpError:
    # Who holds it, for a client that says so (`acp-agent exec` exits 4 naming the pid).
    holder = getattr(exc, "holder", None)
    data = None
    if holder is not None:
        data = {"acp-agent": {"heldBy": {"pid": holder.pid, "host": holder.host}}}
    return InvalidRequest(f"Invalid request: {exc}", data)


def _internal(exc: Exception, session_id: str | None, field: str | None) -> AcpError:
    return InternalError(f"Internal error: {exc}")


_Row = tuple[type[Exception], Callable[[Exception, str | None, str | None], AcpError]]


@functools.cache
def _table() -> tuple[_Row, ...]:
    """Most specific first: `SessionHeld` and `StoreNotFound` are `StoreError`s too.
    Built on first use: the core loads with the first session, not with `initialize`."""
    from acp_agent.core import IllegalCut, SessionHeld, StoreError, StoreNotFound

    return (
        (StoreNotFound, _not_found),
        (SessionHeld, _held),
        (IllegalCut, _illegal_cut),
        (StoreError, _internal),
        (RuntimeUnavailable, _internal),
    )


def wire_error(
    exc: Exception, *, session_id: str | None = None, field: str | None = None
) -> AcpError | None:
    """The error response for `exc`, or None if the table has no row for it.

    `session_id` names the session a "not found" is about; `field` the request
    field an illegal cut came from (`_meta.acp-agent.throughPrompt`, ...).
    """
    for cls, make in _table():
        if isinstance(exc, cls):
            return make(exc, session_id, field)
    return None


@contextmanager
def wire_errors(session_id: str | None = None, *, field: str | None = None) -> Iterator[None]:
    """Answer the runtime's errors raised inside the block as the table says."""
    try:
        yield
    except Exception as exc:
        error = wire_error(exc, session_id=session_id, field=field)
        if error is None:
            raise
        raise error from None
