"""The agent under test seen through a client of our own: requests, answers, what arrives.

`Probe` speaks JSON-RPC to one `AgentProcess` the way a strict and careful client
does: it sends requests and waits a bounded time for their responses, answers the
agent's own requests (a permission question is declined, and every client method
is refused: this client advertises none), and answers nothing else; a line that is
not a request (garbage, an array, a stray response) is evidence, never something
to reply to. Each line goes to the run's `WireJudge` as it arrives and to the open
`Window`s; nothing else of it is kept.

A request whose agent is gone fails at once (`NoAnswer`, naming how the process
ended and its last stderr lines), never after the timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any, Final

import anyio

from acp_agent.adapters.check._judge import NOT_JSON, WireJudge
from acp_agent.adapters.check._process import AgentProcess, StartSoon
from acp_agent.adapters.check._replies import Reply, dig, short
from protocol import methods, types

__all__ = ("NoAnswer", "Probe", "Window")

#: Client methods this checker never advertises: an agent must not call them.
UNADVERTISED: Final = frozenset(
    {
        methods.FS_READ_TEXT_FILE,
        methods.FS_WRITE_TEXT_FILE,
        methods.TERMINAL_CREATE,
        methods.TERMINAL_OUTPUT,
        methods.TERMINAL_WAIT_FOR_EXIT,
        methods.TERMINAL_KILL,
        methods.TERMINAL_RELEASE,
        methods.ELICITATION_CREATE,
    }
)
_MESSAGE_CHUNKS: Final = frozenset(
    {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"}
)
#: The update kinds a turn produces (the rest describe the session: title, commands, usage).
TURN_UPDATES: Final = frozenset({*_MESSAGE_CHUNKS, "tool_call", "tool_call_update", "plan"})


class NoAnswer(Exception):
    """A request got no response: none in time, or the agent went away (`gone`)."""

    def __init__(self, why: str, *, gone: bool, before: bool = False) -> None:
        super().__init__(why)
        self.why = why
        self.gone = gone
        #: The agent was gone before the request was sent: nothing was asked of it.
        self.before = before


class Window:
    """The updates of one session from when it opened: before and after a response.

    Counts by kind and keeps the first of each, nothing more. `answered` is when the
    response it waits for arrived (set by the probe as that line is read, so what
    follows it in the same read is counted after it).
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.answered: float | None = None
        #: (after the response?, kind group) -> (count, first line)
        self._seen: dict[tuple[bool, str], tuple[int, bytes]] = {}
        self.first_update = asyncio.Event()
        #: Responses to no request of ours (an answer to a notification, say), and the first.
        self.stray = 0
        self.first_stray = b""

    def update(self, line: bytes, message: dict[str, Any]) -> None:
        params = message.get("params")
        kind = dig(params, "update", "sessionUpdate")
        kind = kind if isinstance(kind, str) else None
        mine = dig(params, "sessionId") == self.session_id
        group = (
            ("chunk" if kind in _MESSAGE_CHUNKS else "turn") if kind in TURN_UPDATES else "session"
        )
        key = (self.answered is not None, ("mine-" if mine else "other-") + group)
        count, first = self._seen.get(key, (0, line[:300]))
        self._seen[key] = (count + 1, first)
        if mine:
            self.first_update.set()

    def count(self, *groups: str, after: bool) -> int:
        """Updates of the given groups (`mine-chunk`, `mine-turn`, `mine-session`, `other-…`)."""
        return sum(self._seen.get((after, g), (0, b""))[0] for g in groups)

    def first(self, *groups: str, after: bool) -> str:
        for g in groups:
            seen = self._seen.get((after, g))
            if seen is not None:
                return short(seen[1])
        return ""


class Probe:
    """One process of the agent command, spoken to as a client that advertises nothing."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        start_soon: StartSoon,
        judge: WireJudge,
        timeout_s: float,
        label: str,
    ) -> None:
        self.judge = judge
        self.timeout_s = timeout_s
        #: Names this process in evidence ("run 3").
        self.label = label
        self.process = AgentProcess(
            command, start_soon=start_soon, on_line=self._line, on_oversized=self._oversized
        )
        self._start_soon = start_soon
        self._ids = itertools.count(1)
        #: Our requests' ids (exactly as sent) and their methods, for the schema check.
        self.asked: dict[Any, str] = {}
        self._waiting: dict[Any, tuple[asyncio.Future[Reply], Window | None]] = {}
        self._windows: list[Window] = []
        self.lines = 0
        #: The scope of the watch that fails the waiting requests once the agent is gone.
        self._gone_watch: anyio.CancelScope | None = None

    async def start(self) -> None:
        """Start the agent (`OSError` when its command cannot be run)."""
        await self.process.start()
        self._gone_watch = anyio.CancelScope()
        self._start_soon(partial(self._fail_waiting_when_gone, self._gone_watch))

    # --- what we send -------------------------------------------------------------------

    async def request(self, method: str, params: Any, *, marks: Window | None = None) -> Reply:
        """Send request `method`; its response (`NoAnswer` if none comes, or when gone).

        `marks`: the window whose `answered` is the moment the response arrives. The ids
        alternate between numbers and strings, so both are seen echoed.
        """
        if self.process.ended.is_set():
            raise NoAnswer(self.gone_why(), gone=True, before=True)
        n = next(self._ids)
        msg_id: int | str = n if n % 2 else f"check-{n}"
        answer: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self.asked[msg_id] = method
        self._waiting[msg_id] = (answer, marks)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return await asyncio.wait_for(answer, self.timeout_s)
        except TimeoutError:
            if self.process.ended.is_set():
                raise NoAnswer(self.gone_why(), gone=True) from None
            deaf = "; it stopped reading its stdin" if self.process.stopped_reading else ""
            raise NoAnswer(
                f"no answer to {method} within {self.timeout_s:g} s{deaf}", gone=False
            ) from None
        finally:
            self._waiting.pop(msg_id, None)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def send(self, message: dict[str, Any]) -> None:
        self.process.write(json.dumps(message).encode() + b"\n")

    async def initialize(self, version: int = types.PROTOCOL_VERSION) -> Reply:
        """`initialize` as a client that offers no file system, terminal or elicitation."""
        return await self.request(
            methods.INITIALIZE,
            {
                "protocolVersion": version,
                "clientCapabilities": {
                    "fs": {"readTextFile": False, "writeTextFile": False},
                    "terminal": False,
                },
                "clientInfo": {"name": "acp-agent-check", "version": "1"},
            },
        )

    @contextlib.contextmanager
    def watch(self, session_id: str) -> Iterator[Window]:
        """A window on `session_id`'s updates while the block runs."""
        window = Window(session_id)
        self._windows.append(window)
        try:
            yield window
        finally:
            self._windows.remove(window)

    @property
    def gone(self) -> bool:
        return self.process.ended.is_set()

    def gone_why(self) -> str:
        """How the agent went away, with its last stderr lines."""
        how = self.process.how_it_ended()
        what = f"the agent {how}" if self.process.exited.is_set() else "the agent closed its stdout"
        tail = " | ".join(list(self.process.stderr_tail)[-3:])
        return what + (f"; stderr: {tail}" if tail else "; nothing on stderr")

    # --- what the agent writes ----------------------------------------------------------

    def _line(self, line: bytes) -> None:
        self.lines += 1
        try:
            message: Any = json.loads(line)
        except (ValueError, RecursionError):
            message = NOT_JSON
        self.judge.line(line, message, self._asked_for(message), f"{self.label} line {self.lines}")
        if not isinstance(message, dict):
            return  # garbage, a batch, a bare value: evidence only, never answered
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._answer(method, message)
            elif method == methods.SESSION_UPDATE:
                for window in self._windows:
                    window.update(line, message)
            return
        if "method" not in message and "id" in message:
            self._response(line, message)  # even one of the wrong shape: Reply says what is wrong

    def _asked_for(self, message: Any) -> dict[Any, str]:
        """What the schema check needs to know of our requests to judge `message`: a
        response whose id came back as another type (response-ids-echoed's business)
        is still checked as the response to its method."""
        if not isinstance(message, dict) or "method" in message:
            return self.asked
        msg_id = message.get("id")
        if _exact(msg_id, self.asked) is not None:
            return self.asked
        key = _loose(msg_id, self.asked)
        return self.asked if key is None else {msg_id: self.asked[key]}

    def _response(self, line: bytes, message: dict[str, Any]) -> None:
        msg_id = message.get("id")
        key = _exact(msg_id, self.asked)
        if key is not None:
            self.judge.ids_echoed += 1
        elif (key := _loose(msg_id, self.asked)) is not None:
            self.judge.ids_wrong.add(
                [f"the response to request id {key!r} carries the id {short(msg_id, 40)}"],
                self.label,
            )
        else:
            # An answer to nothing we asked: to a notification, or to an id never sent.
            if msg_id is not None:
                self.judge.ids_wrong.add(
                    [f"a response to id {short(msg_id, 40)}, which was never sent"], self.label
                )
            for window in self._windows:
                window.stray += 1
                window.first_stray = window.first_stray or line[:300]
            return
        waiting = self._waiting.get(key)
        if waiting is None:
            return  # late, or a second answer: the schema and id checks saw it
        answer, marks = waiting
        if marks is not None and marks.answered is None:
            marks.answered = time.monotonic()
        if not answer.done():
            answer.set_result(Reply(message))

    def _answer(self, method: str, message: dict[str, Any]) -> None:
        """Answer one request of the agent's; a client answers requests and nothing else."""
        msg_id = message.get("id")
        if method == methods.SESSION_REQUEST_PERMISSION:
            result = {"outcome": _decline(dig(message, "params", "options"))}
            self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})
            return
        if method in UNADVERTISED:
            self.judge.unadvertised.add([f"the agent called {method}"], self.label)
        error = {"code": -32601, "message": f"Method not found: {method[:100]}"}
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": error})

    def _oversized(self, size: int) -> None:
        self.lines += 1
        self.judge.oversized.add([f"a line of {size} bytes, skipped"], self.label)

    async def _fail_waiting_when_gone(self, watch: anyio.CancelScope) -> None:
        with watch:
            await self.process.ended.wait()
            # Its stdout may end a moment before its exit is seen: wait for the status.
            with anyio.move_on_after(0.2):
                await self.process.exited.wait()
            why = self.gone_why()
            for answer, _ in list(self._waiting.values()):
                if not answer.done():
                    answer.set_exception(NoAnswer(why, gone=True))

    async def close(self) -> None:
        """End the process and its whole group; bounded."""
        await self.process.close()
        if self._gone_watch is not None:
            self._gone_watch.cancel()


def _exact(msg_id: Any, table: dict[Any, Any]) -> Any:
    """`msg_id` when it is a key of `table` exactly (a number or a string, as sent)."""
    # type() and not isinstance: True == 1 and 1.0 == 1, but neither is the id 1 as sent.
    return msg_id if type(msg_id) in (int, str) and msg_id in table else None


def _loose(msg_id: Any, table: dict[Any, Any]) -> Any:
    """The key of `table` that `msg_id` stands for with its type changed (1 and "1")."""
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | float | str):
        return None
    text = str(int(msg_id)) if isinstance(msg_id, float) and msg_id.is_integer() else str(msg_id)
    return next((k for k in table if str(k) == text), None)


def _decline(options: Any) -> dict[str, Any]:
    """The outcome that declines a permission question: a reject option, else cancelled."""
    for option in options if isinstance(options, list) else []:
        if dig(option, "kind") in ("reject_once", "reject_always") and isinstance(
            dig(option, "optionId"), str
        ):
            return {"outcome": "selected", "optionId": option["optionId"]}
    return {"outcome": "cancelled"}
