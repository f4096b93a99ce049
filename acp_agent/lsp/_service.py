"""A session's code intelligence: its language servers, and what they say of each change.

`CodeIntelligence` is the session's `ChangeReview`. When a call has changed files a
configured server handles, it starts that server for the file's workspace root if
it is not running yet (one process per server and root, shared by the session's
branches), tells it the file's content before the change (unless it already has
it) and after, and waits for the problems of both from every server that reads the
file, a server still starting included, until the bound (`settle_s`, 10 s by
default: a cold basedpyright on a busy machine) has passed since the review began.
The result never waits longer, whatever a server does, and returns as soon as
every server has answered. The problems the change added (see `_problems`; two
servers' alike problems once) become the text the model reads with the result,
and a server that did not finish in time, or is not running, is named there:
its problems may be missing.

A server that cannot start or dies is remembered with its error; the next change
tries it again. The person hears of it as a notice (`notices`): a server lost
(a warning), back (info), and a check the bound cut short (info, once until that
server checks in time again). A session whose calls never change a file a server handles never
starts one, and never imports pygls.

What runs in the background (a server starting, its stderr drained, a lost one
closing, a notice to the model) runs in the owner's task group (`start_soon`: the
session scope's), which cancels it and waits for it when the session closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio
import attrs

from acp_agent.capabilities.session import ChangedFile
from acp_agent.lsp._problems import Problem, alike_key, compare, describe
from acp_agent.lsp._servers import ServerSpec, ServerUnavailable, default_servers
from acp_agent.toolkit import NO_NOTICES, Notice, NoticeSeverity, NoticeSink

if TYPE_CHECKING:
    from acp_agent.lsp._connection import ServerConnection

__all__ = (
    "DEFAULT_SETTLE_S",
    "CodeIntelligence",
    "Findings",
    "ServerStatus",
    "StartSoon",
    "missing_notes",
)

logger = logging.getLogger(__name__)

#: How long a call's result waits, at most, for the servers' diagnostics. Measured
#: (`benchmarks/lsp.py`, 2 cores): a session's first edit, basedpyright starting, comes
#: back in about 2 s idle and up to 4.6 s with six other busy processes; ruff's alone
#: in a tenth of that; later edits in well under a second. Twice the worst seen; a
#: server that answers sooner ends the wait sooner.
DEFAULT_SETTLE_S: Final = 10.0
#: How long a navigation tool waits for its server to start (the model asked for it).
_NAVIGATOR_START_S: Final = 30.0
#: The longest wait before starting a server that keeps failing again.
_MAX_BACKOFF_S: Final = 60.0


class StartSoon(Protocol):
    """Where background work runs: the owner's task group (a session scope's
    `start_soon`), which cancels it and waits for it when it closes."""

    def __call__(
        self, func: Callable[[], Coroutine[Any, Any, object]], /, *, name: object = None
    ) -> object: ...


@attrs.define
class _Starting:
    """A server being started: the scope it starts in, set once it is done (or failed)."""

    scope: anyio.CancelScope
    done: anyio.Event


@attrs.frozen
class Findings:
    """What the servers said of a file: its problems, and the servers (by name) that
    did not finish checking in time or are not running, whose problems may be missing."""

    problems: tuple[Problem, ...]
    unfinished: tuple[str, ...] = ()
    not_running: tuple[str, ...] = ()

    def notes(self) -> list[str]:
        """A line for each server whose problems may be missing."""
        return missing_notes(self.unfinished, self.not_running)


def missing_notes(unfinished: Sequence[str], not_running: Sequence[str]) -> list[str]:
    """What a result says of servers that did not finish checking, or are not running."""
    notes = [
        f"{name} has not finished checking: problems may be missing; `diagnostics` asks again."
        for name in unfinished
    ]
    notes += [f"{name} is not running: its problems are missing." for name in not_running]
    return notes


class ServerStatus:
    """What `/lsp` and tests see of one server: its root, whether it runs, its last error."""

    def __init__(self, name: str, root: Path, running: bool, error: str | None) -> None:
        self.name = name
        self.root = root
        self.running = running
        self.error = error


class CodeIntelligence:
    """The language servers of one session; see the module docstring."""

    def __init__(
        self,
        roots: Callable[[], Sequence[Path]],
        *,
        start_soon: StartSoon,
        servers: Sequence[ServerSpec] | None = None,
        settle_s: float = DEFAULT_SETTLE_S,
        notify: Callable[[str], Awaitable[object]] | None = None,
        notices: NoticeSink = NO_NOTICES,
    ) -> None:
        self._roots = roots
        self._start_soon = start_soon
        self._notify = notify
        self._notices = notices
        #: Servers whose last check the bound cut short (the person was told once).
        self._slow: set[str] = set()
        self._failures: dict[tuple[str, Path], int] = {}
        self._retry_at: dict[tuple[str, Path], float] = {}
        #: Servers lost since they last ran (the model was told; it is told when back).
        self._down: set[tuple[str, Path]] = set()
        self._servers = tuple(default_servers() if servers is None else servers)
        self.settle_s = settle_s
        self._connections: dict[tuple[str, Path], ServerConnection] = {}
        self._starting: dict[tuple[str, Path], _Starting] = {}
        self._errors: dict[tuple[str, Path], str] = {}
        self._closed = False

    def status_report(self) -> str:
        """Markdown for `/lsp`: each server, its root, its state and its last error."""
        rows = [status for status in self.statuses()]
        names = ", ".join(spec.name for spec in self._servers) or "none"
        if not rows:
            return (
                f"Language servers: {names}. None is running yet: each starts when a "
                "call first changes (or a code tool reads) a file it reads."
            )
        lines = ["Language servers:", ""]
        for status in rows:  # a list, not a table: it fits a narrow client
            state = "running" if status.running else "starting" if status.error is None else "down"
            error = " ".join((status.error or "").split())
            line = f"- {status.name}: {state}, for `{status.root}`"
            lines.append(f"{line}; last error: {error}" if error else line)
        return "\n".join(lines)

    def statuses(self) -> list[ServerStatus]:
        keys = sorted({*self._connections, *self._starting, *self._errors}, key=str)
        return [
            ServerStatus(
                name,
                root,
                (name, root) in self._connections and self._connections[(name, root)].alive,
                self._errors.get((name, root)),
            )
            for name, root in keys
        ]

    async def review(self, files: Sequence[ChangedFile]) -> str | None:
        """The problems `files`' changes added, as text for the model, with the servers
        that did not finish in time or are not running; None when there is nothing to say."""
        if self._closed:
            return None
        deadline = asyncio.get_running_loop().time() + self.settle_s
        new: list[Problem] = []
        gone: list[Problem] = []
        #: (server, path) pairs not done: still waiting when the bound ends.
        pending: set[tuple[str, Path]] = set()
        not_running: set[str] = set()

        async def review_one(spec: ServerSpec, changed: ChangedFile) -> None:
            pending.add((spec.name, changed.path))
            try:
                outcome = await self._review_one(spec, changed, deadline)
            except TimeoutError:
                return  # still pending: it did not finish
            except ServerUnavailable:
                not_running.add(spec.name)
            except Exception:
                logger.exception("code intelligence failed to review a change")
                not_running.add(spec.name)
            else:
                if outcome is not None:
                    new.extend(outcome[0])
                    gone.extend(outcome[1])
            pending.discard((spec.name, changed.path))

        # Every server at once: the bound is for the whole review, not per server. The
        # waits end at the deadline themselves; this is the net under them.
        with anyio.move_on_after(self.settle_s + 0.5):
            async with anyio.create_task_group() as group:
                for changed in files:
                    for spec in self._servers:
                        if spec.handles(changed.path):
                            group.start_soon(review_one, spec, changed)
        unfinished = {name for name, _ in pending}
        if unfinished:
            logger.info("%s did not finish within %.1f s", ", ".join(unfinished), self.settle_s)
        self._tell_slow(unfinished, {name for name, _ in self._reviewed(files)} - not_running)
        parts = []
        if new:
            parts.append("New problems the language server reports after this change:")
            parts.extend(self._described(new))
        cleared = len({alike_key(problem) for problem in gone})
        if cleared:
            parts.append(f"{cleared} problem(s) reported before this change are gone.")
        parts += missing_notes(self._ordered(unfinished), self._ordered(not_running - unfinished))
        return "\n".join(parts) if parts else None

    def _reviewed(self, files: Sequence[ChangedFile]) -> set[tuple[str, Path]]:
        """The (server, path) pairs a review of `files` asks for."""
        return {
            (spec.name, changed.path)
            for changed in files
            for spec in self._servers
            if spec.handles(changed.path)
        }

    def _tell_slow(self, unfinished: set[str], checked: set[str]) -> None:
        """Tell the person of a check cut short, once until that server checks in time."""
        for name in self._ordered(unfinished - self._slow):
            self._notices(
                Notice(
                    NoticeSeverity.INFO,
                    f"{name} had not finished checking the change after {self.settle_s:g} s",
                    "Its problems with the change may be missing; the model can ask again "
                    "with the diagnostics tool.",
                )
            )
        self._slow = (self._slow | unfinished) - (checked - unfinished)

    def _described(self, problems: Sequence[Problem]) -> list[str]:
        """Each file's problems, described (alike ones once), in line order."""
        by_file: dict[str, list[Problem]] = {}
        order = {spec.name: index for index, spec in enumerate(self._servers)}
        for problem in sorted(
            problems, key=lambda p: (p.path, p.line, p.column, order.get(p.server, len(order)))
        ):
            by_file.setdefault(problem.path, []).append(problem)
        return [describe(found, shown=self.shown(Path(path))) for path, found in by_file.items()]

    def _ordered(self, names: set[str]) -> list[str]:
        """`names` in the order the servers are configured."""
        return [spec.name for spec in self._servers if spec.name in names]

    async def _review_one(
        self, spec: ServerSpec, changed: ChangedFile, deadline: float
    ) -> tuple[list[Problem], list[Problem]] | None:
        """(the problems the change brought in, those it took away) by this server; None
        when it has nothing to say of the file. `TimeoutError` when it did not finish by
        `deadline`; `ServerUnavailable` when it is not running."""
        root = self._root_of(changed.path)
        if root is None:
            return None
        path = changed.path
        if changed.after is None:  # gone: a running server forgets it; none is started
            running = self._connections.get((spec.name, root))
            if running is not None and running.alive:
                running.forget(path)
            return None
        after_text = _text(changed.after)
        before_text = _text(changed.before) if changed.before is not None else ""
        if after_text is None or before_text is None:
            return None  # not text: nothing a server reads
        connection = await self._connection(spec, root, deadline)
        try:
            if changed.before is None:
                before = []
            else:
                sent = connection.version(path)
                if sent is None or connection.text_sent(path) != before_text:
                    sent = connection.sync(path, before_text)
                before = await connection.problems_after(path, sent, deadline)
            version = connection.sync(path, after_text)
            after = await connection.problems_after(path, version, deadline)
        except TimeoutError:
            raise
        except Exception as exc:
            self._lost(spec, root, f"{exc}")
            raise ServerUnavailable(f"{spec.name}: {exc}") from exc
        return compare(before, after, before_text, after_text)

    async def _connection(self, spec: ServerSpec, root: Path, deadline: float) -> ServerConnection:
        """The server for `root`, started if need be. `TimeoutError` when it is still
        starting at `deadline` (it goes on: it is ready for the next change);
        `ServerUnavailable` when it cannot start, or failed lately and waits its backoff."""
        key = (spec.name, root)
        connection = self._connections.get(key)
        if connection is not None:
            if connection.alive:
                return connection
            self._lost(spec, root, connection.last_error or "the server exited")
        starting = self._starting.get(key)
        if starting is None:
            if asyncio.get_running_loop().time() < self._retry_at.get(key, 0.0):
                raise ServerUnavailable(self._errors.get(key, f"{spec.name} failed lately"))
            starting = self._starting[key] = _Starting(anyio.CancelScope(), anyio.Event())
            self._start_soon(
                partial(self._start, spec, root, starting), name=f"starting {spec.name}"
            )
        remaining = deadline - asyncio.get_running_loop().time()
        with anyio.move_on_after(max(remaining, 0.0)):
            await starting.done.wait()
        if not starting.done.is_set():
            raise TimeoutError
        started = self._connections.get(key)
        if started is None:
            raise ServerUnavailable(self._errors.get(key, f"{spec.name} did not start"))
        return started

    async def _start(self, spec: ServerSpec, root: Path, starting: _Starting) -> None:
        """Start `spec`'s server for `root` (in the owner's group); `starting.done` tells
        its end, the connection kept or the error remembered."""
        key = (spec.name, root)
        try:
            with starting.scope:
                await self._start_server(spec, root)
        except Exception as exc:
            self._errors[key] = f"{spec.name} could not be started: {exc}"
            self._back_off(key)
            logger.exception("language server %s for %s could not be started", spec.name, root)
        finally:
            if self._starting.get(key) is starting:
                del self._starting[key]
            starting.done.set()

    async def _start_server(self, spec: ServerSpec, root: Path) -> None:
        # pygls and lsprotocol load when a server first starts, in a worker thread: their
        # imports (~0.3 s of CPU) share the GIL with the loop, which goes on serving the
        # streams and a cancel meanwhile instead of stopping for all of it.
        await anyio.to_thread.run_sync(_load_client)
        from acp_agent.lsp._connection import ServerConnection  # loaded above

        key = (spec.name, root)
        connection = ServerConnection(spec, root, start_soon=self._start_soon)
        try:
            await connection.start()
        except ServerUnavailable as exc:
            self._errors[key] = str(exc)
            self._back_off(key)
            logger.warning("language server %s for %s is unavailable: %s", spec.name, root, exc)
            return
        except BaseException:
            with anyio.CancelScope(shield=True):  # the session closed while it started
                await connection.aclose()
            raise
        if self._closed:
            with anyio.CancelScope(shield=True):
                await connection.aclose()
            return
        self._errors.pop(key, None)
        self._connections[key] = connection
        if key in self._down:
            self._down.discard(key)
            self._tell(f"Code intelligence from {spec.name} for {root} is back.")
            self._notices(
                Notice(NoticeSeverity.INFO, f"Language server {spec.name} is back", f"For {root}.")
            )

    def _back_off(self, key: tuple[str, Path]) -> None:
        """After a failure the next change starts it again at once; after more, 1, 2, 4,
        ... (at most 60) seconds later: a server that keeps dying is not hammered."""
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        delay = 0.0 if failures == 1 else min(_MAX_BACKOFF_S, 2.0 ** (failures - 2))
        self._retry_at[key] = asyncio.get_running_loop().time() + delay

    def _tell(self, text: str) -> None:
        """Say `text` to the model as a notification (it reads it with its next request)."""
        notify = self._notify
        if notify is None or self._closed:
            return

        async def tell() -> None:
            try:
                await notify(text)
            except Exception:
                logger.exception("the model could not be told: %s", text)

        self._start_soon(tell, name="code intelligence notice")

    @property
    def servers(self) -> tuple[ServerSpec, ...]:
        """The servers this session may start."""
        return self._servers

    @property
    def navigates(self) -> bool:
        """Whether a server that answers definitions, references and the rest is configured."""
        return any(spec.navigates for spec in self._servers)

    async def navigator(self, path: Path, text: str) -> ServerConnection:
        """A running server that navigates `path`, told its current `text`;
        `ServerUnavailable` (saying why) when there is none."""
        spec = next((s for s in self._servers if s.navigates and s.handles(path)), None)
        root = self._root_of(path)
        if spec is None or root is None:
            raise ServerUnavailable(f"no language server navigates {path.name}")
        loop = asyncio.get_running_loop()
        try:
            connection = await self._connection(spec, root, loop.time() + _NAVIGATOR_START_S)
        except (TimeoutError, ServerUnavailable) as exc:
            error = self._errors.get((spec.name, root), "it did not start in time")
            raise ServerUnavailable(f"{spec.name} is not available: {error}") from exc
        if connection.text_sent(path) != text:
            version = connection.sync(path, text)
            with contextlib.suppress(TimeoutError):
                # Analysed before it is asked: its answers are then about this text.
                await connection.problems_after(path, version, loop.time() + self.settle_s)
        return connection

    async def problems_of(self, path: Path, text: str, timeout_s: float) -> Findings:
        """Every problem the servers handling `path` report for `text` (for a tool), and
        those that did not finish within `timeout_s` or are not running."""
        root = self._root_of(path)
        if root is None:
            return Findings(())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        found: list[Problem] = []
        unfinished: set[str] = set()
        not_running: set[str] = set()

        async def ask(spec: ServerSpec) -> None:
            try:
                connection = await self._connection(spec, root, deadline)
                version = connection.version(path)
                if version is None or connection.text_sent(path) != text:
                    version = connection.sync(path, text)
                found.extend(await connection.problems_after(path, version, deadline))
            except TimeoutError:
                unfinished.add(spec.name)
            except ServerUnavailable:
                not_running.add(spec.name)

        async with anyio.create_task_group() as group:
            for spec in self._servers:
                if spec.handles(path):
                    group.start_soon(ask, spec)
        order = {spec.name: index for index, spec in enumerate(self._servers)}
        found.sort(key=lambda p: (p.line, p.column, order.get(p.server, len(order))))
        return Findings(
            tuple(found), tuple(self._ordered(unfinished)), tuple(self._ordered(not_running))
        )

    def handles(self, path: Path) -> bool:
        """Whether any configured server handles `path`."""
        return any(spec.handles(path) for spec in self._servers)

    def _lost(self, spec: ServerSpec, root: Path, error: str) -> None:
        key = (spec.name, root)
        lost = self._connections.pop(key, None)
        self._errors[key] = error
        self._back_off(key)
        logger.warning("language server %s for %s was lost: %s", spec.name, root, error)
        if key not in self._down:
            self._down.add(key)
            self._tell(
                f"Code intelligence from {spec.name} for {root} stopped ({error}); it is "
                "started again with the next change of a file it reads. Until then, "
                "edits come back without its problems."
            )
            self._notices(
                Notice(
                    NoticeSeverity.WARNING,
                    f"Language server {spec.name} stopped",
                    f"For {root}: {error}. It starts again with the next change of a file "
                    "it reads; until then edits are not checked by it.",
                )
            )
        if lost is not None:
            self._start_soon(partial(_close_quietly, lost), name=f"closing {spec.name}")

    def _root_of(self, path: Path) -> Path | None:
        for root in self._roots():
            if path == root or root in path.parents:
                return root
        return None

    def shown(self, path: Path) -> str:
        """`path` as the model reads it: relative to its root."""
        root = self._root_of(path)
        return str(path.relative_to(root)) if root is not None else str(path)

    async def aclose(self) -> None:
        """Stop every server (the session closed, or the agent is exiting)."""
        self._closed = True
        starting = list(self._starting.values())
        for start in starting:
            start.scope.cancel()
        connections, self._connections = list(self._connections.values()), {}
        with anyio.CancelScope(shield=True):
            # Each start closes what it started when cancelled; a start the owner
            # never ran (its group closed first) is not waited for past the bound.
            with anyio.move_on_after(2.0):
                for start in starting:
                    await start.done.wait()
            for connection in connections:
                await _close_quietly(connection)


async def _close_quietly(connection: ServerConnection) -> None:
    try:
        await connection.aclose()
    except Exception:
        logger.exception("language server %s did not close", connection.spec.name)


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _load_client() -> None:
    """Import the language-server client (pygls, lsprotocol)."""
    import acp_agent.lsp._connection  # noqa: F401
