"""Writer leases in PostgreSQL: an advisory lock per session, held on a connection, and a heartbeat.

A session is written by one store handle at a time, anywhere. What says so:

- `session_leases` names the holder (its owner token). Every write of a
  session checks that row, locked `FOR SHARE`, in the write's own
  transaction; taking a lease over updates the row, which waits for such a
  write to commit. So the row is the fence: a write either commits before a
  takeover (and the new holder loads it) or is refused with `SessionHeld`.
- The holder keeps a session-level advisory lock on the session (keyed by a
  hash of its id) on its *lease connection*. The server releases it the moment
  that connection ends: a process killed, crashed or shut down lets go at
  once, with nothing of ours involved.
- The holder's row in `lease_holders` carries a heartbeat, renewed every
  third of its lease timeout by a thread of the store (`DEFAULT_LEASE_TIMEOUT_S`,
  30 s, unless configured). It covers what a connection cannot show: a holder
  whose machine vanished (its connection looks open until the server's TCP
  keepalives, set to give up within the same timeout, notice) or whose process
  is frozen.

Taking a lease (`acquire`), on the server's clock:

- the lock is free and the lease row names nobody, us, or a holder that beat
  since the server started: its connection is gone, so it is taken over;
- the lock is free but the holder last beat before the server (re)started: it
  may be reconnecting, so it keeps the lease until its heartbeat is stale;
- the lock is held and the holder's heartbeat is stale (older than the
  holder's own timeout): the holder's lease connection is ended with
  `pg_terminate_backend` (the same database role, or one granted
  `pg_signal_backend`, may do that) and the lock taken once it is free;
- otherwise `SessionHeld`, naming the holder's pid and host.

A holder whose lease connection broke reconnects, takes its locks again for
the sessions whose rows still name it (a session taken over meanwhile is lost:
its writes get `SessionHeld`), and only then beats again.

Everything here blocks: the store calls it on worker threads, the heartbeat
runs on a thread of its own, and one mutex keeps them to one at a time.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

import attrs

from acp_agent.core import LeaseHolder, SessionHeld, SessionId, StoreConflict, StoreNotFound
from acp_agent.store._leases import LeaseOwner
from acp_agent.store._pg_errors import Failure, classify, translate
from acp_agent.values import Value

if TYPE_CHECKING:
    import psycopg

__all__ = ("DEFAULT_LEASE_TIMEOUT_S", "LeaseKeeper", "LeaseRow", "lease_lock_key")

logger = logging.getLogger(__name__)

#: How long a holder's heartbeat may be silent before its lease may be taken over.
DEFAULT_LEASE_TIMEOUT_S: Final = 30.0
#: How long a takeover waits for the lock once the stale holder's connection was ended.
_TAKEOVER_WAIT_S: Final = 5.0
#: How long closing waits for a heartbeat under way.
_CLOSE_WAIT_S: Final = 2.0

_LEASE_ROW: Final = (
    "SELECT l.owner_token, h.pid, h.host, h.backend_pid,"
    " h.heartbeat_at IS NULL"
    "  OR clock_timestamp() - h.heartbeat_at > make_interval(secs => h.timeout_s),"
    " h.heartbeat_at IS NOT NULL AND h.heartbeat_at >= pg_postmaster_start_time()"
    " FROM session_leases l LEFT JOIN lease_holders h USING (owner_token)"
    " WHERE l.session_id = %s"
)
_TAKE: Final = (
    "INSERT INTO session_leases (session_id, owner_token, acquired_at)"
    " VALUES (%s, %s, clock_timestamp()) ON CONFLICT (session_id) DO UPDATE"
    " SET owner_token = EXCLUDED.owner_token, acquired_at = EXCLUDED.acquired_at"
)
_REGISTER: Final = (
    "INSERT INTO lease_holders (owner_token, pid, host, process_start, backend_pid, timeout_s,"
    " started_at, heartbeat_at) VALUES (%s, %s, %s, %s, pg_backend_pid(), %s,"
    " clock_timestamp(), clock_timestamp()) ON CONFLICT (owner_token) DO UPDATE"
    " SET backend_pid = EXCLUDED.backend_pid, heartbeat_at = EXCLUDED.heartbeat_at"
)
_FORGET_HOLDER_IF_EMPTY: Final = (
    "DELETE FROM lease_holders h WHERE h.owner_token = %s"
    " AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.owner_token = h.owner_token)"
)


def lease_lock_key(session_id: str) -> int:
    """The advisory lock key of a session: 64 bits of a hash of its id, signed."""
    digest = hashlib.blake2b(session_id.encode(), digest_size=8, person=b"acp-lease").digest()
    return int.from_bytes(digest, "big", signed=True)


@attrs.frozen
class LeaseRow(Value):
    """A session's lease as the database has it, judged on the server's clock."""

    owner_token: str
    #: None when the holder's row is gone (it closed, or was cleaned up as dead).
    holder: LeaseHolder | None
    backend_pid: int | None
    #: The holder's heartbeat is older than its timeout (or it has none).
    stale: bool
    #: The holder beat since the server last started (so it had its lock back).
    beat_since_start: bool


class LeaseKeeper:
    """One store handle's lease connection, its advisory locks and its heartbeat."""

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        owner: LeaseOwner,
        *,
        timeout_s: float,
        location: str,
    ) -> None:
        self._connect = connect
        self._owner = owner
        self.timeout_s = timeout_s
        self._location = location
        self._mutex = threading.Lock()
        self._connection: psycopg.Connection[Any] | None = None
        #: Sessions whose lock we hold (or held before the connection broke).
        self._held: set[SessionId] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def owner(self) -> LeaseOwner:
        return self._owner

    # --- what the store calls (on worker threads) ------------------------------------------

    def lock_new(self, session_id: SessionId) -> None:
        """Take the lock of a session about to be created (its row comes with it)."""
        with self._mutex:

            def lock(db: psycopg.Connection[Any]) -> None:
                if session_id in self._held:
                    return
                if not _try_lock(db, session_id):
                    raise StoreConflict(f"session {session_id} is being written elsewhere")
                self._held.add(session_id)

            self._with_connection(lock, f"lease new session {session_id}")

    def acquire(self, session_id: SessionId) -> None:
        """Take the session's lease (see the module docstring); `SessionHeld` if it is held."""
        with self._mutex:
            self._with_connection(
                lambda db: self._acquire(db, session_id), f"acquire session {session_id}"
            )

    def forget(self, session_ids: Iterable[SessionId]) -> None:
        """Let go of the locks of sessions whose lease rows are gone already."""
        with self._mutex:
            dropped = [s for s in session_ids if s in self._held]
            if not dropped or self._connection is None or self._connection.closed:
                self._held.difference_update(dropped)
                return
            self._with_connection(lambda db: self._unlock(db, dropped), "let go of leases")

    def release(self, session_ids: Iterable[SessionId]) -> None:
        """Give leases back: their rows, if ours, then their locks."""
        wanted = list(dict.fromkeys(session_ids))
        if not wanted:
            return
        with self._mutex:

            def release(db: psycopg.Connection[Any]) -> None:
                db.execute(
                    "DELETE FROM session_leases WHERE session_id = ANY(%s) AND owner_token = %s",
                    (wanted, self._owner.token),
                )
                self._unlock(db, [s for s in wanted if s in self._held])

            self._with_connection(release, f"release {len(wanted)} sessions")

    def close(self) -> None:
        """Stop the heartbeat, give every lease back and close the lease connection.

        Bounded: a heartbeat stuck on a server that does not answer is waited for
        `_CLOSE_WAIT_S`, then its connection is closed under it (the server frees the
        locks when it notices; the rows stay for the next process to take over).
        """
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(_CLOSE_WAIT_S)
        owned = self._mutex.acquire(timeout=_CLOSE_WAIT_S)
        try:
            self._closed = True
            connection, self._connection = self._connection, None
            self._held.clear()
            if connection is None:
                return
            try:
                if owned and not connection.closed:
                    token = self._owner.token
                    connection.execute(
                        "DELETE FROM session_leases WHERE owner_token = %s", (token,)
                    )
                    connection.execute("DELETE FROM lease_holders WHERE owner_token = %s", (token,))
                elif not owned:
                    logger.warning("leases not released at close: the lease connection is busy")
            except Exception as exc:
                # The leases stay behind; closing the connection frees their locks, so the
                # next process takes them over at once.
                logger.warning("leases not released at close: %s", exc)
            finally:
                connection.close()
        finally:
            if owned:
                self._mutex.release()

    # --- the lease connection --------------------------------------------------------------

    def _with_connection(self, work: Callable[[psycopg.Connection[Any]], Any], what: str) -> Any:
        """Run `work` on the lease connection, once more on a new one if it was lost."""
        import psycopg

        if self._closed:
            from acp_agent.core import StoreUnavailable

            raise StoreUnavailable(f"{what}: the store is closed")
        for attempt in (1, 2):
            try:
                return work(self._connected())
            except psycopg.Error as exc:
                if classify(exc) is Failure.LOST and attempt == 1:
                    self._drop_connection()
                    continue
                if self._connection is not None and self._connection.closed:
                    self._drop_connection()
                raise translate(exc, what, location=self._location) from exc
        raise AssertionError("unreachable")

    def _connected(self) -> psycopg.Connection[Any]:
        connection = self._connection
        if connection is not None and not connection.closed:
            return connection
        connection = self._connect()
        try:
            self._configure(connection)
            self._relock(connection)
            owner = self._owner
            connection.execute(
                _REGISTER, (owner.token, owner.pid, owner.host, owner.process_start, self.timeout_s)
            )
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        self._start_heartbeat()
        return connection

    def _configure(self, connection: psycopg.Connection[Any]) -> None:
        # The server gives up on a vanished client within the lease timeout (TCP only: a
        # local socket ends with its process), which frees the locks of a lost machine.
        idle = max(1, int(self.timeout_s / 3))
        interval = max(1, int(self.timeout_s / 6))
        for name, value in (
            ("tcp_keepalives_idle", idle),
            ("tcp_keepalives_interval", interval),
            ("tcp_keepalives_count", 3),
            ("tcp_user_timeout", int(self.timeout_s * 1000)),
            ("statement_timeout", int(self.timeout_s * 1000)),
        ):
            connection.execute(f"SET {name} = {value}")

    def _relock(self, connection: psycopg.Connection[Any]) -> None:
        """After a reconnect: take the locks again of the sessions still leased to us."""
        for session_id in sorted(self._held):
            row = _lease_row(connection, session_id)
            ours = row is not None and row.owner_token == self._owner.token
            if ours and _try_lock(connection, session_id):
                continue
            logger.warning(
                "session %s: its lease was taken over while the lease connection was down",
                session_id,
            )
            self._held.discard(session_id)

    def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception as exc:  # already broken: nothing more to do with it
                logger.debug("closing a broken lease connection: %s", exc)

    # --- taking and giving back -----------------------------------------------------------

    def _acquire(self, db: psycopg.Connection[Any], session_id: SessionId) -> None:
        token = self._owner.token
        found = db.execute("SELECT 1 FROM sessions WHERE session_id = %s", (session_id,))
        if found.fetchone() is None:
            raise StoreNotFound(f"no session {session_id}")
        row = _lease_row(db, session_id)
        if session_id in self._held:
            if row is not None and row.owner_token == token:
                return
            self._unlock(db, [session_id])  # taken over meanwhile: try afresh
        if _try_lock(db, session_id):
            if row is None or row.owner_token == token or row.stale or row.beat_since_start:
                self._take(db, session_id, row)
                return
            # Its holder has not been back since the server restarted: give it the timeout.
            self._unlock_key(db, session_id)
            raise SessionHeld(session_id, row.holder)
        if row is None or row.owner_token == token or not row.stale:
            raise SessionHeld(session_id, None if row is None else row.holder)
        if not self._end_stale_holder(db, session_id, row):
            raise SessionHeld(session_id, row.holder)
        self._take(db, session_id, row)

    def _take(
        self, db: psycopg.Connection[Any], session_id: SessionId, row: LeaseRow | None
    ) -> None:
        """We hold the lock: write the lease row (waiting for the old holder's write)."""
        try:
            db.execute(_TAKE, (session_id, self._owner.token))
        except BaseException:
            self._unlock_key(db, session_id)
            raise
        self._held.add(session_id)
        if row is not None and row.owner_token != self._owner.token:
            logger.info("session %s: took over the lease of %s", session_id, row.holder)
            db.execute(_FORGET_HOLDER_IF_EMPTY, (row.owner_token,))

    def _end_stale_holder(
        self, db: psycopg.Connection[Any], session_id: SessionId, row: LeaseRow
    ) -> bool:
        """End the lease connection of a holder whose heartbeat is stale; whether the lock
        came to us."""
        import psycopg

        key = lease_lock_key(session_id)
        try:
            db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
                " AND granted AND objsubid = 1 AND classid = %s::bigint::oid"
                " AND objid = %s::bigint::oid AND pid = %s",
                ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF, row.backend_pid),
            )
        except psycopg.errors.InsufficientPrivilege as exc:
            logger.warning(
                "session %s: its holder %s stopped beating, but its connection cannot be ended: %s",
                session_id,
                row.holder,
                exc,
            )
            return False
        try:
            with db.transaction():
                db.execute(f"SET LOCAL lock_timeout = {int(_TAKEOVER_WAIT_S * 1000)}")
                db.execute("SELECT pg_advisory_lock(%s)", (key,))
        except psycopg.errors.LockNotAvailable:
            return False
        return True

    def _unlock(self, db: psycopg.Connection[Any], session_ids: Iterable[SessionId]) -> None:
        for session_id in session_ids:
            self._held.discard(session_id)
            self._unlock_key(db, session_id)

    @staticmethod
    def _unlock_key(db: psycopg.Connection[Any], session_id: SessionId) -> None:
        db.execute("SELECT pg_advisory_unlock(%s)", (lease_lock_key(session_id),))

    # --- the heartbeat ----------------------------------------------------------------------

    def _start_heartbeat(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._beat_until_closed, name="acp-agent lease heartbeat", daemon=True
            )
            self._thread.start()

    def _beat_until_closed(self) -> None:
        while not self._stop.wait(self.timeout_s / 3):
            with self._mutex:
                if self._closed:
                    return
                try:
                    self._beat()
                except Exception as exc:
                    # The next beat reconnects; until then a taker judges us by the clock.
                    logger.warning("lease heartbeat failed: %s", exc)
                    self._drop_connection()

    def _beat(self) -> None:
        db = self._connected()
        owner = self._owner
        beat = db.execute(
            "UPDATE lease_holders SET heartbeat_at = clock_timestamp() WHERE owner_token = %s",
            (owner.token,),
        )
        if beat.rowcount == 0:  # cleaned up as dead while we could not beat: say we live
            db.execute(
                _REGISTER, (owner.token, owner.pid, owner.host, owner.process_start, self.timeout_s)
            )


def _try_lock(db: psycopg.Connection[Any], session_id: str) -> bool:
    row = db.execute("SELECT pg_try_advisory_lock(%s)", (lease_lock_key(session_id),)).fetchone()
    return bool(row and row[0])


def _lease_row(db: psycopg.Connection[Any], session_id: str) -> LeaseRow | None:
    row = db.execute(_LEASE_ROW, (session_id,)).fetchone()
    if row is None:
        return None
    token, pid, host, backend_pid, stale, beat_since_start = row
    holder = None if pid is None else LeaseHolder(pid, host)
    return LeaseRow(token, holder, backend_pid, bool(stale), bool(beat_since_start))
