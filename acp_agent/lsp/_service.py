"""A session's code intelligence: its language servers, and what they say of each change.

`CodeIntelligence` is the session's `ChangeReview`. When a call has changed files a
configured server handles, it starts that server for the file's workspace root if
it is not running yet (one process per server and root, shared by the session's
branches), tells it the file's content before the change (unless it already has
it) and after, and waits until it has published both diagnostics, or until the
settle bound (`settle_s`, 1.5 s by default) has passed since the review began:
the call's result never waits longer, whatever the server does. The problems the
change added (see `_problems`) become the text the model reads with the result.

A server that cannot start or dies is remembered with its error; the next change
tries it again. A session whose calls never change a file a server handles never
starts one, and never imports pygls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio

from acp_agent.capabilities import ChangedFile
from acp_agent.lsp._problems import Problem, compare, describe
from acp_agent.lsp._servers import ServerSpec, ServerUnavailable, default_servers

if TYPE_CHECKING:
    from acp_agent.lsp._connection import ServerConnection

__all__ = ("DEFAULT_SETTLE_S", "CodeIntelligence", "ServerStatus")

logger = logging.getLogger(__name__)

#: How long a call's result waits, at most, for the servers' diagnostics.
DEFAULT_SETTLE_S: Final = 1.5
#: How long a navigation tool waits for its server to start (the model asked for it).
_NAVIGATOR_START_S: Final = 30.0
#: The longest wait before starting a server that keeps failing again.
_MAX_BACKOFF_S: Final = 60.0


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
        servers: Sequence[ServerSpec] | None = None,
        settle_s: float = DEFAULT_SETTLE_S,
        notify: Callable[[str], Awaitable[object]] | None = None,
    ) -> None:
        self._roots = roots
        self._notify = notify
        self._failures: dict[tuple[str, Path], int] = {}
        self._retry_at: dict[tuple[str, Path], float] = {}
        #: Servers lost since they last ran (the model was told; it is told when back).
        self._down: set[tuple[str, Path]] = set()
        self._servers = tuple(default_servers() if servers is None else servers)
        self.settle_s = settle_s
        self._connections: dict[tuple[str, Path], ServerConnection] = {}
        self._starting: dict[tuple[str, Path], asyncio.Task[ServerConnection | None]] = {}
        self._errors: dict[tuple[str, Path], str] = {}
        self._closing: set[asyncio.Future[Any]] = set()
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
        lines = ["| Server | Root | State | Last error |", "|---|---|---|---|"]
        for status in rows:
            state = "running" if status.running else "starting" if status.error is None else "down"
            error = (status.error or "").replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {status.name} | `{status.root}` | {state} | {error or '-'} |")
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
        """The problems `files`' changes added, as text for the model; None if none (or
        no server answered within the settle bound)."""
        if self._closed:
            return None
        deadline = asyncio.get_running_loop().time() + self.settle_s
        found: list[str] = []
        cleared = 0

        async def review_one(spec: ServerSpec, changed: ChangedFile) -> None:
            nonlocal cleared
            outcome = await self._review_one(spec, changed, deadline)
            if outcome is not None:
                new, gone = outcome
                if new:
                    found.append(describe(new, shown=self.shown(changed.path)))
                cleared += gone

        try:
            # Every server at once: the bound is for the whole review, not per server.
            with anyio.fail_after(self.settle_s + 0.5):
                async with anyio.create_task_group() as group:
                    for changed in files:
                        for spec in self._servers:
                            if spec.handles(changed.path):
                                group.start_soon(review_one, spec, changed)
        except TimeoutError:
            logger.info("code intelligence did not settle within %.1f s", self.settle_s)
        except Exception:
            logger.exception("code intelligence failed to review a change")
        if not found and not cleared:
            return None
        parts = []
        if found:
            parts.append("New problems the language server reports after this change:")
            parts.extend(found)
        if cleared:
            parts.append(f"{cleared} problem(s) reported before this change are gone.")
        return "\n".join(parts)

    async def _review_one(
        self, spec: ServerSpec, changed: ChangedFile, deadline: float
    ) -> tuple[list[Problem], int] | None:
        root = self._root_of(changed.path)
        if root is None:
            return None
        path = changed.path
        if changed.after is None:  # gone: a running server forgets it; none is started
            running = self._connections.get((spec.name, root))
            if running is not None and running.alive:
                running.forget(path)
            return None
        connection = await self._connection(spec, root, deadline)
        if connection is None:
            return None
        after_text = _text(changed.after)
        before_text = _text(changed.before) if changed.before is not None else ""
        if after_text is None or before_text is None:
            return None  # not text: nothing a server reads
        try:
            if connection.is_open(path):
                before = connection.problems(path)
            elif changed.before is not None:
                version = connection.sync(path, before_text)
                before = await connection.problems_after(path, version, deadline)
            else:
                before = []
            version = connection.sync(path, after_text)
            after = await connection.problems_after(path, version, deadline)
        except TimeoutError:
            return None
        except Exception as exc:
            self._lost(spec, root, f"{exc}")
            return None
        new, gone = compare(before, after, before_text, after_text)
        return new, len(gone)

    async def _connection(
        self, spec: ServerSpec, root: Path, deadline: float
    ) -> ServerConnection | None:
        key = (spec.name, root)
        connection = self._connections.get(key)
        if connection is not None:
            if connection.alive:
                return connection
            self._lost(spec, root, connection.last_error or "the server exited")
        task = self._starting.get(key)
        if task is None:
            if asyncio.get_running_loop().time() < self._retry_at.get(key, 0.0):
                return None  # it failed lately: tried again after its backoff
            task = asyncio.ensure_future(self._start(spec, root))
            self._starting[key] = task
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0 or not await _finishes_within(task, remaining):
            return None  # still starting: it is ready for the next change
        return self._connections.get(key)

    async def _start(self, spec: ServerSpec, root: Path) -> ServerConnection | None:
        from acp_agent.lsp._connection import ServerConnection  # pygls: only when needed

        key = (spec.name, root)
        connection = ServerConnection(spec, root)
        try:
            await connection.start()
        except asyncio.CancelledError:
            await asyncio.shield(connection.aclose())  # the session closed while it started
            raise
        except ServerUnavailable as exc:
            self._errors[key] = str(exc)
            self._back_off(key)
            logger.warning("language server %s for %s is unavailable: %s", spec.name, root, exc)
            return None
        finally:
            self._starting.pop(key, None)
        if self._closed:
            await connection.aclose()
            return None
        self._errors.pop(key, None)
        self._connections[key] = connection
        if key in self._down:
            self._down.discard(key)
            self._tell(f"Code intelligence from {spec.name} for {root} is back.")
        return connection

    def _back_off(self, key: tuple[str, Path]) -> None:
        """After a failure the next change starts it again at once; after more, 1, 2, 4,
        ... (at most 60) seconds later: a server that keeps dying is not hammered."""
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        delay = 0.0 if failures == 1 else min(_MAX_BACKOFF_S, 2.0 ** (failures - 2))
        self._retry_at[key] = asyncio.get_running_loop().time() + delay

    def _tell(self, text: str) -> None:
        """Say `text` to the model as a notification (it reads it with its next request)."""
        if self._notify is None:
            return
        told = asyncio.ensure_future(self._notify(text))
        self._closing.add(told)
        told.add_done_callback(self._closing.discard)

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
        connection = await self._connection(spec, root, loop.time() + _NAVIGATOR_START_S)
        if connection is None:
            error = self._errors.get((spec.name, root), "it did not start in time")
            raise ServerUnavailable(f"{spec.name} is not available: {error}")
        if connection.text_sent(path) != text:
            version = connection.sync(path, text)
            with contextlib.suppress(TimeoutError):
                # Analysed before it is asked: its answers are then about this text.
                await connection.problems_after(path, version, loop.time() + self.settle_s)
        return connection

    async def problems_of(self, path: Path, text: str, timeout_s: float) -> list[Problem]:
        """Every problem the servers handling `path` report for `text` (for a tool)."""
        root = self._root_of(path)
        if root is None:
            return []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        found: list[Problem] = []

        async def ask(spec: ServerSpec) -> None:
            connection = await self._connection(spec, root, deadline)
            if connection is None:
                return
            if connection.text_sent(path) == text:
                found.extend(connection.problems(path))
                return
            version = connection.sync(path, text)
            with contextlib.suppress(TimeoutError):
                found.extend(await connection.problems_after(path, version, deadline))

        async with anyio.create_task_group() as group:
            for spec in self._servers:
                if spec.handles(path):
                    group.start_soon(ask, spec)
        return sorted(found, key=lambda p: (p.line, p.column, p.server))

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
        if lost is not None:
            closing = asyncio.ensure_future(lost.aclose())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

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
        for task in starting:
            task.cancel()
        connections, self._connections = list(self._connections.values()), {}
        with anyio.CancelScope(shield=True):
            if starting:
                await asyncio.wait(starting, timeout=2.0)
            for connection in connections:
                try:
                    await connection.aclose()
                except Exception:
                    logger.exception("language server %s did not close", connection.spec.name)


async def _finishes_within(task: asyncio.Task[ServerConnection | None], seconds: float) -> bool:
    done, _ = await asyncio.wait({task}, timeout=seconds)
    return bool(done)


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
