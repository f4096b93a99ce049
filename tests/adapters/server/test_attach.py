"""Several clients on one session: attach, roles, replay and cursors, questions answered once.

One real server per module; its clients are real processes and connections:
stdio bridges (`acp-agent --connect`, what an editor launches) and socket
clients. Every session's first turn streams, pauses (where clients join and
leave), asks to write a file (a permission question, in the `ask` mode the
tests run in), then streams its last words.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocol import methods, types
from protocol.converter import shared_converter
from protocol.errors import AcpError, PeerDisconnected
from tests.support import EditorClient, agent_env, connected, write_script
from tests.support.app_server import (
    ATTACH,
    DETACH,
    ServerProcess,
    bridge_command,
    cursor_of,
    running_server,
    socket_client,
)
from tests.support.conversation import shown
from tests.support.editor_client import allow_all

pytestmark = pytest.mark.e2e

#: The first reply, then (after the write) the last: the script plays one per request.
REPLIES_IN_ORDER = [
    [
        {"text": "Working"},
        {"sleep_ms": 700},
        {"text": " on it."},
        {"tool_call": {"name": "write", "arguments": {"path": "note.txt", "content": "hi\n"}}},
    ],
    [{"text": "Wrote it."}, {"sleep_ms": 100}, {"text": " Done."}],
]
LAST_WORDS = "Wrote it. Done."


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ServerProcess]:
    home = tmp_path_factory.mktemp("attach-home")
    script = write_script(home / "script.json", *REPLIES_IN_ORDER)
    async with running_server(home, script=script) as running:
        yield running


@contextlib.asynccontextmanager
async def bridge(server: ServerProcess, **client: Any) -> AsyncIterator[EditorClient]:
    """An editor-like client through a stdio bridge (`acp-agent --connect`)."""
    async with connected(EditorClient(**client), bridge_command(server.home), env=agent_env()) as c:
        await c.request(
            methods.INITIALIZE,
            types.InitializeRequest(protocol_version=1, client_capabilities=None),
        )
        yield c


async def attach(client: Any, session_id: str, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await client.request(ATTACH, {"sessionId": session_id, **params})
    return result


def seen(client: Any, session_id: str) -> list[tuple[str, dict[str, Any]]]:
    """(cursor, update) of every update to `session_id` that carries a cursor, in order."""
    converter = client.protocol.converter
    return [
        (cursor, converter.unstructure(n.update))
        for n in client.updates
        if n.session_id == session_id and (cursor := cursor_of(n)) is not None
    ]


def conversation(client: Any, session_id: str) -> list[tuple[str, dict[str, Any]]]:
    """`seen`, without the updates about the session itself (commands)."""
    return [
        (cursor, update)
        for cursor, update in seen(client, session_id)
        if update["sessionUpdate"] != "available_commands_update"
    ]


def updates_of(
    client: Any, session_id: str, *, conversation_only: bool = False
) -> list[types.SessionUpdate]:
    """The typed updates `client` received for `session_id` (without the commands)."""
    return [
        n.update
        for n in client.updates
        if n.session_id == session_id
        and not (conversation_only and isinstance(n.update, types.AvailableCommandsUpdate))
    ]


def as_update(update: dict[str, Any]) -> types.SessionUpdate:
    structured: types.SessionUpdate = shared_converter().structure(update, types.SessionUpdate)
    return structured


def call_problems(updates: list[types.SessionUpdate]) -> list[str]:
    """A tool call updated before it was announced (a gap), or announced twice."""
    announced: set[str] = set()
    problems = []
    for update in updates:
        if isinstance(update, types.ToolCall):
            if update.tool_call_id in announced:
                problems.append(f"{update.tool_call_id} announced twice")
            announced.add(update.tool_call_id)
        elif isinstance(update, types.ToolCallProgress) and update.tool_call_id not in announced:
            problems.append(f"{update.tool_call_id} updated, never announced")
    return problems


def text_of(updates: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(
        u["content"]["text"] for _, u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


def notices(client: Any, method: str) -> list[dict[str, Any]]:
    return [m["params"] for m in client.messages if m.get("method") == method]


def position(cursor: str) -> tuple[int, int]:
    seq, _, part = cursor.partition(":")
    return int(seq), int(part or 1_000_000)


async def wait_for_text(client: Any, session_id: str, ending: str) -> None:
    await client.wait_until(lambda: text_of(seen(client, session_id)).endswith(ending))


async def wait_for_turn_end(client: Any, session_id: str) -> None:
    """Until the title the first turn's end gives the session: its last update."""

    def titled() -> bool:
        return any(u["sessionUpdate"] == "session_info_update" for _, u in seen(client, session_id))

    await wait_for_text(client, session_id, LAST_WORDS)
    await client.wait_until(titled)


async def test_two_bridges_see_every_update_of_a_turn_alike_and_a_question_is_answered_once(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with (
        bridge(server, decide=allow_all) as first,
        bridge(server) as second,  # never answers: its question is withdrawn
    ):
        session_id = await first.new_session(tmp_path)
        await attach(first, session_id, role="controller", replay="start")
        await attach(second, session_id, role="controller", replay="start")

        response = await first.prompt(session_id, "Write a note")
        await wait_for_turn_end(second, session_id)

        assert response.stop_reason == types.StopReason.END_TURN
        assert (tmp_path / "note.txt").read_text() == "hi\n"
        # Both saw the turn, update for update, in the same order with the same cursors.
        assert conversation(first, session_id) == conversation(second, session_id)
        cursors = [position(c) for c, _ in conversation(first, session_id)]
        assert cursors == sorted(set(cursors))
        assert text_of(conversation(first, session_id)) == "Working on it.Wrote it. Done."
        # The question went to both; `first` answered, `second`'s was withdrawn and resolved.
        [asked] = second.permission_requests
        request_id = next(
            m["id"]
            for m in second.messages
            if m.get("method") == methods.SESSION_REQUEST_PERMISSION
        )
        assert {"requestId": request_id} in notices(second, "$/cancel_request")
        [resolved] = notices(second, "_acp-agent/permission_resolved")
        assert resolved["toolCallId"] == asked.tool_call.tool_call_id
        assert resolved["outcome"]["outcome"] == "selected"
        assert notices(first, "_acp-agent/permission_resolved") == []


async def test_an_observer_attaching_mid_turn_gets_the_replay_then_live_without_gap_or_twice(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with (
        socket_client(server.socket, decide=allow_all) as controller,
        socket_client(server.socket) as observer,
    ):
        session_id = await controller.new_session(tmp_path)
        await attach(controller, session_id, role="controller", replay="none")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(controller.prompt, session_id, "Write a note")
            await controller.wait_for_update(session_id)  # "Working": mid-turn
            answer = await attach(observer, session_id, role="observer", replay="start")
        await wait_for_turn_end(observer, session_id)

        # Everything the store holds, replayed to a client attaching now: the same
        # conversation, in fewer updates (a message whole, the call in its last state).
        async with socket_client(server.socket) as later:
            await attach(later, session_id, role="observer", replay="start")
            await wait_for_turn_end(later, session_id)
            assert shown(updates_of(observer, session_id)) == shown(updates_of(later, session_id))
            assert len(conversation(later, session_id)) < len(conversation(observer, session_id))
        # The replay came before the answer (the ready point), live updates after it.
        ready_at = position(answer["cursor"])
        lines = observer.messages
        answered = next(i for i, m in enumerate(lines) if "clientId" in (m.get("result") or {}))
        cursors = [
            (i, position(m["params"]["_meta"]["acp-agent"]["cursor"]))
            for i, m in enumerate(lines)
            if m.get("method") == methods.SESSION_UPDATE
        ]
        assert all(p <= ready_at for i, p in cursors if i < answered)
        live = [p for i, p in cursors if i > answered and p[1] != 1_000_000]
        assert live
        assert all(p > ready_at for p in live)


async def test_a_client_reconnecting_with_its_cursor_gets_exactly_the_rest(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with socket_client(server.socket, decide=allow_all) as controller:
        session_id = await controller.new_session(tmp_path)
        await attach(controller, session_id, replay="none")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(controller.prompt, session_id, "Write a note")
            async with socket_client(server.socket) as watcher:
                await attach(watcher, session_id, role="observer", replay="start")
                await watcher.wait_for_update(session_id)  # mid-turn
                first_part = conversation(watcher, session_id)
                cursor = seen(watcher, session_id)[-1][0]
            async with socket_client(server.socket) as back:
                await attach(back, session_id, role="observer", replay="cursor", cursor=cursor)
                await wait_for_turn_end(back, session_id)
                rest = conversation(back, session_id)
        async with socket_client(server.socket) as whole:
            await attach(whole, session_id, role="observer", replay="start")
            await wait_for_turn_end(whole, session_id)
            # The same conversation, nothing missing and nothing twice.
            both = [as_update(u) for _, u in first_part + rest]
            assert shown(both) == shown(updates_of(whole, session_id, conversation_only=True))
            assert call_problems(both) == []


async def test_a_cursor_inside_a_message_resumes_with_the_rest_of_it_in_one_chunk(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with (
        socket_client(server.socket, decide=allow_all) as controller,
        socket_client(server.socket) as watcher,
    ):
        session_id = await controller.new_session(tmp_path)
        await attach(controller, session_id, replay="none")
        await attach(watcher, session_id, role="observer", replay="none")
        await controller.prompt(session_id, "Write a note")
        await wait_for_turn_end(watcher, session_id)
        # Live, "Working" and " on it." came as chunks of their own, each with its cursor.
        live = conversation(watcher, session_id)
        texts = [
            u["content"]["text"] for _, u in live if u["sessionUpdate"] == "agent_message_chunk"
        ]
        assert texts[:2] == ["Working", " on it."]

        # From the start: the message in one chunk, the call once, completed.
        async with socket_client(server.socket) as whole:
            await attach(whole, session_id, role="observer", replay="start")
            replay = conversation(whole, session_id)
        kinds = [u["sessionUpdate"] for _, u in replay]
        assert kinds[:4] == [
            "user_message_chunk",
            "agent_message_chunk",
            "tool_call",
            "agent_message_chunk",
        ]
        assert replay[1][1]["content"]["text"] == "Working on it."
        assert replay[2][1]["status"] == "completed"
        assert replay[3][1]["content"]["text"] == LAST_WORDS
        # After each cursor the watcher got live, or a replay gave: the rest. With what came
        # up to it, the whole conversation, nothing twice; what is left of a message comes
        # in one chunk (after "Working", " on it.").
        for got in (live, replay):
            for at, (cursor, _) in enumerate(got):
                async with socket_client(server.socket, check_wire=False) as back:
                    await attach(back, session_id, role="observer", replay="cursor", cursor=cursor)
                    rest = conversation(back, session_id)
                both = [as_update(u) for _, u in got[: at + 1] + rest]
                assert shown(both) == shown([as_update(u) for _, u in replay]), cursor
                assert call_problems(both) == [], cursor
                rest_ids = [u["messageId"] for _, u in rest if "messageId" in u]
                assert len(rest_ids) == len(set(rest_ids)), cursor
                if got[at][1].get("messageId") and got[at][1]["content"]["text"] == "Working":
                    assert rest[0][1]["content"]["text"] == " on it."


async def test_an_observer_only_watches(server: ServerProcess, tmp_path: Path) -> None:
    async with (
        socket_client(server.socket) as owner,
        socket_client(server.socket) as observer,
    ):
        session_id = await owner.new_session(tmp_path)
        await attach(observer, session_id, role="observer", replay="none")

        with pytest.raises(AcpError) as refused:
            await observer.prompt(session_id, "Hi")

        assert refused.value.code == -32600
        assert "observes" in refused.value.message


async def test_one_controller_at_a_time_serves_a_sessions_files(
    server: ServerProcess, tmp_path: Path
) -> None:
    files = types.ClientCapabilities(
        fs=types.FileSystemCapabilities(read_text_file=True, write_text_file=True)
    )
    async with (
        socket_client(server.socket, capabilities=files) as first,
        socket_client(server.socket, capabilities=files) as second,
        socket_client(server.socket) as no_files,
    ):
        session_id = await first.new_session(tmp_path)
        served = await attach(first, session_id, role="controller", replay="none", files=True)
        with pytest.raises(AcpError) as taken:
            await attach(second, session_id, role="controller", replay="none", files=True)
        with pytest.raises(AcpError) as unable:
            await attach(no_files, session_id, role="controller", replay="none", files=True)
        with pytest.raises(AcpError) as observing:
            await attach(second, session_id, role="observer", replay="none", files=True)
        await first.request(DETACH, {"sessionId": session_id})
        after = await attach(second, session_id, role="controller", replay="none", files=True)

    assert served["files"] is True
    assert taken.value.code == -32600
    assert taken.value.data["filesServedBy"] == served["clientId"]
    assert unable.value.code == -32602
    assert "fs.writeTextFile" in unable.value.message
    assert observing.value.code == -32602
    assert after["files"] is True


async def test_the_bridges_editor_quits_mid_turn_and_the_turn_finishes(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with socket_client(server.socket, decide=allow_all) as watcher:
        async with bridge(server) as editor:
            session_id = await editor.new_session(tmp_path)
            await attach(watcher, session_id, role="controller", replay="none")

            async def prompt() -> None:
                with contextlib.suppress(PeerDisconnected, AcpError):
                    await editor.prompt(session_id, "Write a note")

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(prompt)
                await editor.wait_for_update(session_id)  # mid-turn
                await editor.stop()  # the editor quits: the bridge exits
        assert editor.process is not None
        assert editor.process.returncode == 0
        # The question goes to the controller still attached; the turn ends.
        await wait_for_text(watcher, session_id, LAST_WORDS)
        assert len(watcher.permission_requests) == 1
        assert (tmp_path / "note.txt").read_text() == "hi\n"
        assert notices(watcher, "_acp-agent/client_disconnected") == []  # it never attached
    async with socket_client(server.socket) as later:
        await later.load(session_id, tmp_path)
        text = "".join(
            u.content.text
            for u in later.updates_for(session_id)
            if isinstance(u, types.AgentMessageChunk) and isinstance(u.content, types.TextContent)
        )
        assert text.endswith(LAST_WORDS)


async def test_a_question_whose_controllers_all_left_waits_for_the_next_controller(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with socket_client(server.socket) as owner:
        session_id = await owner.new_session(tmp_path)
        async with socket_client(server.socket) as watcher:
            await attach(watcher, session_id, role="observer", replay="none")
            async with socket_client(server.socket) as first:  # never answers
                await attach(first, session_id, role="controller", replay="none")
                turn = asyncio.create_task(owner.prompt(session_id, "Write a note"))
                owner.answers = [None]  # the owner does not answer either: it leaves
                await first.asked.wait()
                await owner.asked.wait()
            # `first` left: the others attached are told; the question is not answered.
            await watcher.wait_until(
                lambda: notices(watcher, "_acp-agent/client_disconnected") != []
            )
            [left] = notices(watcher, "_acp-agent/client_disconnected")
            assert left["role"] == "controller"
            assert left["reason"] == "disconnected"
            await owner.stop()  # the prompt's own client leaves too: nobody is asked now
            with contextlib.suppress(PeerDisconnected, AcpError):
                await turn
            assert not (tmp_path / "note.txt").exists()
            # A controller attaching later is asked, answers, and the turn goes on.
            async with socket_client(server.socket, decide=allow_all) as later:
                await attach(later, session_id, role="controller", replay="start")
                await later.asked.wait()
                await wait_for_text(watcher, session_id, LAST_WORDS)
            assert (tmp_path / "note.txt").read_text() == "hi\n"


async def test_a_second_controller_steers_the_running_turn_and_both_see_it_where_taken_in(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with (
        socket_client(server.socket, decide=allow_all) as first,
        socket_client(server.socket) as second,
    ):
        session_id = await first.new_session(tmp_path)
        await attach(first, session_id, role="controller", replay="none")
        await attach(second, session_id, role="controller", replay="none")
        async with anyio.create_task_group() as tasks:
            answers: list[types.PromptResponse] = []

            async def prompt() -> None:
                answers.append(await first.prompt(session_id, "Write a note"))

            tasks.start_soon(prompt)
            await wait_for_text(first, session_id, "Working")  # the first reply streams
            steered = await second.request_raw(
                "_session/steering",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": "Say done."}]},
            )
        await wait_for_turn_end(second, session_id)

    assert steered["result"]["outcome"] == "injected"
    # Both controllers see it once, where the turn took it in: after words of the reply
    # it was sent during, and a reply (the turn's next request) after it.
    for client in (first, second):
        shown = [
            (u["sessionUpdate"], u["content"].get("text"))
            for _, u in conversation(client, session_id)
            if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
        ]
        steer = shown.index(("user_message_chunk", "Say done."))
        assert shown.count(("user_message_chunk", "Say done.")) == 1
        assert ("agent_message_chunk", "Working") in shown[:steer]
        assert shown[steer + 1][0] == "agent_message_chunk"
    # The answer says what the turn used.
    [answer] = answers
    assert answer.meta is not None
    assert answer.meta["acp-agent"]["usage"]["turn"]["totalTokens"] > 0


async def test_a_mode_one_controller_sets_reaches_the_other_attached_clients(
    server: ServerProcess, tmp_path: Path
) -> None:
    async with (
        socket_client(server.socket) as owner,
        socket_client(server.socket) as controller,
        socket_client(server.socket) as observer,
    ):
        session_id = await owner.new_session(tmp_path)
        await attach(controller, session_id, role="controller", replay="none")
        await attach(observer, session_id, role="observer", replay="none")

        await controller.request(
            methods.SESSION_SET_MODE,
            types.SetSessionModeRequest(session_id=session_id, mode_id="plan"),
        )

        def settings_seen(client: Any) -> list[dict[str, Any]]:
            return [
                u
                for _, u in seen(client, session_id)
                if u["sessionUpdate"] in ("current_mode_update", "config_option_update")
            ]

        await observer.wait_until(lambda: len(settings_seen(observer)) == 2)
        mode, options = settings_seen(observer)
        assert mode["currentModeId"] == "plan"
        [mode_option] = [o for o in options["configOptions"] if o["id"] == "mode"]
        assert mode_option["currentValue"] == "plan"
        # The one that set it has it from its own answer; the owner, not attached, from
        # its next answer (as over stdio: nothing between its turns).
        assert settings_seen(owner) == []
