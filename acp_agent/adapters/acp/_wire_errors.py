"""The runtime's errors as ACP error responses: one table, for every handler.

    with wire_errors(session_id):
        session = await runtime.load_session(session_id)

Inside the block, an error the core, the store or the runtime host raises is
answered as the table says; anything else propagates (a handler's own
`AcpError`, or a bug, which the connection answers -32603 and logs).

A store that cannot be written (ACP has no code for it) is -32603 with
`data: {"acp-agent": {"error": {"kind", "message", "location"}}}`, the kind
`storage_full` (its message names the disk and the store's folder) or
`storage_unavailable`, as a prompt's answer names them in its `_meta`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

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


def _storage(exc: Exception, session_id: str | None, field: str | None) -> AcpError:
    """A store that cannot be written: a full disk names the disk and the store's folder."""
    from acp_agent.agent import StoreFull  # loaded by now (the table matched a store error)

    if not isinstance(exc, StoreFull):
        return InternalError(f"Internal error: {exc}", _storage_data(exc))
    where = getattr(exc, "location", None)
    folder = Path(where).parent if where else None
    message = (
        f"Internal error: the disk at {_mount_point(folder)} is full, so the session store "
        f"in {folder} cannot be written; free some space there and try again"
        if folder is not None
        else "Internal error: the disk is full, so the session store cannot be written"
    )
    return InternalError(message, _storage_data(exc))


def _unavailable(exc: Exception, session_id: str | None, field: str | None) -> AcpError:
    """The runtime could not open: named as the store's failure when that was the cause."""
    from acp_agent.agent import StoreFull, StoreUnavailable  # the core loads with a session

    cause = exc.__cause__
    if isinstance(cause, StoreFull):
        return _storage(cause, session_id, field)
    if isinstance(cause, StoreUnavailable):
        return InternalError(f"Internal error: {exc}", _storage_data(cause))
    return _internal(exc, session_id, field)


def _storage_data(exc: Exception) -> dict[str, object]:
    """`data` of a store error's answer: `{"acp-agent": {"error": {kind, message, location}}}`."""
    from acp_agent.agent import StoreFull  # loaded by now (the table matched a store error)

    error = {"kind": "storage_full" if isinstance(exc, StoreFull) else "storage_unavailable"}
    error["message"] = str(exc)
    where = getattr(exc, "location", None)
    if where:
        error["location"] = str(Path(where).parent)
    return {"acp-agent": {"error": error}}


def _mount_point(folder: Path) -> Path:
    """The mount point of the file system `folder` (or its nearest existing parent) is on."""
    path = folder
    try:
        while not path.exists() and path != path.parent:
            path = path.parent
        device = path.stat().st_dev
        while path != path.parent and path.parent.stat().st_dev == device:
            path = path.parent
    except OSError:
        return folder
    return path


_Row = tuple[type[Exception], Callable[[Exception, str | None, str | None], AcpError]]


@functools.cache
def _table() -> tuple[_Row, ...]:
    """Most specific first: `SessionHeld` and `StoreNotFound` are `StoreError`s too.
    Built on first use: the core loads with the first session, not with `initialize`."""
    from acp_agent.agent import IllegalCut, SessionHeld, StoreError, StoreNotFound, StoreUnavailable

    return (
        (StoreNotFound, _not_found),
        (SessionHeld, _held),
        (IllegalCut, _illegal_cut),
        (StoreUnavailable, _storage),
        (StoreError, _internal),
        (RuntimeUnavailable, _unavailable),
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
