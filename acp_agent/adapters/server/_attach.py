"""`_acp-agent/attach` and `_acp-agent/detach`: several clients on one session.

    -> {"sessionId": S, "role": "controller" | "observer",
        "replay": "start" | "none" | "cursor", "cursor": "<a cursor it got>",
        "children": {"<child id>": "<a cursor it got on it>"}, "files": false | true}
    <- {"clientId": ..., "role": ..., "cursor": "<seq>", "pendingPermissions": n,
        "files": bool, "modes": ..., "configOptions": ...}

Attach makes this connection's view of the session show every update (see
`_views`), after a replay: from the start, after a cursor the client got
earlier (`replay: "cursor"`), or none (`replay: "none"`: the history is
learnt, nothing is sent). A replay shows what the client lacks in as few
updates as it takes (`acp_agent.agent.replay_steps`: a message in one chunk,
a tool call once, in its last state), each with the cursor it leaves the
client at; a cursor inside a message resumes with the rest of it. The
replay is sent before the answer; the answer is the ready point: its
`cursor` is where the replay ended, and the live updates that follow it
continue from there, whatever was published meanwhile (the subscription
delivers every event after the replay's end once, in order; live ones wait
for the answer), with no gap and no duplicate. Then
the session's commands follow, and a controller is asked the questions that
wait for one. The session is opened for this connection if it is not (as
`session/resume` would, without the client's MCP servers).

`"files": true` (a controller whose `initialize` offered `fs.readTextFile` and
`fs.writeTextFile`) makes this client serve the session's files while it stays
attached (`_files`): refused (-32600) while another client serves them.

A client that advertised `clientCapabilities.subagents` is shown the
session's branches as child sessions instead of rows of the parent
(`_children`): each child is announced and, in a replay from the start,
replayed after the parent's replay, before the answer; then followed live.
Resuming after a cursor, `children` names the last cursor the client got on
each child's id: each is resumed after its own (one it names none for is
replayed from its start), before the answer.

Detach makes the view this connection's own turns only again (branches as
rows). Neither is
taken while one of this connection's prompts on the session runs: its
answer waits on the view being changed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from acp_agent.adapters.acp._client_input import stored_id
from acp_agent.adapters.acp._replay import replayed
from acp_agent.adapters.acp._wire_errors import wire_errors
from acp_agent.adapters.server._audience import Role, SessionAudience
from acp_agent.adapters.server._children import show_children
from acp_agent.adapters.server._cursors import Cursor
from acp_agent.adapters.server._files import FileHost
from acp_agent.adapters.server._views import AttachedTranslator
from acp_agent.agent import Seq, gc_paused
from acp_agent.toolkit import DEFAULT_REQUEST_TIMEOUT_S
from protocol import types
from protocol.errors import InvalidParams, InvalidRequest

if TYPE_CHECKING:
    from acp_agent.adapters.server._agent import ServerAcpAgent, ServerSession

__all__ = ("attach", "detach")

logger = logging.getLogger(__name__)

_REPLAYS = ("start", "none", "cursor")


async def attach(agent: ServerAcpAgent, params: Any) -> dict[str, Any]:
    """Attach this connection to a session (see the module docstring)."""
    if not isinstance(params, dict):
        raise InvalidParams("Invalid params: params must be an object")
    session_id = _session_id(params)
    role = _role(params.get("role", Role.CONTROLLER.value))
    replay = params.get("replay", "start")
    if replay not in _REPLAYS:
        raise InvalidParams(f"Invalid params: replay: one of {', '.join(_REPLAYS)}")
    cursor = Cursor.parse(params.get("cursor")) if replay == "cursor" else None
    child_cursors = _child_cursors(params) if replay == "cursor" else {}
    files = _files(agent, params, role)
    acp_session = await _opened(agent, session_id)
    _refuse_running(acp_session, "attach")
    audience = acp_session.audience
    _serve_files(audience, files, agent.client_id, session_id)
    handle, view = acp_session.handle, acp_session.view
    covered, events = await handle.history()
    after = _after(covered, cursor)
    children = agent.takes_subagents  # the branches as sessions, not rows
    translator = AttachedTranslator(
        agent._translator(replay=False, subagents=children),
        agent._translator(replay=True, subagents=children),
    )
    with gc_paused():
        for event in events:
            translator.learn(event)  # the client has it, is sent it now, or asked for none
    await _unsubscribe(acp_session)
    await acp_session.stop_children()
    view.attach(translator, skip=None, ready_at=int(covered))
    try:
        if replay != "none":
            # What the client lacks, as few updates as it takes (a message in one chunk,
            # a call in its last state), each with the cursor it leaves the client at.
            shows = agent._translator(replay=True, subagents=children)
            with gc_paused():
                shown = replayed(events, shows, shows, after=after)
            await view.send_replay_paced(shown)
        with wire_errors(session_id):
            subscription = await handle.subscribe(view, after=covered)
        view.attach_ready_at(int(subscription.ready_at))
        acp_session.side.subscription = subscription
        await subscription.wait_ready()
    except BaseException:
        view.ready()
        audience.files.release(agent.client_id)
        raise
    connection = agent._connection

    def ready() -> None:
        view.ready()
        audience.attach(agent.viewer, role)

    connection.after_response(ready)
    # The commands, as a load sends them; the title too when the client asked for no
    # history (a replay shows it where it was set).
    await acp_session.send_commands()
    if replay == "none" and handle.title:
        acp_session.stream.send(types.SessionInfoUpdate(title=handle.title))
    if children:  # after the parent's replay, each child's
        acp_session.subagents = await show_children(
            acp_session,
            connection=connection,
            translator=lambda: agent._translator(replay=False),
            replay=replay,
            replay_translator=lambda: agent._translator(replay=True),
            writable=agent._writable,
            cursors=child_cursors,
        )
        audience.show_children(agent.client_id, True)
    logger.info(
        "%s attached to session %s as %s (replay %s, ready at %s%s)",
        agent.client_id,
        session_id,
        role.value,
        replay,
        subscription.ready_at,
        ", branches as subagent sessions" if children else "",
    )
    settings = connection.protocol.converter.unstructure(acp_session.settings())
    return {
        "clientId": agent.client_id,
        "role": role.value,
        "cursor": str(Cursor(int(subscription.ready_at))),
        "pendingPermissions": len(audience.questions.pending),
        "files": files is not None,
        **{_camel(key): value for key, value in settings.items()},
    }


async def detach(agent: ServerAcpAgent, params: Any) -> dict[str, Any]:
    """This connection's view of the session shows its own turns only again."""
    from acp_agent.adapters.server._agent import tell_left

    if not isinstance(params, dict):
        raise InvalidParams("Invalid params: params must be an object")
    session_id = _session_id(params)
    acp_session = agent.server_session(session_id)
    if acp_session is None or not acp_session.view.attached:
        return {}
    _refuse_running(acp_session, "detach")
    role = acp_session.audience.detach(agent.client_id)
    if role is not None:
        tell_left(acp_session.audience, agent.client_id, role, "detached")
    await _unsubscribe(acp_session)
    await acp_session.stop_children()
    covered, events = await acp_session.handle.history()
    translator = agent._translator(replay=False)
    for event in events:
        translator.learn(event)
    acp_session.view.detach(translator)
    acp_session.side.subscription = await acp_session.handle.subscribe(
        acp_session.view, after=covered
    )
    logger.info("%s detached from session %s", agent.client_id, session_id)
    return {}


async def _opened(agent: ServerAcpAgent, session_id: str) -> ServerSession:
    """This connection's side of the session, opening it if need be."""
    from acp_agent.adapters.server._agent import ServerSession

    acp_session = await agent._open(session_id)
    if not isinstance(acp_session, ServerSession):  # pragma: no cover - the server's sides
        raise InvalidRequest(f"Invalid request: session {session_id} is not the server's")
    return acp_session


def _session_id(params: dict[str, Any]) -> str:
    value = params.get("sessionId")
    if not isinstance(value, str):
        raise InvalidParams("Invalid params: sessionId: a session id is required")
    return stored_id(value)


async def _unsubscribe(acp_session: ServerSession) -> None:
    """End the connection's delivery of the session (a new one replaces it)."""
    subscription = acp_session.subscription
    acp_session.side.subscription = None
    if subscription is not None:
        await subscription.disconnect()


def _files(agent: ServerAcpAgent, params: dict[str, Any], role: Role) -> FileHost | None:
    """This client as the session's file host, when it asks to be one and may."""
    wanted = params.get("files", False)
    if not isinstance(wanted, bool):
        raise InvalidParams("Invalid params: files: true or false")
    if not wanted:
        return None
    if role is not Role.CONTROLLER:
        raise InvalidParams("Invalid params: files: only a controller serves a session's files")
    capabilities = agent._client_capabilities or types.ClientCapabilities()
    fs = capabilities.fs or types.FileSystemCapabilities()
    if not (fs.read_text_file and fs.write_text_file):
        raise InvalidParams(
            "Invalid params: files: the client did not offer fs.readTextFile and "
            "fs.writeTextFile in initialize"
        )
    timeout_s = agent._editor_timeout_s
    return FileHost(
        agent.client_id,
        agent._connection,
        read_timeout_s=DEFAULT_REQUEST_TIMEOUT_S if timeout_s is None else timeout_s,
    )


def _serve_files(
    audience: SessionAudience, files: FileHost | None, client_id: str, session_id: str
) -> None:
    """Make this client the session's file host (held from now: no other client takes it
    during the replay), or stop it being one (it attaches without files)."""
    if files is None:
        audience.files.release(client_id)
        return
    host = audience.files.host
    if host is not None and host.client_id != client_id:
        raise InvalidRequest(
            f"Invalid request: {host.client_id} serves the files of session {session_id}; "
            "attach without files, or once it has left",
            {"sessionId": session_id, "filesServedBy": host.client_id},
        )
    audience.files.serve(files)


def _role(value: object) -> Role:
    try:
        return Role(value)
    except ValueError:
        roles = ", ".join(r.value for r in Role)
        raise InvalidParams(f"Invalid params: role: one of {roles}") from None


def _refuse_running(acp_session: ServerSession, what: str) -> None:
    if acp_session.own:
        raise InvalidRequest(
            f"Invalid request: cannot {what} while this client's prompt on the session runs",
            {"sessionId": acp_session.session_id},
        )


def _after(covered: Seq, cursor: Cursor | None) -> tuple[int, int | None] | None:
    """Where a replay starts: after `cursor` (None: from the start)."""
    if cursor is None or cursor.seq == 0:
        return None
    if cursor.seq > covered:
        raise InvalidParams(
            f"Invalid params: cursor: {cursor} is not within the session (0 to {covered})"
        )
    return cursor.seq, cursor.part


def _child_cursors(params: dict[str, Any]) -> dict[str, Cursor]:
    """The cursor the client got last on each child's id (`children`), by child id."""
    given = params.get("children", {})
    if not isinstance(given, dict):
        raise InvalidParams("Invalid params: children: an object of cursors by child id")
    return {
        str(child_id): Cursor.parse(text, name=f"children.{child_id}")
        for child_id, text in given.items()
    }


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word.title() for word in rest)
