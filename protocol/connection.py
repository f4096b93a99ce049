"""ACP connections over stdio: newline-delimited JSON-RPC 2.0 on asyncio, both roles.

`AgentConnection` is the agent's end: it serves agent methods on stdin and
stdout and calls the client (`session/update`, `fs/*`, `terminal/*`, ...).
`ClientConnection` is the client's end: it spawns an agent process and
talks to it (or takes over one already started: `attach_process`), or connects
to an app server's Unix socket (the test client, the benchmarks, the headless
commands and `acp-agent watch` are built on it).

    conn = AgentConnection()
    conn.register(methods.INITIALIZE, initialize)  # typed params in, typed result out
    conn.start_io(stop_signals=(signal.SIGTERM,))  # blocks until stdin ends or SIGTERM

    async with ClientConnection() as client:       # owns the tasks that read the agent
        await client.start_io(sys.executable, "-m", "acp_agent")

Handlers receive params structured into `protocol.types` classes (plain JSON
for `_` extension methods) and return result objects; raise an `AcpError`
to answer with an error. `async def` handlers run concurrently, so a handler
may await a request to the peer while other messages are served. Each
handler is started, and runs to its first `await`, before the next message
is read: state a handler registers before awaiting is visible to the next
message's handler (a `session/cancel` right behind a `session/prompt`).

Each connection has a task group (anyio), open for as long as `async with`
the connection (`start_io` of the agent's end opens it itself), which owns
every task it runs: the handlers, the client's readers of the agent's
output, and what is handed to it with `start_soon` (work that outlives the
request that began it, such as the runtime). Nothing is left to run on its
own: leaving the block cancels what is left and waits for it. An agent's end
serves any other line stream (a socket's) with `serve_lines`, inside the block.

The agent's end stops serving when its input ends, when `stop()` is called,
or on one of the `stop_signals` given to `start_io`; all three take the same
path: pending requests to the client fail, running handlers are cancelled
and get a short grace to unwind (requests are still answered, -32800), the
`on_shutdown` callbacks run, what is left in the group is cancelled, and
`start_io` returns once the group has ended.

Both ends read and write every field and shape of the unstable schema
whatever `unstable` says: what a peer advertises decides what is sent (a
client's `subagents`, `plan`), and the code that sends a negotiated shape
checks for it. `unstable` gates the unstable *methods* only (`session/fork`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, Final, Protocol

import anyio

from jsonbounds import OverLongLine
from protocol._child import ChildProcess, adopt
from protocol._dispatch import (
    AcpProtocol,
    AgentSideProtocol,
    ClientSideProtocol,
    Handler,
    Writer,
)
from protocol._line_writer import DEFAULT_STALL_S, QueuedLineWriter
from protocol._ndjson import (
    MAX_CLIENT_LINE_BYTES,
    LineSource,
    StreamWriterAdapter,
    ThreadedLineReader,
    iter_lines,
)
from protocol.converter import shared_converter
from protocol.errors import ConnectionNotStarted
from protocol.limits import MAX_AGENT_LINE_BYTES
from protocol.methods import MessageKind
from protocol.text_chunks import TextChunks, encode_text_chunks

if TYPE_CHECKING:
    from typing import Self

    from anyio.abc import TaskGroup

__all__ = (
    "DEFAULT_WRITE_STALL_S",
    "AgentConnection",
    "ChildProcess",
    "ClientConnection",
    "Handler",
    "StartSoon",
    "Work",
    "start_soon_in",
)

#: How long a client may read nothing, with output piling up, before it is gone.
DEFAULT_WRITE_STALL_S: Final = DEFAULT_STALL_S

logger = logging.getLogger(__name__)

#: How long handlers cancelled at end of input get to unwind; the whole
#: shutdown must fit in the one second an editor waits.
_SHUTDOWN_GRACE_S: Final = 0.5
#: How long the client's readers get, once the agent exited, to read what it wrote last.
_READ_GRACE_S: Final = 1.0

#: Work a task group runs (`start_soon`).
Work = Callable[[], Coroutine[Any, Any, object]]


class StartSoon(Protocol):
    """Hands `work` to a task group that waits for it (a connection's `start_soon`, or
    `start_soon_in`'s), as what hands it over sees it."""

    def __call__(self, work: Work, *, name: str) -> None: ...


def start_soon_in(task_group: TaskGroup) -> StartSoon:
    """`task_group`'s `start_soon` as a connection's is: what the work raises is logged
    and ends it alone, never the group (an app server's runtime, beside its clients)."""

    def start_soon(work: Work, *, name: str) -> None:
        task_group.start_soon(_logged, work, name, name=name)

    return start_soon


class _Endpoint:
    """What both ends offer: handler registration, notifications, requests, and the
    task group that owns what the connection runs (`async with` the connection)."""

    protocol: AcpProtocol
    _task_group: TaskGroup | None = None

    async def __aenter__(self) -> Self:
        """Open the connection's task group: its handlers, the work `start_soon` is
        given and the client's readers run in it from now on."""
        if self._task_group is not None:
            raise RuntimeError("the connection is already open")
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        self.protocol.set_task_group(task_group)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Wind down (a client stops its agent), then cancel what is left in the group
        and wait for it. The block's own exception propagates as it is, not in the
        group's ExceptionGroup: nothing the group runs raises into it."""
        task_group = self._task_group
        assert task_group is not None, "__aexit__ without __aenter__"
        try:
            with anyio.CancelScope(shield=True):
                await self._wind_down()
        finally:
            self._task_group = None
            task_group.cancel_scope.cancel()
            await task_group.__aexit__(None, None, None)

    async def _wind_down(self) -> None:
        """What leaving `async with` does before the group's end; nothing by default."""

    @property
    def unstable(self) -> bool:
        """Whether unstable ACP methods are served and sent on this connection (its fields
        and shapes always are: what the peer advertised decides; see the module docstring)."""
        return self.protocol.unstable

    def register(self, method: str, handler: Handler, *, kind: MessageKind | None = None) -> None:
        """Handle incoming `method` with `handler`.

        `kind` is needed only for a name that is both a request and a
        notification; an extension (`_`) method registers both kinds unless
        told. Raises `WrongMethod` for a method the other side handles,
        `UnstableNotEnabled` for an unstable one without `unstable=True`.
        """
        self.protocol.register(method, handler, kind=kind)

    def notify(self, method: str, params: Any) -> None:
        """Send notification `method` to the peer; `params` is its `protocol.types` class."""
        self.protocol.notify(method, params)

    def encode_notification(self, method: str, params: Any) -> bytes:
        """The line `notify(method, params)` would write, not written: to send many in one
        write with `notify_encoded`. Raises what `notify` raises for params that cannot go."""
        return self.protocol.encode_notification(method, params)

    def notify_encoded(self, lines: bytes) -> None:
        """Write notifications already encoded (lines joined by newlines, no final one) in
        one write; `ConnectionClosed` once the peer is gone."""
        self.protocol.notify_encoded(lines)

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any:
        """Send request `method`, await the peer and return its typed result.

        Raises the peer's `AcpError`, `RemoteProtocolError` for a malformed
        result, `PeerDisconnected`, or `PeerTimedOut` once `timeout_s` passed
        without an answer (None: wait as long as it takes); cancelling the
        caller, or the deadline passing, sends the peer `$/cancel_request`.
        """
        return await self.protocol.request(method, params, timeout_s=timeout_s)

    def after_response(self, callback: Callable[[], None]) -> None:
        """From a request handler: call `callback` right after its successful response.

        For notifications the peer can act on only once it has the response,
        such as updates about the session a `session/new` answer creates.
        `RuntimeError` outside a request handler.
        """
        self.protocol.after_response(callback)

    def start_soon(self, work: Work, *, name: str) -> None:
        """Run `work()` in the connection's task group, beside the handlers: work that
        outlives the request that began it (the runtime, a session's assembly).

        The connection waits for it before it ends: at the end (once the shutdown
        callbacks are done, for `start_io`) it is cancelled, so it ends then or
        earlier, through a callback of its own. What it raises is logged and ends it
        alone. `ConnectionNotStarted` outside the connection's life.
        """
        if self._task_group is None:
            raise ConnectionNotStarted()
        start_soon_in(self._task_group)(work, name=name)


async def _logged(work: Work, name: str) -> None:
    """Run `work`; an exception ends it alone, logged, never the connection."""
    try:
        await work()
    except Exception:
        logger.exception("%s failed", name)


async def _run_ndjson(
    source: LineSource,
    protocol: AcpProtocol,
    *,
    on_line: Callable[[bytes], None] | None = None,
    on_end: Callable[[], None] | None = None,
    cancel_handlers: bool = True,
) -> None:
    """Feed each line to `protocol` until the stream ends, then wind it down (W1).

    `on_end` is called once the stream has ended, before the handlers are
    (cancelled, unless `cancel_handlers` is false: see `input_ended`).
    """
    try:
        async for line in iter_lines(source):
            if on_line is not None and not isinstance(line, OverLongLine):
                # The client side reads `bytes` (asyncio's lines); only the agent side's
                # reader hands on `bytearray`s, and it watches no lines.
                on_line(line if isinstance(line, bytes) else bytes(line))
            protocol.receive_line(line)
            # Let a handler just started run to its first await before the
            # next message is dispatched (see the module docstring).
            await asyncio.sleep(0)
    finally:
        if on_end is not None:
            on_end()
        # Whatever ended the input, the handlers are wound down (bounded by the grace).
        with anyio.CancelScope(shield=True):
            await protocol.input_ended(grace_s=_SHUTDOWN_GRACE_S, cancel_handlers=cancel_handlers)


class AgentConnection(_Endpoint):
    """The agent's end of ACP: serves agent methods on stdio, calls the client.

    Outgoing request ids are `agent-<n>`; incoming ids are echoed exactly.
    """

    protocol: AgentSideProtocol

    def __init__(self, *, unstable: bool = False) -> None:
        self.protocol = AgentSideProtocol(shared_converter(include_unstable=True))
        self.protocol.unstable = unstable
        self._source: ThreadedLineReader | None = None
        self._shutdown: list[Callable[[], Awaitable[None]]] = []

    def notify_text_chunks(
        self,
        session_id: str,
        chunks: TextChunks,
        *,
        metas: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Send `chunks` to the client as `session/update`s of `session_id`, in one write.

        The same lines `notify(SESSION_UPDATE, ...)` would write for `chunks.updates()`
        (each with its `_meta` from `metas`, when given), encoded from a template: the
        path of streamed text. `ConnectionClosed` once the client is gone.
        """
        self.protocol.notify_encoded(encode_text_chunks(session_id, chunks, metas=metas))

    def on_shutdown(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Await `callback` once the input has ended and the handlers are done, while the
        event loop still runs and before what `start_soon` began is cancelled (closing
        what the handlers used, in registration order)."""
        self._shutdown.append(callback)

    def start_io(
        self,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        *,
        stop_signals: Collection[signal.Signals] = (),
        max_line_bytes: int = MAX_AGENT_LINE_BYTES,
        write_stall_s: float = DEFAULT_STALL_S,
    ) -> None:
        """Serve until `stdin` ends (blocking); then cancel what runs and return.

        `stdout` must be backed by a file descriptor: messages are written
        with `os.write`, one line each, nothing else, from a writer thread
        (`QueuedLineWriter`), so a slow reader never blocks the event loop. A
        client that reads nothing for `write_stall_s` seconds while more than
        `MAX_QUEUED_BYTES` wait is taken as gone: serving ends as at the end of
        `stdin`. What is queued when serving ends gets `_SHUTDOWN_GRACE_S` to
        be written.

        A line longer than `max_line_bytes` (newline excluded) is skipped
        without being kept and answered with one Invalid Request error (-32600,
        id null, naming the limit); the lines after it are served as usual.

        `stop_signals` (e.g. `(signal.SIGTERM, signal.SIGHUP)`; Unix, main
        thread only) end the input while serving, as `stop()` does. Once the
        input has ended, whatever ended it, they are back to their default
        action: another one during the wind-down ends the process at once,
        killed by that signal. A signal ignored when serving starts (`SIG_IGN`,
        as under `nohup`) stays ignored. SIGINT is best left out: `asyncio.run`
        already turns it into the same wind-down.
        """
        source = ThreadedLineReader(
            stdin if stdin is not None else sys.stdin.buffer, max_line_bytes=max_line_bytes
        )
        out = stdout if stdout is not None else sys.stdout.buffer
        out.flush()
        writer = QueuedLineWriter(out.fileno(), stall_s=write_stall_s, on_gone=self.stop)
        self.protocol.set_writer(writer)
        self._source = source
        try:
            asyncio.run(self._serve(source, stop_signals))
        except KeyboardInterrupt:
            logger.info("Interrupted; stopping")
        finally:
            self._source = None
            self.protocol.close()
            if not writer.drain(_SHUTDOWN_GRACE_S):
                logger.warning("Some messages could not be written before exit")
            writer.close()

    async def serve_lines(
        self, source: LineSource, writer: Writer, *, cancel_handlers: bool = True
    ) -> None:
        """Serve ACP over any line stream in the running loop, until `source` ends.

        The transport-agnostic form of `start_io`: `source` gives whole lines (a
        socket's, a WebSocket's messages), `writer` takes each message without its
        newline. At the end our pending requests fail and the running handlers are
        cancelled, or, with `cancel_handlers=False`, left to finish (the app
        server: a client leaving never cancels the work it started); the
        `on_shutdown` callbacks are the caller's to run. Only inside `async with`
        the connection, whose task group runs the handlers (`RuntimeError`
        otherwise): leaving it cancels those still running and waits for them.
        """
        if self._task_group is None:
            raise RuntimeError("an AgentConnection serves lines inside `async with` it")
        self.protocol.set_writer(writer)
        await _run_ndjson(source, self.protocol, cancel_handlers=cancel_handlers)

    @property
    def input_waiting(self) -> int:
        """Lines read from stdin that the loop has not taken yet (safe from any thread)."""
        source = self._source
        return 0 if source is None else source.lines_waiting

    def stop(self) -> None:
        """End the input now, as the end of stdin would; `start_io` then winds down and returns.

        Safe from any thread; lines read but not yet handled are dropped. No
        effect unless `start_io` is serving.
        """
        source = self._source
        if source is not None:
            source.stop()

    async def _serve(
        self, source: ThreadedLineReader, stop_signals: Collection[signal.Signals]
    ) -> None:
        loop = asyncio.get_running_loop()
        handled = [s for s in stop_signals if signal.getsignal(s) is not signal.SIG_IGN]

        def restore_defaults() -> None:
            # Removing the handler puts back the signal's default action.
            for signum in handled:
                loop.remove_signal_handler(signum)

        def stop_on(signum: signal.Signals) -> None:
            logger.info(
                "Received %s: ending the input, as its end would; another one ends the "
                "process at once",
                signum.name,
            )
            restore_defaults()
            self.stop()

        # Leaving the block cancels what is left (closed by no callback); the group waits.
        async with self:
            try:
                for signum in handled:
                    loop.add_signal_handler(signum, stop_on, signum)
                await _run_ndjson(source, self.protocol, on_end=restore_defaults)
            finally:
                restore_defaults()
                # The shutdown runs whatever ended the input; it bounds its own waits.
                with anyio.CancelScope(shield=True):
                    for callback in self._shutdown:
                        try:
                            await callback()
                        except Exception:
                            logger.exception("A shutdown callback failed")


class ClientConnection(_Endpoint):
    """The client's end of ACP: spawns an agent process and talks to it over its stdio.

    Use it in `async with`: its task group owns the tasks that read the agent's
    stdout and stderr, watch its exit and run our handlers; leaving the block
    stops the agent (`stop()`) and waits for them.

    Outgoing request ids are integers; incoming ids are echoed exactly.
    Override `line_received` to watch every line the agent writes and
    `stderr_received` to route its stderr (default: our stderr).
    """

    protocol: ClientSideProtocol

    def __init__(self, *, unstable: bool = False) -> None:
        self.protocol = ClientSideProtocol(shared_converter(include_unstable=True))
        self.protocol.unstable = unstable
        self._server: ChildProcess | None = None
        #: The scope the readers run in, and set once they have ended (`start_io`).
        self._reading: anyio.CancelScope | None = None
        self._readers_ended = asyncio.Event()
        #: Over a socket (`connect_unix`): its writer.
        self._socket: asyncio.StreamWriter | None = None

    async def _wind_down(self) -> None:
        await self.stop()

    @property
    def process(self) -> ChildProcess | None:
        """The agent process, once started (or attached)."""
        return self._server

    async def start_io(self, cmd: str, *args: str, **kwargs: Any) -> None:
        """Spawn `cmd args...` and talk ACP to it over its stdin and stdout.

        Extra keyword arguments go to `asyncio.create_subprocess_exec` (`env`,
        `cwd`); lines up to `MAX_CLIENT_LINE_BYTES` are read (W8). Only inside
        `async with` the connection (`RuntimeError` otherwise).
        """
        task_group = self._task_group
        if task_group is None:
            raise RuntimeError("a ClientConnection starts its agent inside `async with` it")
        server = await asyncio.create_subprocess_exec(
            cmd,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=MAX_CLIENT_LINE_BYTES,
            **kwargs,
        )
        self._talk_to(server)

    async def attach_process(self, process: subprocess.Popen[bytes]) -> None:
        """Talk ACP to `process`, an agent already started with pipes for its stdin,
        stdout and stderr, as `start_io` does to one it spawns: for a client that starts
        its agent before its loop (and the modules it needs) is up. Only inside `async
        with` the connection (`RuntimeError` otherwise)."""
        if self._task_group is None:
            raise RuntimeError("a ClientConnection attaches its agent inside `async with` it")
        self._talk_to(await adopt(process))

    def _talk_to(self, server: ChildProcess) -> None:
        if server.stdin is None or server.stdout is None or server.stderr is None:
            raise RuntimeError("the agent process was started without pipes")
        self._server = server
        self.protocol.set_writer(StreamWriterAdapter(server.stdin))
        self._start_readers(
            partial(_run_ndjson, server.stdout, self.protocol, on_line=self.line_received),
            partial(self._drain_stderr, server.stderr),
            partial(self._server_exit, server),
        )

    async def connect_unix(self, path: str) -> None:
        """Talk ACP over the Unix socket at `path` (an app server's) instead of a child's
        pipes; `OSError` when nothing listens there. `wait_ended` waits for its end. Only
        inside `async with` the connection."""
        reader, writer = await asyncio.open_unix_connection(path, limit=MAX_CLIENT_LINE_BYTES)
        self._socket = writer
        self.protocol.set_writer(StreamWriterAdapter(writer))
        self._start_readers(partial(_run_ndjson, reader, self.protocol, on_line=self.line_received))

    async def wait_ended(self) -> None:
        """Wait until the agent's side of the connection ends (its output closes)."""
        if self._reading is not None:
            await self._readers_ended.wait()

    def line_received(self, line: bytes) -> None:
        """Called with every line the agent writes, before it is dispatched."""

    async def server_exit(self, server: ChildProcess) -> None:
        """Called once the agent process has exited; default: nothing."""

    def stderr_received(self, line: bytes) -> None:
        """Called with every line the agent writes to stderr; default: copy to ours."""
        sys.stderr.write(line.decode("utf-8", "replace"))

    def _start_readers(self, *readers: Work) -> None:
        """Run `readers` (the agent's stdout read into the engine, its stderr, its exit) in
        the connection's group, in one scope `stop` ends once they had a moment to read
        what came last. For a transport of a subclass's own, too (a socket)."""
        if self._task_group is None:
            raise RuntimeError("a ClientConnection reads its agent inside `async with` it")
        self._reading = anyio.CancelScope()
        self._readers_ended = asyncio.Event()
        self._task_group.start_soon(self._read_all, readers, self._reading, name="acp-client-io")

    async def _read_all(self, readers: tuple[Work, ...], scope: anyio.CancelScope) -> None:
        try:
            with scope:
                async with anyio.create_task_group() as reading:
                    for reader in readers:
                        reading.start_soon(reader)
        except Exception:
            # A reader that fails ends the reading (pending requests fail as at the
            # end of output), never the connection's group.
            logger.exception("Reading the agent failed")
        finally:
            self._readers_ended.set()

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        # An unread stderr pipe fills up and blocks a chatty agent (W8).
        while line := await stream.readline():
            try:
                self.stderr_received(line)
            except Exception:
                logger.exception("Error in stderr_received")

    async def _server_exit(self, server: ChildProcess) -> None:
        # Pending requests fail when the agent's stdout ends (`input_ended`), not here.
        await server.wait()
        logger.debug("Agent process %s exited with %s", server.pid, server.returncode)
        try:
            await self.server_exit(server)
        except Exception:
            logger.exception("Error in server_exit handler")

    async def stop(self, *, timeout_s: float = 5.0) -> None:
        """Close the agent's stdin, wait up to `timeout_s` for it to exit, then terminate
        it; then give the readers a moment to read what it wrote last, and end them."""
        server = self._server
        if server is not None and server.returncode is None:
            if server.stdin is not None and not server.stdin.is_closing():
                server.stdin.close()
            try:
                await asyncio.wait_for(server.wait(), timeout_s)
            except TimeoutError:
                logger.warning("Agent process %s ignored end of input; terminating", server.pid)
                server.terminate()
                try:
                    await asyncio.wait_for(server.wait(), 2.0)
                except TimeoutError:
                    server.kill()
                    await server.wait()
        if self._socket is not None and not self._socket.is_closing():
            self._socket.close()
        self.protocol.close()
        if self._reading is not None:
            with anyio.move_on_after(_READ_GRACE_S):
                await self._readers_ended.wait()
            self._reading.cancel()
            await self._readers_ended.wait()
