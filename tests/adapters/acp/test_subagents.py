"""Branches as ACP subagent sessions end to end: the stdio agent, a scripted model.

A client that advertises `clientCapabilities.subagents` (an object; no
`--unstable` needed: it is negotiated) gets each branch announced on the parent
session, then talking on its own session id; any other client sees it as a tool
call of the main line. Every line on the wire is checked on exit against the
schema that governs it (the unstable one for the negotiated updates).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from acp_agent.adapters.acp._subagents import state_of
from acp_agent.adapters.acp._updates import takes_subagents
from acp_agent.capabilities.branches import ChildState
from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.errors import InvalidParams
from tests.support import EditorClient, running_agent
from tests.support.editor_client import allow_all
from tests.test_readme import readme_block
from tests.tools.editor import EditorBridge

pytestmark = pytest.mark.e2e


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments}}


def script_in(tmp_path: Path, main: list[list[dict[str, Any]]], **branches: Any) -> Path:
    path = tmp_path / "script.json"
    children = [{"title": title, "replies": replies} for title, replies in branches.items()]
    path.write_text(json.dumps({"replies": main, "branches": children}))
    return path


def subagents_client() -> EditorClient:
    return EditorClient(decide=allow_all)


def subagents_agent(home: Path, script: Path, client: EditorClient) -> Any:
    """The agent (no `--unstable`), talking to `client` as a client advertising subagents."""
    capabilities = subagent_capabilities(client)
    return running_agent(home, script=script, client=client, capabilities=capabilities)


def one_branch(tmp_path: Path, title: str, task: str, *replies: list[dict[str, Any]]) -> Path:
    """Main starts one branch, waits for it, and says it is done."""
    return script_in(
        tmp_path,
        [
            [tool("branch", task=task, title=title)],
            [tool("branch_wait", all=True, timeout_s=20)],
            [{"text": "Done."}],
        ],
        **{title: list(replies)},
    )


def subagent_capabilities(client: EditorClient) -> types.ClientCapabilities:
    capabilities = client.capabilities() or types.ClientCapabilities()
    return types.ClientCapabilities(
        fs=capabilities.fs, terminal=capabilities.terminal, subagents=types.SubagentCapabilities()
    )


def announced(client: EditorClient, parent: str) -> list[types.SubagentUpdate]:
    return [u for u in client.session_updates_for(parent) if isinstance(u, types.SubagentUpdate)]


def states(updates: list[types.SubagentUpdate], child: str) -> list[str]:
    found = []
    for update in updates:
        if update.session_id == child and update.state is not None:
            state = update.state
            stop = getattr(state, "stop_reason", None)
            found.append(f"{state.state}:{stop}" if stop else state.state)
    return found


def messages_by_id(client: EditorClient) -> dict[str, tuple[str, types.SessionMessage]]:
    """Every `session_message` view by its id, with the session it was shown on."""
    return {
        str(n.update.message_id): (str(n.session_id), n.update)
        for n in client.updates
        if isinstance(n.update, types.SessionMessage)
    }


def text_of(message: types.SessionMessage) -> str:
    return "".join(b.text for b in message.content or [] if isinstance(b, types.TextContent))


def index_of(client: EditorClient, predicate: Any) -> int:
    return next(i for i, n in enumerate(client.updates) if predicate(n))


async def test_a_branch_is_announced_then_talks_on_its_own_session(tmp_path: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("one\ntwo\n")
    script = one_branch(
        tmp_path,
        "notes",
        "Count the lines of notes.txt",
        [tool("shell", command="wc -l < notes.txt")],
        [{"text": "notes.txt has 2 lines."}],
    )
    client = subagents_client()
    async with subagents_agent(tmp_path / "home", script, client):
        session_id = await client.new_session(workspace)
        response = await client.prompt(session_id, "How long are my notes?")
        announces = announced(client, session_id)
        [first] = [u for u in announces if u.title is not None]
        child = str(first.session_id)
        child_updates = client.session_updates_for(child)
        main_updates = client.updates_for(session_id)
        # Anything else on a child's id is refused; cancel is not.
        refused = await client.request_raw(
            methods.SESSION_PROMPT,
            {"sessionId": child, "prompt": [{"type": "text", "text": "hi"}]},
        )
        closed = await client.request_raw(methods.SESSION_CLOSE, {"sessionId": child})

    assert response.stop_reason == types.StopReason.END_TURN
    assert first.title == "notes"
    assert first.description == "Count the lines of notes.txt"
    assert first.capabilities is not None
    assert first.capabilities.cancel is not None
    # The announce precedes every update on the child's id.
    announce_at = index_of(client, lambda n: isinstance(n.update, types.SubagentUpdate))
    child_first = index_of(client, lambda n: str(n.session_id) == child)
    assert announce_at < child_first
    # The child's own traffic: its tool call and its reply, on its id.
    calls = [u for u in child_updates if isinstance(u, types.ToolCall)]
    assert [c.title for c in calls] == ["Run `wc -l < notes.txt`"]
    text = "".join(
        u.content.text
        for u in child_updates
        if isinstance(u, types.AgentMessageChunk) and isinstance(u.content, types.TextContent)
    )
    assert text == "notes.txt has 2 lines."
    # Its permission question carries its id, asked at once.
    [question] = [r for r in client.permission_requests if str(r.session_id) == child]
    assert question.tool_call.title == "Run `wc -l < notes.txt`"
    # The main line no longer shows the branch as a tool call of its own.
    assert not [u for u in main_updates if isinstance(u, types.ToolCall) and "Branch:" in u.title]
    assert states(announces, child) == ["running", "requires_action", "running", "idle:end_turn"]
    assert refused["error"]["code"] == -32602
    assert "is a subagent session of" in refused["error"]["message"]
    assert closed["error"]["code"] == -32602
    # The task and the report are messages: an outgoing and an incoming view, linked.
    views = messages_by_id(client)
    task_out, task_in = views[f"{child}.task.out"], views[f"{child}.task.in"]
    assert (task_out[0], task_in[0]) == (session_id, child)  # the session each is shown on
    assert task_out[1].recipient_message_id == task_in[1].message_id
    assert task_in[1].sender_message_id == task_out[1].message_id
    assert text_of(task_in[1]) == "Count the lines of notes.txt"
    report_out, report_in = views[f"{child}.report1.out"], views[f"{child}.report1.in"]
    assert (report_out[0], report_in[0]) == (child, session_id)
    assert (report_in[1].sender_session_id, report_in[1].recipient_session_id) == (
        child,
        session_id,
    )
    assert text_of(report_in[1]) == "notes.txt has 2 lines."
    # The task reaches the child before its first tool call.
    assert index_of(client, lambda n: isinstance(n.update, types.SessionMessage)) < index_of(
        client, lambda n: isinstance(n.update, types.ToolCall) and str(n.session_id) == child
    )


async def test_a_child_command_runs_in_a_terminal_of_its_own_session_embedded_in_its_call(
    tmp_path: Path,
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = one_branch(
        tmp_path, "runner", "Run it", [tool("shell", command="echo hi")], [{"text": "ran"}]
    )
    async with EditorBridge(has_terminals=True) as editor:
        client = EditorClient(editor=editor, decide=allow_all)
        async with subagents_agent(tmp_path / "home", script, client):
            session_id = await client.new_session(workspace)
            await client.prompt(session_id)
            [child] = {str(u.session_id) for u in announced(client, session_id)}
            child_updates = client.session_updates_for(child)
            created = [m for m in client.messages if m.get("method") == "terminal/create"]

    [request] = created
    assert request["params"]["sessionId"] == child  # the terminal is the child's
    [terminal_id] = [t.terminal_id for t in editor.terminals]
    embedded = [
        part.terminal_id
        for update in child_updates
        if isinstance(update, types.ToolCallProgress)
        for part in update.content or []
        if isinstance(part, types.Terminal)
    ]
    assert terminal_id in embedded


async def test_cancelling_a_child_stops_only_that_child(tmp_path: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = script_in(
        tmp_path,
        [
            [tool("branch", task="Wait long", title="slow")],
            [tool("branch", task="Wait a little", title="quick")],
            [tool("branch_wait", all=True, timeout_s=30)],
            [{"text": "Both stopped."}],
        ],
        slow=[[{"text": "Waiting"}, {"sleep_ms": 30000}], [{"text": "never"}]],
        quick=[[{"sleep_ms": 1500}, {"text": "Quick is done."}]],
    )
    client = subagents_client()
    async with subagents_agent(tmp_path / "home", script, client):
        session_id = await client.new_session(workspace)
        async with anyio.create_task_group() as group:
            outcome: list[types.PromptResponse] = []

            async def prompt() -> None:
                outcome.append(await client.prompt(session_id, "Start both"))

            group.start_soon(prompt)
            await client.wait_until(
                lambda: len([u for u in announced(client, session_id) if u.title]) == 2,
                timeout_s=10,
            )
            slow = next(
                str(u.session_id) for u in announced(client, session_id) if u.title == "slow"
            )
            await client.wait_for_update(slow)  # it is streaming its first words
            client.send_raw(
                {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": slow}}
            )
        announces = announced(client, session_id)

    quick = next(str(u.session_id) for u in announces if u.title == "quick")
    # The main line's turn was not cancelled, and the sibling finished its work.
    assert outcome[0].stop_reason == types.StopReason.END_TURN
    assert states(announces, slow)[-1] == "idle:cancelled"
    assert states(announces, quick)[-1] == "idle:end_turn"


class ChildBlindClient(EditorClient):
    """A client that takes subagents yet refuses a question on any session it did not
    open itself (as clients that do not route child sessions do)."""

    def __init__(self) -> None:
        super().__init__(decide=allow_all)
        self.opened: set[str] = set()

    async def new_session(self, cwd: Path, mcp_servers: Any = ()) -> str:
        session_id = await super().new_session(cwd, mcp_servers)
        self.opened.add(session_id)
        return session_id

    async def _answer(
        self, params: types.RequestPermissionRequest
    ) -> types.RequestPermissionResponse:
        if str(params.session_id) not in self.opened:
            self.permission_requests.append(params)
            raise InvalidParams(f"Invalid params: no session {params.session_id}")
        return await super()._answer(params)


async def test_a_child_question_the_client_refuses_on_the_child_is_asked_on_the_parent(
    tmp_path: Path,
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = one_branch(
        tmp_path, "greeter", "Say hi", [tool("shell", command="echo hi")], [{"text": "Said hi."}]
    )
    client = ChildBlindClient()
    async with subagents_agent(tmp_path / "home", script, client):
        session_id = await client.new_session(workspace)
        response = await client.prompt(session_id, "Greet")
        [child] = {str(u.session_id) for u in announced(client, session_id)}
        child_updates = client.session_updates_for(child)

    assert response.stop_reason == types.StopReason.END_TURN
    on_child, on_parent = client.permission_requests
    assert str(on_child.session_id) == child
    assert str(on_parent.session_id) == session_id
    assert on_parent.tool_call.title == "Branch 'greeter' asks: Run `echo hi`"
    # Answered there, the child's command ran.
    [done] = [
        u
        for u in child_updates
        if isinstance(u, types.ToolCallProgress) and u.status == types.ToolCallStatus.COMPLETED
    ]
    assert "hi" in json.dumps(done.raw_output)


async def test_an_unanswered_child_question_is_withdrawn_when_the_child_is_cancelled(
    tmp_path: Path,
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = one_branch(
        tmp_path, "waiter", "Run it", [tool("shell", command="echo hi")], [{"text": "ran"}]
    )
    client = EditorClient()  # never answers on its own: the question stays open
    async with subagents_agent(tmp_path / "home", script, client):
        session_id = await client.new_session(workspace)
        async with anyio.create_task_group() as group:
            outcome: list[types.PromptResponse] = []

            async def prompt() -> None:
                outcome.append(await client.prompt(session_id, "Start it"))

            group.start_soon(prompt)
            await client.wait_until(lambda: bool(client.permission_requests), timeout_s=10)
            [question] = client.permission_requests
            child = str(question.session_id)
            client.send_raw(
                {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": child}}
            )
        asked = [m for m in client.messages if m.get("method") == "session/request_permission"]
        withdrawn = [m for m in client.messages if m.get("method") == "$/cancel_request"]

    assert child != session_id
    assert outcome[0].stop_reason == types.StopReason.END_TURN
    assert [m["params"]["requestId"] for m in withdrawn] == [asked[0]["id"]]
    assert states(announced(client, session_id), child)[-2:] == [
        "requires_action",
        "idle:cancelled",
    ]


@pytest.mark.parametrize("unstable", [False, True])
async def test_a_client_without_subagents_sees_tool_calls_and_nothing_else(
    tmp_path: Path, unstable: bool
):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = one_branch(tmp_path, "hello", "Say hello", [{"text": "Hello."}])
    client = EditorClient(decide=allow_all, unstable=unstable)
    async with running_agent(tmp_path / "home", script=script, client=client, unstable=unstable):
        session_id = await client.new_session(workspace)
        await client.prompt(session_id, "Branch off")

    session_ids = {str(n.session_id) for n in client.updates}
    assert session_ids == {session_id}
    kinds = {n.update.session_update for n in client.updates}
    assert not kinds & {"subagent_update", "session_message", "session_message_chunk"}
    shown = [
        u
        for u in client.updates_for(session_id)
        if isinstance(u, types.ToolCall) and u.title == "Branch: hello"
    ]
    assert len(shown) == 1


async def test_load_replays_the_children_as_the_loading_client_takes_them(tmp_path: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    script = one_branch(tmp_path, "hello", "Say hello", [{"text": "Hello from the branch."}])
    live = subagents_client()
    async with subagents_agent(home, script, live):
        session_id = await live.new_session(workspace)
        await live.prompt(session_id, "Branch off")
        [child] = {str(u.session_id) for u in announced(live, session_id)}

    again = subagents_client()
    async with subagents_agent(home, script, again):
        await again.load(session_id, workspace)
        at_answer = len(again.updates)
        await anyio.sleep(0.5)
        after_answer = again.updates[at_answer:]
        replayed = list(again.updates)

    assert after_answer == []  # the children are replayed before the load answers
    [announce] = [
        n.update
        for n in replayed
        if isinstance(n.update, types.SubagentUpdate) and n.update.title == "hello"
    ]
    assert announce.state is not None
    assert announce.state.state == "idle"
    first_child = next(i for i, n in enumerate(replayed) if str(n.session_id) == child)
    assert replayed.index(next(n for n in replayed if n.update is announce)) < first_child
    child_texts = [
        u.content.text
        for u in again.session_updates_for(child)
        if isinstance(u, types.AgentMessageChunk) and isinstance(u.content, types.TextContent)
    ]
    assert "".join(child_texts) == "Hello from the branch."
    views = messages_by_id(again)
    assert text_of(views[f"{child}.task.in"][1]) == "Say hello"
    assert views[f"{child}.report1.in"][0] == session_id
    assert not [
        u
        for u in again.updates_for(session_id)
        if isinstance(u, types.ToolCall) and u.title.startswith("Branch:")
    ]

    plain = EditorClient(decide=allow_all)
    async with running_agent(home, script=script, client=plain):
        await plain.load(session_id, workspace)

    assert {str(n.session_id) for n in plain.updates} == {session_id}
    assert not {n.update.session_update for n in plain.updates} & {
        "subagent_update",
        "session_message",
    }
    assert [
        u.title
        for u in plain.updates_for(session_id)
        if isinstance(u, types.ToolCall) and u.title.startswith("Branch:")
    ] == ["Branch: hello"]


async def test_between_main_turns_main_carries_only_state_patches(tmp_path: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = script_in(
        tmp_path,
        [
            [tool("branch", task="Think a while", title="thinker")],
            [{"text": "Started."}],
            [tool("branch_message", branch_id="thinker", text="Now the second part")],
            [tool("branch_wait", all=True, timeout_s=20)],
            [{"text": "Both parts done."}],
        ],
        thinker=[
            [{"sleep_ms": 1500}, {"text": "First part done."}],
            [{"text": "Second part done."}],
        ],
    )
    client = subagents_client()
    async with subagents_agent(tmp_path / "home", script, client):
        session_id = await client.new_session(workspace)
        await client.prompt(session_id, "Start it")
        at_end = len(client.updates)
        [child] = {str(u.session_id) for u in announced(client, session_id)}
        await client.wait_until(
            lambda: states(announced(client, session_id), child)[-1:] == ["idle:end_turn"],
            timeout_s=10,
        )
        between = [n for n in client.updates[at_end:] if str(n.session_id) == session_id]
        await client.prompt(session_id, "Go on")
        turn = [n.update for n in client.updates[at_end:] if str(n.session_id) == session_id]

    # Main's session: only the child's state patches until main's next turn ...
    assert between
    assert all(isinstance(n.update, types.SubagentUpdate) for n in between)
    # ... which opens with the report held for it, then carries main's message out.
    views = messages_by_id(client)
    first_report = views[f"{child}.report1.in"][1]
    assert first_report in turn
    assert text_of(first_report) == "First part done."
    message_id = next(k for k in views if k.endswith(".out") and ".msg_" in k)
    outgoing = views[message_id]
    incoming = views[str(outgoing[1].recipient_message_id)]
    assert (outgoing[0], incoming[0]) == (session_id, child)
    assert text_of(incoming[1]) == "Now the second part"
    assert incoming[1].sender_message_id == outgoing[1].message_id
    assert text_of(views[f"{child}.report2.in"][1]) == "Second part done."


async def test_the_readme_subagents_script_plays_the_whole_sequence(tmp_path: Path):
    _, body = readme_block("script-subagents-example")
    script = tmp_path / "script.json"
    script.write_text(body)
    workspace = tmp_path / "workspace"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "a.py").write_text("# TODO one\n# TODO two\n")
    client = subagents_client()
    async with subagents_agent(tmp_path / "home", script, client):
        session_id = await client.new_session(workspace)
        response = await client.prompt(session_id, "How many TODOs?")
    [child] = {str(u.session_id) for u in announced(client, session_id)}
    sequence = [sequence_line(n, session_id, child) for n in client.updates]
    sequence = [line for line in sequence if line]

    assert response.stop_reason == types.StopReason.END_TURN
    expected = [
        "main subagent_update announce todos",
        "main session_message task.out",
        "child session_message task.in",
        "main subagent_update running",
        "child agent_message_chunk Counting.",
        "child tool_call Run `grep -r TODO src | wc -l`",
        "main subagent_update requires_action",
        "main subagent_update running",
        "child agent_message_chunk There are 2 TODOs.",
        "main session_message report1.in",
        "child session_message report1.out",
        "main subagent_update idle:end_turn",
        "main agent_message_chunk The branch counted them.",
    ]
    assert [line for line in sequence if line in expected] == expected
    [question] = client.permission_requests
    assert str(question.session_id) == child


def sequence_line(notification: Any, main: str, child: str) -> str | None:
    """One line of the update sequence: whose session, which update, what it says."""
    who = {main: "main", child: "child"}.get(str(notification.session_id), "?")
    update = notification.update
    kind = update.session_update
    if isinstance(update, types.SubagentUpdate):
        if update.title is not None:
            return f"{who} {kind} announce {update.title}"
        state = update.state
        stop = getattr(state, "stop_reason", None)
        return f"{who} {kind} {state.state}{':' + stop if stop else ''}" if state else None
    if isinstance(update, types.SessionMessage):
        return f"{who} {kind} {str(update.message_id).removeprefix(child + '.')}"
    if isinstance(update, types.AgentMessageChunk) and isinstance(
        update.content, types.TextContent
    ):
        return f"{who} {kind} {update.content.text}"
    if isinstance(update, types.ToolCall):
        return f"{who} {kind} {update.title}"
    return None


async def test_resume_announces_the_open_children_after_its_answer(tmp_path: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    script = one_branch(tmp_path, "hello", "Say hello", [{"text": "Hello."}])
    first = subagents_client()
    async with subagents_agent(home, script, first):
        session_id = await first.new_session(workspace)
        await first.prompt(session_id, "Branch off")
        [child] = {str(u.session_id) for u in announced(first, session_id)}

    again = subagents_client()
    async with subagents_agent(home, script, again):
        await again.resume(session_id, workspace)
        await again.wait_until(lambda: bool(announced(again, session_id)), timeout_s=5)
        lines = [json.loads(line) for line in again.received]

    answered = next(
        i
        for i, m in enumerate(lines)
        if "result" in m and isinstance(m["result"], dict) and "modes" in m["result"]
    )
    announce_at = next(
        i
        for i, m in enumerate(lines)
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "subagent_update"
    )
    assert answered < announce_at  # the client knows the parent first
    [announce] = announced(again, session_id)
    assert str(announce.session_id) == child
    assert announce.title == "hello"
    assert states([announce], child) == ["idle:end_turn"]
    assert again.session_updates_for(child) == []  # no history on a resume


@pytest.mark.parametrize(
    ("state", "stop_reason", "expected"),
    [
        ("running", None, ("running", None)),
        ("waiting", None, ("requires_action", None)),
        ("finished", "end_turn", ("idle", "end_turn")),
        ("finished", "max_turn_requests", ("idle", "max_turn_requests")),
        ("finished", "storage_full", ("idle", "_storage_full")),
        ("failed", "error", ("idle", "error")),
        ("interrupted", "cancelled", ("idle", "cancelled")),
        ("interrupted", "interrupted", ("idle", "error")),
        ("closed", None, ("idle", None)),
    ],
)
def test_a_line_state_maps_to_one_acp_state(
    state: str, stop_reason: str | None, expected: tuple[str, str | None]
):
    line = SimpleNamespace(state=ChildState(state), stop_reason=stop_reason)
    snapshot = state_of(line)  # type: ignore[arg-type]
    assert (snapshot.state, getattr(snapshot, "stop_reason", None)) == expected


@pytest.mark.parametrize(
    ("advertised", "takes"),
    [({"subagents": {}}, True), ({"subagents": True}, False), ({}, False)],
)
def test_subagent_sessions_are_negotiated_by_an_object_whatever_the_flag(
    advertised: dict[str, Any], takes: bool
):
    for unstable in (False, True):
        decoded = AgentConnection(unstable=unstable).protocol.converter.structure(
            advertised, types.ClientCapabilities
        )
        assert takes_subagents(decoded) is takes
