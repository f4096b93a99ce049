"""ACP v2 through the stdio agent, end to end: one real agent process, every line it
writes checked against the v2 schema.

Config options, a built-in slash command, a turn with a tool call (asked, `requires_action`,
allowed, run), one tool call cancelled alone (`tool_call/cancel`: its turn goes
on), a command's display terminal (announced, its output, cancelled with
`terminal/cancel`), a turn cancelled (`session/cancel`: `idle` / `cancelled`),
then `session/resume` replaying from the start, after a cursor mid-way and after
the last one: each replay is exactly the
live updates past that point (no gap, no duplicate).
"""

from __future__ import annotations

import base64
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.acp.session_support import openai_text
from tests.adapters.acp2.support import V2Client, cursor_of, initialize_v2, is_idle
from tests.support.agent import agent_env, openai_env, write_script
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.timeout(90)


def shell(command: str, call_id: str, *, background: bool = False) -> dict[str, Any]:
    arguments: dict[str, Any] = {"command": command}
    if background:
        arguments["background"] = True
    return {"tool_call": {"name": "shell", "arguments": arguments, "id": call_id}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


@pytest.fixture
def v2_agent(tmp_path: Path) -> Any:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = write_script(
        tmp_path / "script.json",
        [{"text": "Writing."}, shell("echo one > one.txt", "w1")],
        [{"text": "Written."}],
        [{"text": "Waiting."}, shell("sleep 30", "s1")],
        [{"text": "Cut short."}],
        [{"text": "Again."}, shell("echo started; sleep 30", "s2")],
        [{"text": "Stopped."}],
        [{"text": "In the background."}, shell("sleep 30", "j1", background=True)],
        [{"text": "Started."}],
        [{"text": "Working on it"}, {"sleep_ms": 30000}, {"text": "never sent"}],
    )
    command = [sys.executable, "-m", "acp_agent", "--home", str(tmp_path / "home")]
    client = V2Client([*command, "--script", str(script)], agent_env())
    try:
        yield client, workspace
    finally:
        client.stop()


def live_with_cursors(client: V2Client, session_id: str) -> list[dict[str, Any]]:
    return [u for u in client.updates(session_id) if cursor_of(u) is not None]


def resume(client: V2Client, session_id: str, workspace: Path, replay: Any) -> list[dict[str, Any]]:
    """Resume with `replayFrom` = `replay`; the updates the replay sent before the answer
    (the state snapshot that ends every resume checked and left out)."""
    before = len(client.updates(session_id))
    answer = client.call(
        "session/resume", {"sessionId": session_id, "cwd": str(workspace), "replayFrom": replay}
    )
    assert set(answer["result"]) == {"availableCommands", "configOptions"}, answer
    *replayed, snapshot = client.updates(session_id)[before:]
    assert snapshot == {"sessionUpdate": "state_update", "state": "idle", "background": []}
    return replayed


def held(updates: list[dict[str, Any]]) -> dict[str, Any]:
    """What a v2 client holds after `updates`, cursors aside: each message's text, each
    tool call's fields (upserts), everything else in order. A resume joins a message's
    pieces and a call's upserts that came live one by one, and leaves it the same."""
    messages: dict[tuple[str, str], str] = {}
    calls: dict[str, dict[str, Any]] = {}
    rest: list[dict[str, Any]] = []
    for update in updates:
        body = {k: v for k, v in update.items() if k != "_meta"}
        meta = {k: v for k, v in (update.get("_meta") or {}).items() if k != "acp-agent"}
        if meta:
            body["_meta"] = meta
        kind = body["sessionUpdate"]
        if kind.endswith("_chunk") and body.get("content", {}).get("type") == "text":
            key = (kind, body["messageId"])
            messages[key] = messages.get(key, "") + body["content"]["text"]
        elif kind == "tool_call_update" and not meta:
            calls[body["toolCallId"]] = {**calls.get(body["toolCallId"], {}), **body}
        else:
            rest.append(body)
    return {"messages": messages, "calls": calls, "rest": rest}


def test_v2_turns_cancels_and_resume(v2_agent: Any) -> None:
    client, workspace = v2_agent
    result = initialize_v2(client, version=2)
    assert result["protocolVersion"] == 2
    assert result["authMethods"], "methods advertised, so auth/login and auth/logout are served"
    assert client.call("auth/logout", {}) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    opened = client.call("session/new", {"cwd": str(workspace)})["result"]
    session_id = opened["sessionId"]
    listed = {c["name"]: c for c in opened["availableCommands"]}
    assert listed["title"] == {
        "type": "command",
        "name": "title",
        "description": "Show or set this session's title",
        "input": {"type": "text", "hint": "new title"},
    }

    # The config options: the complete set in each answer, -32602 for a value not offered.
    modes = next(o for o in opened["configOptions"] if o["configId"] == "mode")
    assert modes["currentValue"] == "ask"
    for mode in ("plan", "ask"):
        changed = client.call(
            "session/set_config_option",
            {"sessionId": session_id, "configId": "mode", "type": "id", "value": mode},
        )["result"]["configOptions"]
        assert next(o for o in changed if o["configId"] == "mode")["currentValue"] == mode
    refused = client.call(
        "session/set_config_option",
        {"sessionId": session_id, "configId": "mode", "type": "id", "value": "reckless"},
    )
    assert refused["error"]["code"] == -32602
    assert refused["error"]["message"].startswith("Invalid params: value: mode: no choice")
    unknown = client.call(
        "session/set_config_option",
        {"sessionId": session_id, "configId": "nosuch", "type": "id", "value": "x"},
    )
    assert unknown["error"]["message"].startswith("Invalid params: configId: no option 'nosuch'")

    # A built-in command runs in a turn's place: its own short foreground work, and the
    # change it makes (a title) comes from the timeline.
    command = client.call(
        "session/prompt", {"sessionId": session_id, "prompt": [text("/title Ported")]}
    )
    command_id = command["result"]["messageId"]
    assert client.wait_idle(session_id)["stopReason"] == "end_turn"
    ran = client.updates(session_id)
    assert [u["sessionUpdate"] for u in ran if "cursor" not in str(u.get("_meta"))] == [
        "state_update",
        "user_message_chunk",
        "agent_message_chunk",
        "state_update",
    ]
    assert ran[1]["messageId"] == command_id
    titled = client.wait_update(session_id, lambda u: u["sessionUpdate"] == "session_info_update")
    assert titled["title"] == "Ported"
    # A command changing a setting: the complete option set follows.
    client.call("session/prompt", {"sessionId": session_id, "prompt": [text("/mode plan")]})
    assert client.wait_idle(session_id)["stopReason"] == "end_turn"
    changed = [
        u for u in client.updates(session_id) if u["sessionUpdate"] == "config_option_update"
    ]
    assert [
        next(o for o in u["configOptions"] if o["configId"] == "mode")["currentValue"]
        for u in changed
    ] == ["plan"]
    client.call(
        "session/set_config_option",
        {"sessionId": session_id, "configId": "mode", "type": "id", "value": "ask"},
    )
    before_turns = len(client.updates(session_id))

    # A turn with a tool call: answered on insertion, then running -> requires_action ->
    # running -> idle (end_turn), the call upserted by id.
    client.answers = ["allow_once"]
    answer = client.call("session/prompt", {"sessionId": session_id, "prompt": [text("write")]})
    message_id = answer["result"]["messageId"]
    assert client.wait_idle(session_id)["stopReason"] == "end_turn"
    updates = client.updates(session_id)[before_turns:]
    states = [u["state"] for u in updates if u["sessionUpdate"] == "state_update"]
    assert states == ["running", "requires_action", "running", "idle"]
    echoed = [u for u in updates if u["sessionUpdate"] == "user_message_chunk"]
    assert [u["messageId"] for u in echoed] == [message_id]
    call = [u for u in updates if u.get("toolCallId") == "w1" and "status" in u]
    assert [u["status"] for u in call] == ["pending", "in_progress", "completed"]
    shown = [u for u in updates if u.get("toolCallId") == "w1" and "status" not in u]
    assert shown[0]["content"] == [{"type": "terminal", "terminalId": "local-w1"}]
    assert call[0]["capabilities"] == {"cancel": {}}
    assert call[-1]["capabilities"] is None
    assert (workspace / "one.txt").read_text() == "one\n"
    question = client.requests[0]["params"]
    assert question["subject"]["toolCall"]["toolCallId"] == "w1"

    # One tool call cancelled alone: its status is cancelled, the turn goes on and ends.
    client.answers = ["allow_once"]
    client.call("session/prompt", {"sessionId": session_id, "prompt": [text("wait")]})
    client.wait_update(
        session_id, lambda u: u.get("toolCallId") == "s1" and u.get("status") == "in_progress"
    )
    cancel = client.call("tool_call/cancel", {"sessionId": session_id, "toolCallId": "s1"})
    assert cancel["result"] == {}
    assert client.wait_idle(session_id)["stopReason"] == "end_turn"
    assert [u.get("status") for u in client.updates(session_id) if u.get("toolCallId") == "s1"][
        -1
    ] == "cancelled"
    assert any(
        u["sessionUpdate"] == "agent_message_chunk" and u["content"].get("text") == "Cut short."
        for u in client.updates(session_id)
    )
    again = client.call("tool_call/cancel", {"sessionId": session_id, "toolCallId": "s1"})
    assert again["error"]["code"] == -32602  # final already

    # A command's display terminal: announced (cancellable), its output, and cancelled
    # through terminal/cancel: its call is cut short, its exit shown, the turn goes on.
    client.answers = ["allow_once"]
    client.call("session/prompt", {"sessionId": session_id, "prompt": [text("again")]})
    announced = client.wait_update(
        session_id,
        lambda u: u["sessionUpdate"] == "terminal_update" and u["terminalId"] == "local-s2",
    )
    assert announced["capabilities"] == {"cancel": {}}
    assert announced["cwd"] == str(workspace)
    client.wait_update(
        session_id,
        lambda u: (
            u["sessionUpdate"] == "terminal_output_chunk"
            and base64.b64decode(u["data"]) == b"started\n"
        ),
    )
    stop = client.call("terminal/cancel", {"sessionId": session_id, "terminalId": "local-s2"})
    assert stop["result"] == {}
    assert client.wait_idle(session_id)["stopReason"] == "end_turn"
    ended = [
        u
        for u in client.updates(session_id)
        if u["sessionUpdate"] == "terminal_update" and "exitStatus" in u
    ]
    assert [u["terminalId"] for u in ended][-1] == "local-s2"
    assert ended[-1]["capabilities"] is None
    s2 = [u for u in client.updates(session_id) if u.get("toolCallId") == "s2"]
    assert s2[-1]["status"] == "cancelled"

    # A background job: a terminal of its own, listed as background work in every state
    # snapshot while it runs; terminal/cancel stops it: its exit, then a snapshot without it.
    client.answers = ["allow_once"]
    client.call("session/prompt", {"sessionId": session_id, "prompt": [text("job")]})
    announced = client.wait_update(
        session_id,
        lambda u: u["sessionUpdate"] == "terminal_update" and u["terminalId"].startswith("job-"),
    )
    job = announced["terminalId"]
    assert announced["command"] == "sleep 30"
    assert announced["capabilities"] == {"cancel": {}}
    idle = client.wait_idle(session_id)
    assert idle["background"] == [{"type": "terminal", "terminalId": job}]
    before = len(client.updates(session_id))
    stop = client.call("terminal/cancel", {"sessionId": session_id, "terminalId": job})
    assert stop["result"] == {}

    def states_since() -> list[dict[str, Any]]:
        since = client.updates(session_id)[before:]
        return [u for u in since if u["sessionUpdate"] == "state_update"]

    client.read_until(lambda: any(u["background"] == [] for u in states_since()))
    stopped = [u for u in client.updates(session_id)[before:] if u.get("terminalId") == job]
    assert stopped[-1]["exitStatus"] == {"signal": "SIGTERM"}
    assert states_since()[-1] == {
        "sessionUpdate": "state_update",
        "state": "idle",
        "stopReason": "end_turn",
        "background": [],
        "_meta": states_since()[-1]["_meta"],
    }
    assert all(
        u["background"] is not None
        for u in client.updates(session_id)
        if u["sessionUpdate"] == "state_update"
    )

    # A turn cancelled: idle with `cancelled`, nothing after it. A message sent while it
    # runs joins it (steering): answered at once, recorded (and echoed) before its end.
    client.call("session/prompt", {"sessionId": session_id, "prompt": [text("slow")]})
    client.wait_update(
        session_id,
        lambda u: (
            u["sessionUpdate"] == "agent_message_chunk"
            and u["content"].get("text") == "Working on it"
        ),
    )
    running_before = len([u for u in client.updates(session_id) if u.get("state") == "running"])
    steered = client.call("session/prompt", {"sessionId": session_id, "prompt": [text("later")]})
    steered_id = steered["result"]["messageId"]
    client.notify("session/cancel", {"sessionId": session_id})
    assert client.wait_idle(session_id)["stopReason"] == "cancelled"
    echoed = [
        u
        for u in client.updates(session_id)
        if u["sessionUpdate"] == "user_message_chunk" and u["content"].get("text") == "later"
    ]
    assert [u["messageId"] for u in echoed] == [steered_id]
    running_after = len([u for u in client.updates(session_id) if u.get("state") == "running"])
    assert running_after == running_before  # it joined the turn: no turn of its own

    # Resume: from the start, after a cursor mid-way, after the last one. A replay joins
    # what came live piece by piece (a message's text, a call's upserts): fewer updates,
    # the same client state, and the cursor it ends at is the live stream's last.
    live = live_with_cursors(client, session_id)
    assert len({cursor_of(u) for u in live}) == len(live)
    replayed = resume(client, session_id, workspace, {"type": "start"})
    assert held(replayed) == held(live)
    assert len(replayed) < len(live)
    assert cursor_of(replayed[-1]) == cursor_of(live[-1])
    for middle in (len(live) // 2, len(replayed) // 2):
        # After a live update's cursor, and after a replayed one's (each, what is left).
        had = live[: middle + 1] if middle == len(live) // 2 else replayed[: middle + 1]
        after = {"type": "_acp-agent/after", "cursor": cursor_of(had[-1])}
        assert held(had + resume(client, session_id, workspace, after)) == held(live)
    end = {"type": "_acp-agent/after", "cursor": cursor_of(live[-1])}
    assert resume(client, session_id, workspace, end) == []
    assert resume(client, session_id, workspace, None) == []
    # A whole event's cursor ("<seq>") skips all its updates.
    seq = cursor_of(live[1]).split(":")[0]
    whole = {"type": "_acp-agent/after", "cursor": seq}
    assert held(resume(client, session_id, workspace, whole)) == held(
        [u for u in live if int(cursor_of(u).split(":")[0]) > int(seq)]
    )
    # A cursor type or value not ours: -32602, never a resume without replay.
    for bad in (
        {"type": "_other/after", "cursor": "1"},
        {"type": "_acp-agent/after", "cursor": "x"},
    ):
        refused = client.call(
            "session/resume", {"sessionId": session_id, "cwd": str(workspace), "replayFrom": bad}
        )
        assert refused["error"]["code"] == -32602, refused

    assert client.problems() == []
    assert is_idle(client.updates(session_id)[-1]) or client.updates(session_id)[-1] == live[-1]


@pytest.mark.parametrize("ending", ["quit", "kill"])
def test_v2_agent_ending_mid_turn_records_it_interrupted(tmp_path: Path, ending: str) -> None:
    """The editor quits during a v2 turn (which outlives its prompt request, as the
    session's own work), or the agent is killed (SIGKILL): a quit agent exits cleanly,
    and either way the next one replays the turn ended, `idle` / `cancelled`."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = write_script(
        tmp_path / "script.json", [{"text": "Working on it"}, {"sleep_ms": 30000}, {"text": "x"}]
    )
    command = [sys.executable, "-m", "acp_agent", "--home", str(tmp_path / "home")]
    first = V2Client([*command, "--script", str(script)], agent_env())
    try:
        initialize_v2(first)
        session_id = first.call("session/new", {"cwd": str(workspace)})["result"]["sessionId"]
        first.call("session/prompt", {"sessionId": session_id, "prompt": [text("slow")]})
        first.wait_update(session_id, lambda u: u["sessionUpdate"] == "agent_message_chunk")
        if ending == "quit":
            first.agent.close_stdin()
            status, _ = first.agent.wait_for_exit()
            assert status == 0
        else:
            first.agent.process.send_signal(signal.SIGKILL)
            status, _ = first.agent.wait_for_exit()
            assert status == -signal.SIGKILL
    finally:
        first.stop()
    second = V2Client([*command, "--script", str(script)], agent_env())
    try:
        initialize_v2(second)
        replayed = resume(second, session_id, workspace, {"type": "start"})
        assert replayed[-1]["sessionUpdate"] == "state_update"
        assert replayed[-1]["stopReason"] == "cancelled"
        assert second.problems() == []
    finally:
        second.stop()


def test_v2_system_prompt_is_the_sessions_instructions(tmp_path: Path) -> None:
    """`systemPrompt` (unstable in the draft, advertised with `--unstable`): `append` on
    `session/new` adds the client's text to the agent's instructions, `override` on
    `session/resume` replaces them; a mode the agent does not take is -32602. The fake
    provider's requests say what the model was sent."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    command = [sys.executable, "-m", "acp_agent", "--home", str(tmp_path / "home"), "--unstable"]
    with FakeProviderServer() as server:
        server.add(openai_text("Bonjour."), openai_text("Bob."))
        client = V2Client(command, openai_env(server.base_url), unstable=True)
        try:
            advertised = initialize_v2(client)["capabilities"]["session"]["systemPrompt"]
            assert advertised == {"mode": {"override": {}}}
            refused = client.call(
                "session/new",
                {"cwd": str(workspace), "systemPrompt": system_prompt("_whisper", "Hush.")},
            )
            assert refused["error"]["code"] == -32602
            session_id = client.call(
                "session/new",
                {"cwd": str(workspace), "systemPrompt": system_prompt("append", "In French.")},
            )["result"]["sessionId"]
            client.call("session/prompt", {"sessionId": session_id, "prompt": [text("Hi.")]})
            client.wait_idle(session_id)
            resumed = client.call(
                "session/resume",
                {
                    "sessionId": session_id,
                    "cwd": str(workspace),
                    "systemPrompt": system_prompt("override", "You are Bob."),
                },
            )
            assert "result" in resumed, resumed
            client.call("session/prompt", {"sessionId": session_id, "prompt": [text("Who?")]})
            client.wait_idle(session_id)
            assert client.problems() == []
        finally:
            client.stop()
        first, second = (system_of(request.json()) for request in server.requests)
    assert "In French." in first
    assert second.startswith("You are Bob.")
    assert "In French." not in second


def system_prompt(mode: str, words: str) -> dict[str, Any]:
    return {"mode": mode, "content": [text(words)]}


def system_of(body: dict[str, Any]) -> str:
    [first] = [m for m in body["messages"][:1] if m["role"] == "system"]
    return str(first["content"])
