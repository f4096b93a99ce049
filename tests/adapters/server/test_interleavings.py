"""Attach, detach, prompt and cancel from three clients, interleaved at random (hypothesis).

One real server for the module; each example a new session, three socket
clients and a random program of steps. Whatever the order, against the store's
history (and a client attaching once it is all over, replayed from the start):

- every stretch a client spent attached shows a stretch of the history with no
  gap and nothing twice: its cursors increase, all after where its replay
  started; each message it shows has exactly the text the history's deltas of
  that reply hold after that start, up to the last place the stretch reached
  (a replay sends a message in one chunk, live its deltas: the text is the
  same); each message of the person's once; and a client attached to the end
  reaches the history's end;
- every prompt is answered, and the stored timeline is one a single client
  could have made: turns one after another, each ended or interrupted once.

Bounded for CI (a few examples; `HYPOTHESIS_PROFILE=thorough` for more).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import methods, types
from protocol.errors import AcpError
from tests.support import agent_env, write_script
from tests.support.app_server import ATTACH, DETACH, SocketClient, cursor_of, server_command
from tests.support.editor_client import allow_all

pytestmark = pytest.mark.e2e

CLIENTS = 3
REPLY = [{"text": "One"}, {"sleep_ms": 40}, {"text": " two"}, {"sleep_ms": 40}, {"text": "."}]


@pytest.fixture(scope="module")
def socket() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="acp-interleave-") as tmp:
        home = Path(tmp)
        script = write_script(home / "script.json", REPLY)
        server = subprocess.Popen(
            server_command(home, script=script),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=agent_env(),
        )
        assert server.stderr is not None
        while b"listening on unix:" not in server.stderr.readline():
            assert server.poll() is None, "the server did not start"
        try:
            yield home / "state" / "server" / "acp.sock"
        finally:
            server.terminate()
            server.wait(15)
            server.stderr.close()


steps = st.lists(
    st.tuples(
        st.integers(0, CLIENTS - 1),
        st.sampled_from(
            ["controller", "observer", "resume", "detach", "prompt", "cancel", "pause"]
        ),
    ),
    min_size=3,
    max_size=12,
)


#: Updates about the session, not made of its events (they carry the position reached).
ABOUT_THE_SESSION = frozenset({"available_commands_update", "current_mode_update"})


def event_updates(
    client: SocketClient, session_id: str, since: int = 0, until: int | None = None
) -> list[tuple[str, Any]]:
    """(cursor, update) of the updates made of events (not commands), `since` to `until`."""
    converter = client.protocol.converter
    return [
        (cursor, converter.unstructure(n.update))
        for n in client.updates[since:until]
        if n.session_id == session_id
        and (cursor := cursor_of(n)) is not None
        and n.update.session_update not in ABOUT_THE_SESSION
    ]


def position(cursor: str) -> tuple[int, int]:
    """A cursor in order: `"<seq>"` (all of the event) after every `"<seq>:<part>"`."""
    seq, _, part = cursor.partition(":")
    return int(seq), int(part) if part else 1 << 30


def texts(updates: list[tuple[str, Any]]) -> dict[str, str]:
    """The text each message shows, by message id (the person's and the agent's)."""
    shown: dict[str, str] = {}
    for _, update in updates:
        if update["sessionUpdate"] in ("agent_message_chunk", "user_message_chunk"):
            message_id = update["messageId"]
            shown[message_id] = shown.get(message_id, "") + update["content"]["text"]
    return shown


def history_texts(
    events: list[tuple[int, str, Any]], after: str | None, upto: int
) -> dict[str, str]:
    """The text of each message the history shows after cursor `after` (None: from the
    start) up to seq `upto`: the person's messages, and each reply's deltas joined."""
    start = (0, 1 << 30) if after is None else position(after)
    shown: dict[str, str] = {}
    for seq, kind, payload in events:
        if seq > upto:
            break
        if kind == "model_request.text_delta":
            pieces = payload["pieces"] or [payload["text"]]
            kept = [p for part, p in enumerate(pieces) if (seq, part) > start]
            if kept:
                request = payload["request_id"]
                shown[request] = shown.get(request, "") + "".join(kept)
        elif kind == "user_input.adopted" and (seq, 0) > start:
            shown[payload["input_id"]] = "".join(c["text"] for c in payload["content"])
    return shown


async def program(socket: Path, cwd: Path, plan: list[tuple[int, str]]) -> str:
    # Each client's connection owns the task reading it; leaving the stack ends them.
    async with contextlib.AsyncExitStack() as clients_open:
        return await _program(clients_open, socket, cwd, plan)


async def _program(
    clients_open: contextlib.AsyncExitStack, socket: Path, cwd: Path, plan: list[tuple[int, str]]
) -> str:
    clients = [
        await clients_open.enter_async_context(SocketClient(decide=allow_all))
        for _ in range(CLIENTS)
    ]
    for client in clients:
        await client.connect(socket)
        await client.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1))
    session_id = await clients[0].new_session(cwd)
    for client in clients[1:]:
        await client.load(session_id, cwd)  # each follows it (not attached) from the start
    #: Per client: (index in its updates where the stretch began, replay start, attached now).
    stretches: list[list[tuple[int, str | None]]] = [[] for _ in clients]
    attached = [False] * CLIENTS
    prompts: list[asyncio.Task[Any]] = []
    try:
        for who, step in plan:
            client = clients[who]
            if step in ("controller", "observer", "resume"):
                if attached[who]:
                    # Detached first, so this stretch's updates all came before the answer.
                    try:
                        await client.request(DETACH, {"sessionId": session_id})
                    except AcpError:
                        continue  # its prompt runs: neither is taken
                    attached[who] = False
                mark = len(client.updates)
                seen = event_updates(client, session_id)
                params: dict[str, Any] = {"sessionId": session_id, "replay": "start"}
                params["role"] = "observer" if step == "observer" else "controller"
                if step == "resume" and seen:
                    params.update(replay="cursor", cursor=seen[-1][0])
                with contextlib.suppress(AcpError):  # refused while its prompt runs
                    await client.request(ATTACH, params)
                    replay = params.get("cursor")
                    stretches[who].append((mark, replay))
                    attached[who] = True
            elif step == "detach":
                with contextlib.suppress(AcpError):
                    await client.request(DETACH, {"sessionId": session_id})
                    attached[who] = False
            elif step == "prompt":
                prompts.append(asyncio.create_task(client.prompt(session_id, "Go")))
                await asyncio.sleep(0)
            elif step == "cancel":
                client.cancel(session_id)
            else:
                await asyncio.sleep(0.03)
        answers = await asyncio.wait_for(asyncio.gather(*prompts, return_exceptions=True), 30)
        reference = await clients_open.enter_async_context(SocketClient())
        await reference.connect(socket)
        await reference.request(methods.INITIALIZE, types.InitializeRequest(protocol_version=1))
        await reference.request(ATTACH, {"sessionId": session_id, "replay": "start"})
        whole = event_updates(reference, session_id)
        await reference.stop()
        # The reference against the store: every message, whole, in order, once.
        events = stored(socket.parent.parent.parent, session_id)
        end = events[-1][0]
        cursors = [position(c) for c, _ in whole]
        assert cursors == sorted(set(cursors))
        assert {seq for seq, _ in cursors} <= {seq for seq, _, _ in events}
        assert texts(whole) == history_texts(events, None, end)
        await asyncio.sleep(0.1)  # live updates still on their way to attached clients

        for answer in answers:
            # Answered: a turn's end, a cancel, or refused (an observer may not prompt).
            assert isinstance(answer, types.PromptResponse | AcpError), answer
        for who, client in enumerate(clients):
            marks = stretches[who]
            for n, (mark, replay) in enumerate(marks):
                until = marks[n + 1][0] if n + 1 < len(marks) else None
                got = event_updates(client, session_id, mark, until)
                places = [position(c) for c, _ in got]
                assert places == sorted(set(places)), (who, n, replay)
                if replay is not None:
                    assert all(p > position(replay) for p in places), (who, n, replay)
                reached = max((seq for seq, _ in places), default=0)
                assert texts(got) == history_texts(events, replay, reached), (who, n, replay)
                if n == len(marks) - 1 and attached[who] and got:
                    assert reached == cursors[-1][0], (who, "stopped short")
    finally:
        for task in prompts:
            task.cancel()
        for client in clients:
            await client.stop()
    return session_id


def stored(home: Path, session_id: str) -> list[tuple[int, str, Any]]:
    """(seq, kind, payload) of the session's main-line events, read from the store."""
    with contextlib.closing(sqlite3.connect(home / "data" / "sessions.sqlite3")) as db:
        [(branch,)] = db.execute(
            "SELECT main_branch_id FROM sessions WHERE session_id = ?", (session_id,)
        )
        rows = db.execute(
            "SELECT seq, kind, payload FROM events WHERE branch_id = ? ORDER BY seq", (branch,)
        )
        return [(seq, kind, json.loads(payload)) for seq, kind, payload in rows]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=steps)
def test_interleaved_clients_each_see_a_gapless_copy_of_the_one_timeline(
    socket: Path, tmp_path: Path, plan: list[tuple[int, str]]
) -> None:
    session_id = asyncio.run(program(socket, tmp_path, plan))

    # One timeline a single client could have made: turns one after another, each
    # ended or interrupted once.
    ends = ("user_input.adopted", "turn.ended", "turn.interrupted")
    turns = [kind for _, kind, _ in stored(socket.parent.parent.parent, session_id) if kind in ends]
    assert turns[0::2] == ["user_input.adopted"] * len(turns[0::2])
    assert all(end in ("turn.ended", "turn.interrupted") for end in turns[1::2])
    assert len(turns) % 2 == 0
