"""ACP connections over stdio: newline-delimited JSON-RPC 2.0 on asyncio, both roles.

`AgentConnection` is the agent's end: it serves agent methods on stdin and
stdout and calls the client (`session/update`, `fs/*`, `terminal/*`, ...).
`ClientConnection` is the client's end: it spawns an agent process and
talks to it, or connects to an app server's Unix socket (the test client,
the benchmarks and `acp-agent watch` are built on it).

    conn = AgentConnection()
    conn.register(methods.INITIALIZE, initialize)  # typed params in, typed result out
    conn.start_io(stop_signals=(signal.SIGTERM,))  # blocks until stdin ends or SIGTERM

Handlers receive params structured into `protocol.types` classes (plain JSON
for `_` extension methods) and return result objects; raise an `AcpError`
to answer with an error. `async def` handlers run concurrently, so a handler
may await a request to the peer while other messages are served. Each
handler is started, and runs to its first `await`, before the next message
is read: state a handler registers before awaiting is visible to the next
message's handler (a `session/cancel` right behind a `session/prompt`).

The agent's end stops serving when its input ends, when `stop()` is called,
or on one of the `stop_signals` given to `start_io`; all three take the same
path: pending requests to the client fail, running handlers are cancelled
and get a short grace to unwind (requests are still answered, -32800), and
`start_io` returns once the event loop has finished every task.

Both ends read and write every field and shape of the unstable schema
whatever `unstable` says: what a peer advertises decides what is sent (a
client's `subagents`, `plan`), and the code that sends a negotiated shape
checks for it. `unstable` gates the unstable *methods* only (`session/fork`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, BinaryIO, Final

from jsonbounds import OverLongLine
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
from protocol.limits import MAX_AGENT_LINE_BYTES
from protocol.methods import MessageKind
from protocol.text_chunks import TextChunks, encode_text_chunks

__all__ = ("DEFAULT_WRITE_STALL_S", "AgentConnection", "ClientConnection", "Handler")

#: How long a client may read nothing, with output piling up, before it is gone.
DEFAULT_WRITE_STALL_S: Final = DEFAULT_STALL_S

logger = logging.getLogger(__name__)

#: How long handlers cancelled at end of input get to unwind; the whole
#: shutdown must fit in the one second an editor waits.
_SHUTDOWN_GRACE_S: Final = 0.5


class _Endpoint:
    """What both ends offer: handler registration, notifications, requests."""

    protocol: AcpProtocol

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
        await protocol.input_ended(grace_s=_SHUTDOWN_GRACE_S, cancel_handlers=cancel_handlers)


class AgentConnection(_Endpoint):
    """The agent's end of ACP: serves agent methods on stdio, calls the client.

    Outgoing request ids are `agent-<n>`; incoming ids are echoed exactly.
    """

    protocol: AgentSideProtocol

    def __init__(self, *, unstable: bool = False) -> None:
        self.protocol = AgentSideProtocol(shared_converter(include_unstable=True))
        self.protocol.unstable = unstable
        self._stop_event = threading.Event()
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
        event loop still runs (closing what the handlers used, in registration order)."""
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
        self._stop_event = threading.Event()
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
            self._stop_event.set()

    async def serve_lines(
        self, source: LineSource, writer: Writer, *, cancel_handlers: bool = True
    ) -> None:
        """Serve ACP over any line stream in the running loop, until `source` ends.

        The transport-agnostic form of `start_io`: `source` gives whole lines (a
        socket's, a WebSocket's messages), `writer` takes each message without its
        newline. At the end our pending requests fail and the running handlers are
        cancelled, or, with `cancel_handlers=False`, left to finish (the app
        server: a client leaving never cancels the work it started); the
        `on_shutdown` callbacks are the caller's to run.
        """
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

        try:
            for signum in handled:
                loop.add_signal_handler(signum, stop_on, signum)
            await _run_ndjson(source, self.protocol, on_end=restore_defaults)
        finally:
            restore_defaults()
            for callback in self._shutdown:
                try:
                    await callback()
                except Exception:
                    logger.exception("A shutdown callback failed")


class ClientConnection(_Endpoint):
    """The client's end of ACP: spawns an agent process and talks to it over its stdio.

    Outgoing request ids are integers; incoming ids are echoed exactly.
    Override `line_received` to watch every line the agent writes and
    `stderr_received` to route its stderr (default: our stderr).
    """

    protocol: ClientSideProtocol

    def __init__(self, *, unstable: bool = False) -> None:
        self.protocol = ClientSideProtocol(shared_converter(include_unstable=True))
        self.protocol.unstable = unstable
        self._server: asyncio.subprocess.Process | None = None
        self._async_tasks: list[asyncio.Task[None]] = []
        self._stop_event = threading.Event()
        #: Over a socket (`connect_unix`): its writer and the task reading it.
        self._socket: asyncio.StreamWriter | None = None
        self._reading: asyncio.Task[None] | None = None

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        """The agent process, once started."""
        return self._server

    async def start_io(self, cmd: str, *args: str, **kwargs: Any) -> None:
        """Spawn `cmd args...` and talk ACP to it over its stdin and stdout.

        Extra keyword arguments go to `asyncio.create_subprocess_exec` (`env`,
        `cwd`); lines up to `MAX_CLIENT_LINE_BYTES` are read (W8).
        """
        server = await asyncio.create_subprocess_exec(
            cmd,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=MAX_CLIENT_LINE_BYTES,
            **kwargs,
        )
        if server.stdin is None or server.stdout is None or server.stderr is None:
            raise RuntimeError("the agent process was started without pipes")
        self._server = server
        self.protocol.set_writer(StreamWriterAdapter(server.stdin))
        self._async_tasks.extend(
            [
                asyncio.create_task(
                    _run_ndjson(server.stdout, self.protocol, on_line=self.line_received),
                    name="acp-client-read",
                ),
                asyncio.create_task(self._drain_stderr(server.stderr), name="acp-client-stderr"),
                asyncio.create_task(self._server_exit(), name="acp-client-exit"),
            ]
        )

    async def connect_unix(self, path: str) -> None:
        """Talk ACP over the Unix socket at `path` (an app server's) instead of a child's
        pipes; `OSError` when nothing listens there. `wait_ended` waits for its end."""
        reader, writer = await asyncio.open_unix_connection(path, limit=MAX_CLIENT_LINE_BYTES)
        self._socket = writer
        self.protocol.set_writer(StreamWriterAdapter(writer))
        self._reading = asyncio.create_task(
            _run_ndjson(reader, self.protocol, on_line=self.line_received), name="acp-client-read"
        )
        self._async_tasks.append(self._reading)

    async def wait_ended(self) -> None:
        """Wait until the agent's side of the connection ends (its output closes)."""
        if self._reading is not None:
            await asyncio.shield(self._reading)

    def line_received(self, line: bytes) -> None:
        """Called with every line the agent writes, before it is dispatched."""

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        """Called once the agent process has exited; default: nothing."""

    def stderr_received(self, line: bytes) -> None:
        """Called with every line the agent writes to stderr; default: copy to ours."""
        sys.stderr.write(line.decode("utf-8", "replace"))

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        # An unread stderr pipe fills up and blocks a chatty agent (W8).
        while line := await stream.readline():
            self.stderr_received(line)

    async def _server_exit(self) -> None:
        # Pending requests fail when the agent's stdout ends (`input_ended`), not here.
        if self._server is None:
            return
        await self._server.wait()
        logger.debug("Agent process %s exited with %s", self._server.pid, self._server.returncode)
        try:
            await self.server_exit(self._server)
        except Exception:
            logger.exception("Error in server_exit handler")
        self._stop_event.set()

    async def stop(self, *, timeout_s: float = 5.0) -> None:
        """Close the agent's stdin, wait up to `timeout_s` for it to exit, then terminate it."""
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
        self._stop_event.set()
        if self._async_tasks:
            _, still_running = await asyncio.wait(self._async_tasks, timeout=1.0)
            for task in still_running:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*self._async_tasks, return_exceptions=True)
